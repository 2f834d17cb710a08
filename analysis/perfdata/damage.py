"""A perf.data that cannot be read whole: refuse it, or keep what was read and say so.

perf 6.1 reads nothing from a damaged capture: on a file with a record of impossible size,
a record crossing the end of the data section or a file cut short, `perf report` and
`perf script` stop with "failed to process type: N" and print no sample; on a pipe stream
a record header of impossible size stops it with "bad event header size", again printing
nothing. Only a stream that simply ends (EOF, even inside a record) keeps what came
before it. We decide the same way, with one leniency for files that are merely cut short:

- Corruption is refused (ParseError naming the byte): a record that cannot be one (size
  below 8, damaged compressed data), a record crossing the end of a data section that is
  whole in the file (the header's sizes do not add up), and any record that does not
  decode with the layout its event declares. What was read before such damage may be
  wrong too, so none of it is used.
- A cut (the file ends before its data does: an upload or copy cut short, perf record
  killed before it wrote its header, a stream ending inside a record) keeps the records
  before it, which are the bytes perf wrote, when at least one sample was read and at
  most TOLERANCE of the data section is missing. The profile is then marked damaged
  (`meta.damaged` and its first note), and the report draws no finding from it; the
  samples stay explorable.
"""
from __future__ import annotations

from ..errors import ParseError
from .header import FileHeader
from .records import Stop

#: the share of a cut file's data section that may be missing with its samples kept: at
#: most one percentage point of any share, the tail end of the recording. Beyond it the
#: missing part can be a phase of its own (the load ending, a burst at shutdown), and the
#: samples read no longer stand for the capture.
TOLERANCE = 0.01


def judge(h: FileHeader, stop: Stop | None, samples: int, bad: int,
          first_bad: tuple[int, str, str] | None) -> str | None:
    """None when the data was read whole; the sentence saying what was lost when the
    samples read are kept; ParseError when they may not be."""
    start = h.data_offset
    readable_end = start + h.data_size
    if bad:
        at, kind, what = first_bad
        many = f"{bad} records do" if bad > 1 else "1 record does"
        what = f": {what}" if what else ""
        raise ParseError(
            f"perf.data is damaged: {many} not decode with the layout of its event, the "
            f"first a {kind} record at byte {at} ({_rel(at, start)}){what}; no finding is "
            f"drawn from a capture whose records are unreadable")
    if stop is not None and not (stop.past_end and h.cut):
        raise ParseError(
            f"perf.data is damaged: the record at byte {stop.offset} "
            f"({_rel(stop.offset, start)}) {stop.what}; perf cannot read past it either "
            f"({samples} samples before it, {readable_end - stop.offset} bytes of data "
            f"from it on)")
    end = h.declared_end if h.declared_end is not None else h.length
    stopped = stop.offset if stop is not None else readable_end
    unfinished = not h.pipe and h.declared_end is None
    if stopped >= end and not unfinished:
        return None
    if stop is not None:
        where = f"the record at byte {stop.offset} ({_rel(stop.offset, start)}) {stop.what}"
    else:
        where = f"the file ends at byte {h.length}"
    if unfinished:
        why = ("perf record did not finish writing the file: its header gives the data "
               "section no size (perf refuses such a file)")
    elif h.pipe:
        why = "the stream ends inside that record"
    else:
        why = (f"the header declares {h.declared_end - start} bytes of data, up to byte "
               f"{h.declared_end}: the file is cut short")
    lost, total = end - stopped, end - start
    share = lost / total if total else 1.0
    if samples == 0:
        raise ParseError(f"perf.data is cut short: {where}; {why}; no sample could be read "
                         f"before it")
    if share > TOLERANCE:
        raise ParseError(
            f"perf.data is cut short: {where}; {why}. {lost} bytes ({_pct(share)}) of the "
            f"data section are missing, more than the {TOLERANCE:.0%} a capture may lose "
            f"and still be analyzed ({samples} samples were read before it)")
    gone = f"the {lost} bytes from there on ({_pct(share)} of the data section)"
    if unfinished:
        gone = f"{gone} and" if lost else ""
        gone += " the samples perf had not written yet"
    gone = f"{gone.strip()} are lost"
    return (f"perf.data is damaged: {where}; {why}. {samples} samples were read; {gone}. "
            f"No finding is drawn from a damaged capture.")


def _rel(offset: int, start: int) -> str:
    return f"offset 0x{offset - start:x} of the data section"


def _pct(share: float) -> str:
    return "<0.1%" if 0 < share < 0.001 else f"{share:.1%}"
