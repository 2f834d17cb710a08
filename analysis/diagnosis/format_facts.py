"""What the uploaded format carries of the facts some findings need.

The same recording arrives as perf.data, `perf script` text or `perf report` text, and
each carries less than the one before: perf script prints no CPU count unless asked
(`--header`), perf report no duration and no threads, and its call graphs are folded
and cut at a threshold. A finding that needs a fact its format lacks says which one and
how to get it, never what the fact would have been (docs/diagnosis.md, "The same
recording in every format").
"""
from __future__ import annotations

from .. import cpu
from ..importers import perf_report, perf_script
from ..profile import Profile

_NAMES = {perf_script.NAME: "perf script text", perf_report.NAME: "perf report text"}
_HEADER = {perf_script.NAME: "perf script --header", perf_report.NAME: "perf report --header"}


def format_name(profile: Profile) -> str:
    return _NAMES.get(profile.meta.format, "this capture")


def rebuilt_stacks(profile: Profile) -> bool:
    """Stacks rebuilt from a perf report's call graph: aggregated, branches under perf's
    threshold hidden, frames without names printed as bare addresses with no file."""
    return profile.meta.format == perf_report.NAME


def header_command(profile: Profile) -> str | None:
    """The command that prints this text with the recording's header, if it has one."""
    return _HEADER.get(profile.meta.format)


def how_to_get(profile: Profile, what: str) -> str:
    """Where the fact `what` ("nrcpus online", "sample duration") is printed: the text's
    header, or the perf.data file, which carries it."""
    header = header_command(profile)
    where = f"`{header}` prints it as `{what}`; " if header else ""
    return f"{where}the perf.data file carries it"


def upload_advice(profile: Profile) -> str:
    """What to upload instead, for a finding that needs the recording's header."""
    header = header_command(profile)
    return "Upload the perf.data file" + (f", or the text with its header (`{header}`)"
                                          if header else "")


def cpu_count_unknown(profile: Profile) -> str:
    """The sentence saying the host's CPU count is not in this capture."""
    return (f"The capture ({format_name(profile)}) does not say how many CPUs the host "
            f"had ({how_to_get(profile, 'nrcpus online')})")


def duration_unknown(profile: Profile) -> str:
    """The sentence saying how long perf recorded is not in this capture."""
    return (f"The capture ({format_name(profile)}) does not carry how long perf recorded "
            f"({how_to_get(profile, 'sample duration')})")


def busy_unknown(profile: Profile, event_id: int | None) -> tuple[str, str]:
    """(what is missing, the sentence saying so) of a capture whose CPUs busy are
    unknown: its duration (perf report text), or for an event that is not a clock
    (cycles), how often it was sampled (perf script text prints no frequency)."""
    if cpu.duration_s(profile, event_id) is None or event_id is None:
        return "duration", duration_unknown(profile)
    header = header_command(profile)
    where = f"`{header}` prints it in the event's line, `sample_freq`; " if header else ""
    return "sampling frequency", (
        f"The capture ({format_name(profile)}) does not carry how often perf sampled "
        f"{profile.events[event_id].name} ({where}the perf.data file carries it)")
