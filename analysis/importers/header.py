"""The `# key : value` header that `perf script --header` and `perf report --header` print.

Shared by the text importers; perf.data's feature sections carry the same facts.
"""
from __future__ import annotations

import re

from ..profile import Profile

_KV = re.compile(r"^#\s*([a-z][a-z ]*?)\s*:\s*(.*?)\s*$")
_FREQ_ARG = re.compile(r"(?:^|\s)(?:-F|--freq)(?:\s+|=)(\d+)")
_PERIOD_ARG = re.compile(r"(?:^|\s)(?:-c|--count)(?:\s+|=)(\d+)")
_EVENT_NAME = re.compile(r"name = ([^,]+)")
_SAMPLE_FREQ = re.compile(r"sample_freq\s*\}?\s*=\s*(\d+)")
_SAMPLE_PERIOD = re.compile(r"\{ sample_period, sample_freq \} = (\d+)|sample_period = (\d+)")
_DURATION = re.compile(r"([\d.]+)\s*ms")


class HeaderReader:
    def __init__(self, profile: Profile) -> None:
        self.p = profile
        self.event_desc: dict[str, str] = {}

    def feed(self, line: str) -> None:
        m = _KV.match(line)
        if m is None:
            return
        key, value = m.group(1), m.group(2)
        meta = self.p.meta
        if key == "hostname":
            meta.hostname = value
        elif key == "os release":
            meta.os_release = value
        elif key == "perf version":
            meta.perf_version = value
        elif key == "arch":
            meta.arch = value
        elif key == "nrcpus online":
            meta.cpus_online = _int(value)
        elif key == "nrcpus avail":
            meta.cpus_available = _int(value)
        elif key == "cpudesc":
            meta.cpu_desc = value
        elif key == "cmdline":
            meta.cmdline = value
        elif key == "event":
            n = _EVENT_NAME.search(value)
            if n:
                self.event_desc[n.group(1).strip()] = value
        elif key == "sample duration":
            d = _DURATION.search(value)
            if d:
                meta.duration_s = float(d.group(1)) / 1000.0
        elif key == "total lost samples":
            meta.lost_samples = _int(value)

    def finish(self) -> None:
        """Give each event its sampling frequency or period, from its description or the
        command line (`-F 99`, `-c 100000`)."""
        cmd = self.p.meta.cmdline or ""
        freq_arg = _FREQ_ARG.search(cmd)
        period_arg = _PERIOD_ARG.search(cmd)
        for ev in self.p.events:
            desc = self.event_desc.get(ev.name) or self.event_desc.get(ev.name.split(":")[0], "")
            if desc:
                f = _SAMPLE_FREQ.search(desc)
                freq_mode = "freq = 1" in desc
                per = _SAMPLE_PERIOD.search(desc)
                if freq_mode and per:
                    ev.frequency = float(per.group(1) or per.group(2))
                elif f and freq_mode:
                    ev.frequency = float(f.group(1))
                elif per:
                    ev.period = _int(per.group(1) or per.group(2))
            if ev.frequency is None and ev.period is None:
                if freq_arg:
                    ev.frequency = float(freq_arg.group(1))
                elif period_arg:
                    ev.period = _int(period_arg.group(1))


#: perf prints its counts and periods from u64 fields; a number past that is none it printed
#: (an edited header), and would not fit the saved profile's JSON either
_U64 = 1 << 64


def _int(s: str) -> int | None:
    try:
        n = int(s.split()[0])
    except (ValueError, IndexError):
        return None
    return n if 0 <= n < _U64 else None

