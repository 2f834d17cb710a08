#!/bin/bash
# Records the diverse capture of the issue's step 5 ("performance on realistic captures"):
# system-wide, 3999 Hz, frame-pointer/kernel call graphs, while two things keep the CPUs busy:
#   - CPython (Debian's /usr/bin/python3) on two threads running varied pure-Python code
#     (recursion, dict/str/list work, json, re, sorting, generators, classes, int/float math,
#     struct, bisect, collections, ...): many distinct interpreter C paths;
#   - `gzip -1` over 200 MB of random data, in a loop (libc/zlib-ish user code, read/write
#     syscalls, page cache: kernel stacks).
#   perf record -a -g -F 3999 -o OUT -- sleep SECONDS
# The issue's run: 236,506 samples, 81,211 distinct addresses, 8,004 distinct folded stacks,
# 23 MB perf.data, 56 MB perf script text. This script's first run (30 s, 2 vCPUs, the host
# shared with other work): 239,036 samples, 64,881 distinct addresses, 10,735 distinct folded
# stacks, 26.9 MB perf.data, 80.0 MB perf script text. Debian's python3 and gzip have no frame
# pointers, so their user stacks are short (6.0 and 1.7 frames a sample on average).
# Then: benchmarks/bench_perf_data_import.py --perf-data OUT, and
#       benchmarks/bench_script_import.py --script OUT.script.txt
#
#   usage: record_diverse.sh [OUT=/var/tmp/diverse.perf.data] [SECONDS=30]     (as root)
#
# Writes OUT and, beside it, OUT.script.txt (`perf script -i OUT`), then prints: samples,
# distinct addresses (ip values over all frames of all samples), distinct folded stacks
# (comm + frames root-first, folded like stackcollapse-perf.pl: +0x offsets dropped, an
# [unknown] symbol named by its dso's basename, spaces in comm as _), file sizes, and the
# wall time of `perf report --stdio --no-children --sort comm,dso,sym` and `perf script`.
# Takes /tmp/perfweb-record.lock for the whole recording; sets kernel.perf_event_paranoid=-1
# for it and leaves kernel.perf_event_paranoid=2, kernel.kptr_restrict=0. perf runs with a
# scratch HOME (its build-id cache is not /root/.debug), removed at the end. Everything it
# starts is stopped on exit, error or signal.
set -eu
OUT=${1:-/var/tmp/diverse.perf.data}
SECS=${2:-30}
PY=/usr/bin/python3
case $OUT in /*) ;; *) OUT=$(pwd)/$OUT ;; esac

for cmd in perf gzip flock sysctl setsid "$PY"; do
    command -v "$cmd" > /dev/null || { echo "record_diverse.sh: $cmd is missing" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "record_diverse.sh: run as root" >&2; exit 1; }

WORK=$(mktemp -d /var/tmp/record-diverse.XXXXXX)
PERFHOME=$(mktemp -d)
PY_PID=""
GZ_PID=""
stop_load() {
    # each load runs in its own session (setsid, so a ^C reaches only perf and this script)
    for p in $PY_PID $GZ_PID; do kill -TERM "$p" 2> /dev/null || true; done
    for p in $PY_PID $GZ_PID; do wait "$p" 2> /dev/null || true; done
    PY_PID=""
    GZ_PID=""
}
cleanup() {
    stop_load
    sysctl -q kernel.perf_event_paranoid=2 kernel.kptr_restrict=0 || true
    rm -rf "$WORK" "$PERFHOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$WORK/load.py" << 'EOF'
import bisect, collections, heapq, itertools, json, math, random, re, struct, sys, threading

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))

def dict_work(rng):
    d = {}
    for i in range(3000):
        d[f"k{rng.randrange(10000)}"] = i
    s = sum(v for k, v in d.items() if k.endswith("7"))
    d2 = {v: k for k, v in d.items()}
    return s + len(d2) + len(collections.Counter(k[:2] for k in d))

def str_work(rng):
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 9)))
             for _ in range(800)]
    text = " ".join(words)
    up = text.upper().replace("A", "xy").split("E")
    return len(up) + text.count("ab") + len("-".join(sorted(set(words))))

def list_work(rng):
    xs = [rng.random() for _ in range(5000)]
    xs.sort()
    ys = sorted(xs, key=lambda x: -x)
    zs = [a * b for a, b in zip(xs, ys) if a > 0.3]
    heapq.heapify(zs)
    top = heapq.nlargest(10, zs)
    i = bisect.bisect_left(xs, 0.5)
    return len(zs) + i + sum(top)

def json_work(rng):
    doc = {"id": rng.randrange(1 << 30), "tags": [f"t{i}" for i in range(50)],
           "nested": [{"a": i, "b": [i * 1.5, str(i), None, True]} for i in range(100)]}
    s = json.dumps(doc, sort_keys=True)
    back = json.loads(s)
    return len(s) + len(back["nested"])

PAT = re.compile(r"(\w+)@(\w+)\.(com|org|net)")
PAT2 = re.compile(r"^\s*(\d+)\s*[-+*/]\s*(\d+)\s*$")
def re_work(rng):
    lines = [f"user{rng.randrange(999)}@host{rng.randrange(99)}.{rng.choice(['com','org','net','io'])}"
             for _ in range(500)]
    n = sum(1 for l in lines if PAT.search(l))
    n += sum(1 for i in range(300) if PAT2.match(f" {i} + {i * 3} "))
    return n + len(re.sub(r"\d+", "#", " ".join(lines)))

class Node:
    __slots__ = ("key", "left", "right")
    def __init__(self, key):
        self.key, self.left, self.right = key, None, None

def tree_work(rng):
    root = None
    for _ in range(2000):
        k = rng.random()
        if root is None:
            root = Node(k)
            continue
        n = root
        while True:
            if k < n.key:
                if n.left is None:
                    n.left = Node(k); break
                n = n.left
            else:
                if n.right is None:
                    n.right = Node(k); break
                n = n.right
    def depth(n):
        return 0 if n is None else 1 + max(depth(n.left), depth(n.right))
    return depth(root)

def math_work(rng):
    acc = 0.0
    for i in range(1, 4000):
        acc += math.sin(i) * math.sqrt(i) / math.log(i + 1)
    big = 1
    for i in range(1, 400):
        big = big * i + (big >> 7)
    return acc + (big % 1000003)

def struct_work(rng):
    buf = b"".join(struct.pack("<idh", i, i * 0.5, i & 0x7fff) for i in range(2000))
    return sum(t[0] for t in struct.iter_unpack("<idh", buf)) + len(buf.hex())

def gen_work(rng):
    g = (x * x for x in range(20000) if x % 3)
    return sum(itertools.islice(itertools.accumulate(g), 0, None, 7)) % 99991

def exc_work(rng):
    n = 0
    for i in range(3000):
        try:
            if i % 3 == 0:
                raise ValueError(i)
            n += int(str(i))
        except ValueError as e:
            n -= e.args[0]
    return n

TASKS = [lambda r: fib(20), lambda r: ackermann(2, 300), dict_work, str_work, list_work,
         json_work, re_work, tree_work, math_work, struct_work, gen_work, exc_work]

def worker(seed):
    rng = random.Random(seed)
    while True:
        rng.choice(TASKS)(rng)

sys.setrecursionlimit(10000)
threads = [threading.Thread(target=worker, args=(s,), name=f"load-{s}", daemon=True)
           for s in (1, 2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
EOF

head -c 200M /dev/urandom > "$WORK/random.bin"

(
    flock 9   # held for the whole recording
    trap stop_load EXIT   # a subshell has its own traps: the loads' pids live here
    trap 'exit 130' INT TERM
    sysctl -q kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0
    setsid "$PY" "$WORK/load.py" > "$WORK/load.out" 2>&1 &
    PY_PID=$!
    # the loop, told to stop, stops its gzip and waits for it: no gzip outlives the script
    setsid bash -c 'trap "kill \$c 2> /dev/null; wait \$c; exit 0" TERM
                    while :; do gzip -1 -c "$1" > /dev/null & c=$!; wait $c; done' \
        gzloop "$WORK/random.bin" &
    GZ_PID=$!
    sleep 2
    kill -0 "$PY_PID" || { cat "$WORK/load.out" >&2; exit 1; }
    rm -f "$OUT" "$OUT.old"
    HOME=$PERFHOME perf record -a -g -F 3999 -o "$OUT" -- sleep "$SECS" \
        2> "$WORK/record-log.txt" || { cat "$WORK/record-log.txt" >&2; exit 1; }
    cat "$WORK/record-log.txt" >&2
    stop_load
    sysctl -q kernel.perf_event_paranoid=2 kernel.kptr_restrict=0
) 9> /tmp/perfweb-record.lock
rm -f "$OUT.old"

export HOME=$PERFHOME
perf script -i "$OUT" > "$OUT.script.txt" 2> /dev/null

SAMPLES_STATS=$(perf report -i "$OUT" --stats 2> /dev/null \
                | awk '/SAMPLE events:/ { print $3; exit }')
# one pass over the text: samples, distinct ips, distinct folded stacks
read -r SAMPLES ADDRS STACKS < <("$PY" - "$OUT.script.txt" << 'EOF'
import re, sys
frame = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")
head = re.compile(r"^(.*?)\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:")
ips, stacks, samples = set(), set(), 0
comm, frames = None, []
def flush():
    global samples
    if comm is not None:
        samples += 1
        stacks.add(";".join([comm.replace(" ", "_")] + frames[::-1]))
with open(sys.argv[1], errors="replace") as f:
    for line in f:
        line = line.rstrip("\n")
        if not line:
            continue
        if line[0] in " \t":
            m = frame.match(line)
            if not m:
                continue
            ip, sym, dso = m.groups()
            ips.add(ip)
            if sym == "[unknown]" and dso != "[unknown]":
                sym = "[" + dso.rsplit("/", 1)[-1] + "]"
            else:
                sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            frames.append(sym)
        else:
            flush()
            m = head.match(line)
            comm, frames = (m.group(1).strip() if m else line.split()[0]), []
flush()
print(samples, len(ips), len(stacks))
EOF
)

TIMEFORMAT=%R
T_REPORT=$( { time perf report -i "$OUT" --stdio --no-children --sort comm,dso,sym \
              > /dev/null 2>&1; } 2>&1 )
T_SCRIPT=$( { time perf script -i "$OUT" > /dev/null 2>&1; } 2>&1 )

mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB (%d B)", b / 1e6, b }'; }
cat << EOF
record_diverse.sh: $OUT, $SECS s at 3999 Hz, system-wide, -g
  samples:                 $SAMPLES (perf report --stats: $SAMPLES_STATS)
  distinct addresses:      $ADDRS
  distinct folded stacks:  $STACKS
  perf.data:               $(mb "$OUT")
  perf script text:        $(mb "$OUT.script.txt")  $OUT.script.txt
  perf report --stdio --no-children --sort comm,dso,sym:  ${T_REPORT} s
  perf script:                                            ${T_SCRIPT} s
EOF
