"""Samples as `perf script` printed them, read by the tests themselves (not by the
engine's importer), to check views against perf's own text."""
import re
from pathlib import Path

HEADER = re.compile(r"^\S+\s+(\d+)\s+(\d+\.\d+):\s+(\d+)\s+(\S+):\s*$")
FRAME = re.compile(r"^\s+([0-9a-f]+) .* \((.*)\)$")


def raw_samples(path: Path) -> list[tuple[int, float, int, str, list[str]]]:
    """(tid, seconds, period, event, frames root first) per sample of a `perf script`
    text with the default fields; a frame is named the way the engine names a frame
    without a symbol: the kernel address, or DSO+offset."""
    out, cur = [], None
    for line in path.read_text().splitlines():
        m = HEADER.match(line)
        if m:
            cur = (int(m.group(1)), float(m.group(2)), int(m.group(3)), m.group(4), [])
            out.append(cur)
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            addr, dso = m.groups()
            cur[4].append(f"0x{addr}" if dso.startswith("[kernel") else
                          f"{dso.rsplit('/', 1)[-1]}+0x{addr}")
    return [(tid, t, period, event, frames[::-1]) for tid, t, period, event, frames in out]
