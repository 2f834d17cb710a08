#!/bin/bash
# Records the inputs of benchmarks/bench_size.py (issue 16, "Size"): a perf.data of about
# 2,000,000 samples, a ~1 GB `perf script` text, and the half-size version of each, so that
# the benchmark can show the import's time and memory growing linearly with the input.
# The load is record_diverse.sh's (its load.py, taken from that script at run time, not
# copied: CPython on two threads over varied pure-Python work, plus `gzip -1` over 200 MB of
# random data in a loop), recorded the way a user records a busy machine:
#   perf record -a -g -F FREQ -o OUT -- sleep SECONDS
# Three recordings of the same load, one after the other:
#   size.perf.data        SECONDS      (default 50 s: 2 CPUs x 20,000 Hz x 50 s = 2M samples)
#   size-half.perf.data   SECONDS / 2  (the half: a second recording of half the duration;
#                                       a perf.data cannot be cut, its maps come first)
#   size-long.perf.data   TEXT_SECONDS (default 100 s), whose `perf script` is the text:
#   size.script.txt       perf script -i size-long.perf.data (~1 GB; 306 B a sample here)
#   size-half.script.txt  its first half of the samples, cut at a sample boundary
# A 2M-sample capture's text is only ~600 MB, hence the longer recording for the text.
# First run (2 vCPUs, the host shared with other work): 1,984,487 + 992,166 samples in the
# perf.data files (200.8 + 109.0 MB), 3,969,078 in the text (1216.9 MB), its half 1,984,539
# (573.5 MB); 0 lost; 4 min in all. System-wide, so whatever else runs is in it too (other
# users' Python and brotli work on that run). Code without frame pointers (Debian's gzip and
# python3, brotli) leaves garbage caller addresses in its chains, so distinct addresses and
# stacks keep growing with the samples: 372,352 locations, 490,203 stacks in size.perf.data.
#
#   usage: record_size.sh [DIR=/var/tmp] [SECONDS=50] [FREQ=20000] [TEXT_SECONDS=100]  (root)
#
# Prints, for each file: samples (perf report --stats for perf.data, sample header lines for
# the text), lost samples, and its size. Takes /tmp/perfweb-record.lock for the recordings;
# sets kernel.perf_event_paranoid=-1 for them and leaves kernel.perf_event_paranoid=2,
# kernel.kptr_restrict=0; raises kernel.perf_event_max_sample_rate to FREQ if it is lower and
# puts back the value it found (the kernel may lower it while perf samples). perf runs with a
# scratch HOME (its build-id cache is not /root/.debug), removed at the end. Everything it
# starts is stopped on exit, error or signal.
set -eu
DIR=${1:-/var/tmp}
SECS=${2:-50}
FREQ=${3:-20000}
TEXT_SECS=${4:-100}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
case $DIR in /*) ;; *) DIR=$(pwd)/$DIR ;; esac

for cmd in perf gzip flock sysctl setsid awk "$PY"; do
    command -v "$cmd" > /dev/null || { echo "record_size.sh: $cmd is missing" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "record_size.sh: run as root" >&2; exit 1; }
mkdir -p "$DIR"

WORK=$(mktemp -d /var/tmp/record-size.XXXXXX)
PERFHOME=$(mktemp -d)
PY_PID=""
GZ_PID=""
MAX_RATE=""   # kernel.perf_event_max_sample_rate as found, when this script raised it
stop_load() {
    # each load runs in its own session (setsid, so a ^C reaches only perf and this script)
    for p in $PY_PID $GZ_PID; do kill -TERM "$p" 2> /dev/null || true; done
    for p in $PY_PID $GZ_PID; do wait "$p" 2> /dev/null || true; done
    PY_PID=""
    GZ_PID=""
}
restore_sysctls() {
    [ -z "$MAX_RATE" ] || sysctl -q kernel.perf_event_max_sample_rate="$MAX_RATE" || true
    sysctl -q kernel.perf_event_paranoid=2 kernel.kptr_restrict=0 || true
}
cleanup() {
    stop_load
    restore_sysctls
    rm -rf "$WORK" "$PERFHOME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# record_diverse.sh's load, the lines of its `cat > "$WORK/load.py" << 'EOF'` document
sed -n "/^cat > \"\$WORK\/load.py\" << 'EOF'\$/,/^EOF\$/p" "$HERE/record_diverse.sh" \
    | sed '1d;$d' > "$WORK/load.py"
"$PY" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$WORK/load.py" \
    && grep -q '^def worker' "$WORK/load.py" \
    || { echo "record_size.sh: no load.py in $HERE/record_diverse.sh" >&2; exit 1; }
head -c 200M /dev/urandom > "$WORK/random.bin"

start_load() {
    setsid "$PY" "$WORK/load.py" > "$WORK/load.out" 2>&1 &
    PY_PID=$!
    # the loop, told to stop, stops its gzip and waits for it: no gzip outlives the script
    setsid bash -c 'trap "kill \$c 2> /dev/null; wait \$c; exit 0" TERM
                    while :; do gzip -1 -c "$1" > /dev/null & c=$!; wait $c; done' \
        gzloop "$WORK/random.bin" &
    GZ_PID=$!
    sleep 2
    kill -0 "$PY_PID" || { cat "$WORK/load.out" >&2; exit 1; }
}

record() {  # OUT SECONDS: one capture of a freshly started load
    start_load
    rm -f "$1" "$1.old"
    HOME=$PERFHOME perf record -a -g -F "$FREQ" -o "$1" -- sleep "$2" \
        2> "$WORK/record-log.txt" || { cat "$WORK/record-log.txt" >&2; exit 1; }
    cat "$WORK/record-log.txt" >&2
    stop_load
    rm -f "$1.old"
}

(
    flock 9   # held for the whole recording
    trap 'stop_load; restore_sysctls' EXIT   # a subshell has its own traps and pids
    trap 'exit 130' INT TERM
    sysctl -q kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0
    found=$(sysctl -n kernel.perf_event_max_sample_rate)
    if [ "$found" -lt "$FREQ" ]; then
        MAX_RATE=$found
        sysctl -q kernel.perf_event_max_sample_rate="$FREQ"
    fi
    record "$DIR/size.perf.data" "$SECS"
    record "$DIR/size-half.perf.data" $((SECS / 2))
    record "$DIR/size-long.perf.data" "$TEXT_SECS"
) 9> /tmp/perfweb-record.lock

export HOME=$PERFHOME
perf script -i "$DIR/size-long.perf.data" > "$DIR/size.script.txt" 2> /dev/null

# a sample starts at a line that is neither blank nor a tab-indented frame
text_samples() { awk '!/^\t/ && NF { n++ } END { print n + 0 }' "$1"; }
TEXT_SAMPLES=$(text_samples "$DIR/size.script.txt")
awk -v half=$((TEXT_SAMPLES / 2)) '!/^\t/ && NF { if (++n > half) exit } { print }' \
    "$DIR/size.script.txt" > "$DIR/size-half.script.txt"

stat_of() {  # FILE KEY: a count from perf report --stats
    perf report -i "$1" --stats 2> /dev/null \
        | awk -v k="$2" '$1 == k { n = $3; exit } END { print n + 0 }'
}
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB (%d B)", b / 1e6, b }'; }
echo "record_size.sh: system-wide, -g, $FREQ Hz, into $DIR"
for f in size.perf.data size-half.perf.data size-long.perf.data; do
    printf '  %-22s %9s samples, lost: %s LOST_SAMPLES, %s LOST events; %s\n' "$f" \
        "$(stat_of "$DIR/$f" SAMPLE)" "$(stat_of "$DIR/$f" LOST_SAMPLES)" \
        "$(stat_of "$DIR/$f" LOST)" "$(mb "$DIR/$f")"
done
for f in size.script.txt size-half.script.txt; do
    printf '  %-22s %9s samples, %s\n' "$f" "$(text_samples "$DIR/$f")" "$(mb "$DIR/$f")"
done
