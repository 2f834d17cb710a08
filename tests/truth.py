"""Reading the ground truth files of the spinpool case (perf's own symbolized output)."""
import re

_ENTRY = re.compile(r"^\s+(\d+\.\d+)%\s+\[(.)\]\s+(.*?)\s*$")
_SAMPLES = re.compile(r"^# Samples: (\d+)\s+of event '(.*)'")


def truth_report(path):
    """(samples, {symbol: percent}) from `perf report --no-children --sort sym`."""
    samples, entries = 0, {}
    for line in path.read_text().splitlines():
        m = _SAMPLES.match(line)
        if m:
            samples = int(m.group(1))
        m = _ENTRY.match(line)
        if m:
            entries[m.group(3)] = float(m.group(1))
    return samples, entries
