#!/bin/bash
# Records the capture of benchmarks/bench_dwarf.py: tests/fixtures/dwarf/cpp-pool (4 threads:
# main + pool-w1..3, C++ + libwork.so, -O2 -g -fomit-frame-pointer, split debug info) by PID,
# the way a user types it:
#   perf record --call-graph dwarf -F 499 -p PID -o OUT -- sleep 60
# pool runs as `./pool 4 75 1.1`: 1.1 CPU in all (each of the 4 workers keeps itself at 0.275 of
# a CPU by sleeping in proportion to its thread CPU time, see pool.cpp), so at 499 Hz the
# capture holds about 30,000 samples of 8 KiB stack copies (~250 MB): on the 2-vCPU host it
# was written on, 1.0 CPU gave 27,232 samples in 60 s (454/s: the workers' sleeps and the
# measurement itself take some), hence 1.1. (pool's default, 0.45 CPU, gives ~13,000; 4 busy
# threads on 2 CPUs would give ~60,000.)
#
#   usage: record_dwarf.sh OUT [SECONDS=60] [FREQ=499] [CPU=1.1]     (as root)
#
# Writes, beside OUT (all kept: perf and perfweb need the binaries at the recorded paths):
#   OUT.pool/          the build: pool, pool.debug, libwork.so, libwork.so.debug (they ran from here)
#   OUT.perfhome/      the HOME perf record ran with: its build-id cache ~/.debug (with the vdso)
#   OUT.vdso.so        the kernel's vdso image, from that cache
#   OUT.symbols.txt    the binaries to pass to perfweb as --symbols, one a line
#   OUT.record-log.txt perf record's messages
# Takes /tmp/perfweb-record.lock for the whole recording; sets kernel.perf_event_paranoid=-1
# for it and leaves kernel.perf_event_paranoid=2, kernel.kptr_restrict=0.
set -eu
OUT=${1:?usage: record_dwarf.sh OUT [SECONDS] [FREQ] [CPU]}
SECS=${2:-60}
FREQ=${3:-499}
CPU=${4:-1.1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=$ROOT/tests/fixtures/dwarf/cpp-pool
case $OUT in /*) ;; *) OUT=$(pwd)/$OUT ;; esac
BUILD=$OUT.pool
PERFHOME=$OUT.perfhome

for cmd in perf g++ make objcopy readelf; do
    command -v "$cmd" > /dev/null || { echo "record_dwarf.sh: $cmd is missing" >&2; exit 1; }
done

rm -rf "$BUILD" "$PERFHOME"
mkdir -p "$BUILD" "$PERFHOME"
cp "$SRC/Makefile" "$SRC/pool.cpp" "$SRC/libwork.cpp" "$SRC/work.h" "$BUILD/"
make -s -C "$BUILD"

POOL_PID=""
cleanup() {
    if [ -n "$POOL_PID" ]; then kill "$POOL_PID" 2> /dev/null || true; wait "$POOL_PID" 2> /dev/null || true; fi
    sysctl -q kernel.perf_event_paranoid=2 kernel.kptr_restrict=0
}

(
    flock 9   # held for the whole recording
    trap cleanup EXIT INT TERM
    sysctl -q kernel.perf_event_paranoid=-1 kernel.kptr_restrict=0
    cd "$BUILD"
    ./pool 4 $((SECS + 15)) "$CPU" > pool.out 2>&1 &
    POOL_PID=$!
    sleep 1
    rm -f "$OUT" "$OUT.old"
    # scratch HOME: perf record's build-id cache is a fresh one, /root/.debug is left alone
    HOME=$PERFHOME perf record --call-graph dwarf -F "$FREQ" -p "$POOL_PID" -o "$OUT" \
        -- sleep "$SECS" 2> "$OUT.record-log.txt"
    cat "$OUT.record-log.txt" >&2
) 9> /tmp/perfweb-record.lock
rm -f "$OUT.old"

# The vdso's image: only perf's build-id cache has it.
rm -f "$OUT.vdso.so"
for v in "$PERFHOME"/.debug/\[vdso\]/*/vdso; do
    if [ -f "$v" ]; then cp "$v" "$OUT.vdso.so"; fi
done

build_id() { readelf -n "$1" 2> /dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -1; }
LIBC=/usr/lib/x86_64-linux-gnu/libc.so.6
LIBSTDCXX=$(readlink -f /usr/lib/x86_64-linux-gnu/libstdc++.so.6)
{
    for f in pool pool.debug libwork.so libwork.so.debug; do echo "$BUILD/$f"; done
    echo "$LIBC"
    bid=$(build_id "$LIBC")
    dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
    if [ -n "$bid" ] && [ -f "$dbg" ]; then echo "$dbg"; fi
    echo "$LIBSTDCXX"
    if [ -f "$OUT.vdso.so" ]; then echo "$OUT.vdso.so"; fi
} > "$OUT.symbols.txt"

echo "record_dwarf.sh: $OUT ($(stat -c %s "$OUT") B), $SECS s at $FREQ Hz, pool at $CPU CPU;" \
     "symbols: $OUT.symbols.txt ($(wc -l < "$OUT.symbols.txt") files)" >&2
