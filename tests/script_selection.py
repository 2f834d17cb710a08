"""A thread and time-range selection counted from `perf script`'s own text, to pin what
the explorer and the exports select: the samples of some tids whose times lie in
[t0 + start, t0 + end) (the explorer's convention: seconds from the capture's first
sample of any event, start inclusive, end exclusive), with per-function totals from the
printed stacks. Times are kept in the integer microseconds perf prints."""
import re
from collections import Counter
from pathlib import Path

# comm [pid/]tid [cpu] sec.usec: period event:
HEADER = re.compile(r"^(\S.*?)\s+(?:\d+/)?(\d+)\s+(?:\[\d+\]\s+)?(\d+)\.(\d{6}):\s+\d+\s+"
                    r"(\S+):\s*$")
FRAME = re.compile(r"^\s+([0-9a-f]+) (.*?)(?:\+0x[0-9a-f]+)? \(([^()]*)\)$")


def script_stacks(path: Path, by="symbol") -> list[tuple[int, int, str, list[str]]]:
    """(tid, time in µs, event, frames leaf first) per sample perf script printed; a frame
    is its symbol's name, or by="address" named as the engine names a frame without a
    symbol: the kernel address, or DSO+offset."""
    out = []
    for line in path.read_text().splitlines():
        m = HEADER.match(line)
        if m:
            _, tid, sec, usec, event = m.groups()
            out.append((int(tid), int(sec) * 1_000_000 + int(usec), event, []))
            continue
        m = FRAME.match(line)
        if m and out:
            addr, name, dso = m.groups()
            if by == "address":
                name = f"0x{addr}" if dso.startswith("[kernel") else \
                    f"{dso.rsplit('/', 1)[-1]}+0x{addr}"
            out[-1][3].append(name)
    assert out, f"no samples read from {path}"
    return out


def script_selection(path: Path, tids, start: float, end: float, event=None, by="symbol"):
    """(samples, totals, leaves) of the tids' samples (of `event`, None: any) with times in
    [t0 + start, t0 + end), t0 the first sample's time (of any event). totals: name ->
    samples whose stack holds it (once per sample); leaves: name -> samples it is the
    leaf of; [unknown] frames left out (by="address": frames named as script_stacks
    names them). perf prints µs truncated from the ns perf.data holds, so a sample
    within 2 µs of a bound after t0 could fall either side: refused, loudly."""
    samples = script_stacks(path, by)
    t0 = min(t for _, t, _, _ in samples)
    lo, hi = round(start * 1_000_000), round(end * 1_000_000)
    n, totals, leaves = 0, Counter(), Counter()
    for tid, t, ev, names in samples:
        if tid not in tids or (event is not None and ev != event):
            continue
        rel = t - t0
        # (no sample is before t0: a bound at or before it divides nothing)
        assert all(abs(rel - b) > 2 for b in (lo, hi) if b > 0), \
            f"a sample {rel} µs from t0 is too near a bound of [{lo}, {hi}) µs"
        if lo <= rel < hi:
            n += 1
            totals.update(set(names) - {"[unknown]"})
            if names and names[0] != "[unknown]":
                leaves[names[0]] += 1
    return n, totals, leaves
