"""The text files of an uploaded source archive, read once, within a budget.

Hot lines are shown in the source (analysis.sources), from an archive anyone with an
account may upload. A tar stream has no index: to reach a member, everything before it
is decompressed. A 21 KB tar.bz2 whose first member was 16 GiB of zeros held a web worker
for two minutes on every hot-lines request for its second member. So the archive is read
here once, by the worker (perfweb keeps what this yields), and every decompressed byte
counts, whatever it belongs to (headers, the members kept, the members skipped): at most
MAX_RATIO times the archive's size (as symbol bundles, analysis.symbols.inputs), each
member at most MAX_RATIO times its compressed bytes, and at most `cpu_s` seconds of this
thread's CPU time, checked on every piece read. Past any of them the archive is refused
with a sentence saying which.
"""
from __future__ import annotations

import lzma
import os
import stat
import tarfile
import time
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import zstandard

from .compressed_stream import READ_AHEAD, Counted, decompressed
from .errors import AnalysisError
from .sources import MAX_SOURCE_BYTES, member_basename
from .symbols.inputs import MAX_RATIO, MAX_TOTAL_BYTES, SLACK_BYTES

#: members looked at per archive (the rest are not read), text kept of all of them
MAX_MEMBERS = 200_000
MAX_TEXT_BYTES = 1 << 30
#: a member name longer than this is no source file a compiler named
MAX_NAME_CHARS = 4096
#: a pax or GNU long-name header, which tarfile reads into memory whole
MAX_HEADER_BYTES = 1 << 20
MAX_CPU_S = 60.0
_CHUNK = 1 << 20
_SNIFF = 8192  # a NUL byte among a member's first bytes: not a text file
_LONG_HEADERS = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                 tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)


class SourceArchiveRefused(AnalysisError):
    """The archive broke a limit or cannot be read; the message is a sentence for the
    page."""

    def __init__(self, origin: str, reason: str) -> None:
        super().__init__(f"Source archive {origin} refused: {reason}.")


class _Refused(Exception):
    """A limit broken deep inside a reader, named with the archive at the top."""


@dataclass(frozen=True)
class TextMember:
    name: str  # the member's path in the archive
    text: bytes  # its first MAX_SOURCE_BYTES


_DAMAGED = (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError,
            lzma.LZMAError, zlib.error, zstandard.ZstdError)


def text_members(path: str, origin: str, cpu_s: float = MAX_CPU_S) -> Iterator[TextMember]:
    """Each regular member whose first bytes hold no NUL, in archive order; `origin` is
    what the user calls the archive. Raises SourceArchiveRefused. The CPU time spent by
    the caller between members is not counted."""
    budget = _Budget(os.path.getsize(path), cpu_s)
    try:
        with open(path, "rb") as raw:
            if zipfile.is_zipfile(raw):
                members = _zip_members(raw, budget)
            else:
                members = _tar_members(raw, budget)
            for member in members:
                with budget.paused():
                    yield member
    except _Refused as e:
        raise SourceArchiveRefused(origin, str(e)) from None
    except _DAMAGED as e:
        raise SourceArchiveRefused(
            origin, f"it is damaged or not a tar or zip archive ({type(e).__name__})") \
            from None
    except MemoryError:  # a zip's central directory of millions of entries, read whole
        raise SourceArchiveRefused(origin, "reading it needed more memory than a worker "
                                           "may use") from None


class _Budget:
    """Decompressed bytes and CPU time the reading of one archive may still spend."""

    def __init__(self, size: int, cpu_s: float) -> None:
        self.size = size
        self.limit = min(MAX_RATIO * size + SLACK_BYTES, MAX_TOTAL_BYTES)
        self.read = 0
        self.text = 0
        self.cpu_s = cpu_s
        self.spent = 0.0
        self.since = time.thread_time()

    def charge(self, n: int) -> None:
        """`n` more bytes decompressed, of anything."""
        self.read += n
        if self.read > self.limit:
            if self.limit == MAX_TOTAL_BYTES:
                raise _Refused(f"it expands beyond {MAX_TOTAL_BYTES >> 30} GiB")
            raise _Refused(f"it expands more than {MAX_RATIO}x its size of "
                           f"{self.size:,} bytes (an archive bomb?)")
        if self.spent + time.thread_time() - self.since > self.cpu_s:
            raise _Refused(f"reading it took more than {self.cpu_s:g} s of CPU time")

    def member(self, name: str, read: int, packed: int) -> None:
        """A member has `read` bytes so far from `packed` compressed ones."""
        if read > MAX_RATIO * packed + SLACK_BYTES:
            raise _Refused(f"its member {name[:200]!r} expands more than {MAX_RATIO}x its "
                           f"compressed size (an archive bomb?)")

    def keep(self, n: int) -> None:
        self.text += n
        if self.text > MAX_TEXT_BYTES:
            raise _Refused(f"it holds more than {MAX_TEXT_BYTES >> 30} GiB of text files")

    @contextmanager
    def paused(self):
        """The caller's time between two members, not the archive's."""
        self.spent += time.thread_time() - self.since
        try:
            yield
        finally:
            self.since = time.thread_time()


class _Charged:
    """A decompressed stream whose every read is charged to the budget."""

    def __init__(self, src, budget: _Budget) -> None:
        self.src, self.budget = src, budget

    def read(self, n: int = -1) -> bytes:
        data = self.src.read(_CHUNK if n is None or n < 0 else min(n, _CHUNK))
        self.budget.charge(len(data))
        return data

    def readable(self) -> bool:
        return True


def _text(src, budget: _Budget, name: str, packed: Callable[[], int],
          to_the_end: bool) -> bytes | None:
    """The member's first MAX_SOURCE_BYTES, or None when it is no text file. A tar
    member is read `to_the_end`, since the next member is behind it."""
    kept, read, text = bytearray(), 0, True
    while chunk := src.read(_CHUNK):
        if read == 0 and b"\0" in chunk[:_SNIFF]:
            text = False
        read += len(chunk)
        budget.member(name, read, packed())
        if text and len(kept) < MAX_SOURCE_BYTES:
            kept += chunk[:MAX_SOURCE_BYTES - len(kept)]
        if not to_the_end and (not text or len(kept) >= MAX_SOURCE_BYTES):
            break
    return bytes(kept) if text else None


def _named(name: str) -> bool:
    """A name a debug path may match (analysis.sources.best_member), in UTF-8 without
    NUL (tarfile keeps bytes it cannot decode as lone surrogates; a pax name may hold a
    NUL): what a database stores as text."""
    base = member_basename(name)
    if not 0 < len(name) <= MAX_NAME_CHARS or base is None or len(base) > 255 or \
            "\0" in name or ".." in name.replace("\\", "/").split("/"):
        return False
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _found(name: str, text: bytes | None, budget: _Budget) -> TextMember | None:
    if text is None or not _named(name):
        return None
    budget.keep(len(text))
    return TextMember(name, text)


def _zip_members(raw, budget: _Budget) -> Iterator[TextMember]:
    """Members are read from where the central directory says: nothing before a member
    is decompressed to reach it, and a member is read only as far as it is kept."""
    with zipfile.ZipFile(raw) as z:
        for info in z.infolist()[:MAX_MEMBERS]:
            mode = info.external_attr >> 16
            if info.is_dir() or (stat.S_IFMT(mode) and not stat.S_ISREG(mode)):
                continue  # links, devices
            # zipfile reads no more than compress_size bytes of the member, nor can it
            # read more than the file holds, whatever the header claims
            packed = min(info.compress_size, budget.size)
            try:
                with z.open(info) as f:
                    text = _text(_Charged(f, budget), budget, info.filename,
                                 lambda: packed, to_the_end=False)
            except RuntimeError:  # an encrypted member: nothing to show
                continue
            if (found := _found(info.filename, text, budget)) is not None:
                yield found


class _BoundedHeader(tarfile.TarInfo):
    """tarfile reads a pax or GNU long-name header into memory whole, at the size its
    block claims."""

    def _proc_member(self, tarfile):
        if self.type in _LONG_HEADERS and self.size > MAX_HEADER_BYTES:
            raise _Refused(f"a member's header claims {self.size:,} bytes")
        return super()._proc_member(tarfile)


def _tar_members(raw, budget: _Budget) -> Iterator[TextMember]:
    raw.seek(0)
    head = raw.read(8)
    raw.seek(0)
    counted = Counted(raw)
    stream = _Charged(decompressed(counted, head), budget)
    with tarfile.open(fileobj=stream, mode="r|", bufsize=_CHUNK,
                      tarinfo=_BoundedHeader) as tf:
        for i, member in enumerate(tf):
            tf.members.clear()  # tarfile keeps every header it read; none is needed
            if i >= MAX_MEMBERS:
                return
            if not member.isreg():
                continue
            f = tf.extractfile(member)
            # a stream has no member sizes: what is read from disk while the member
            # streams is its compressed size (plus what was read ahead before it)
            start = counted.consumed - READ_AHEAD
            text = _text(f, budget, member.name, lambda: counted.consumed - start,
                         to_the_end=True)
            if (found := _found(member.name, text, budget)) is not None:
                yield found
