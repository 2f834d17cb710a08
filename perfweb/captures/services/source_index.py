"""A worker reads each source archive once, when it is uploaded (the task
index_source_archive, queued when the upload commits; the sweep sends it again should the
message be lost), or at the latest when a capture of its build is analysed: its text files go into SourceMember rows (zlib-compressed), or the archive is
refused with the sentence analysis.source_archive gives (kept in SymbolFile.refused).
Either way it is marked indexed and never read again; hot-lines requests read only
these rows (services/sources.py), so no request decompresses an upload.

The archive is read into a file of the analysis's folder first, outside any
transaction: rows that reference the archive's row, inserted while it is read, would
hold a lock on it that makes a deletion of the build wait for the whole read."""
from __future__ import annotations

import logging
import struct
import tempfile
import zlib

from django.db import transaction

from analysis.source_archive import SourceArchiveRefused, text_members
from analysis.sources import member_basename

from ..local_files import local_copy
from ..models import SourceMember, SymbolFile

log = logging.getLogger(__name__)

#: rows per insert, and their compressed bytes at most (a batch is held in memory)
BATCH_ROWS = 500
BATCH_BYTES = 16 << 20
_FRAME = struct.Struct("<II")  # the name's bytes, the compressed text's bytes


def index_uploaded(pk: int) -> None:
    """The task's work: one archive, in a folder of its own, within the analysis's time
    limit (the reading has its own budget, analysis.source_archive; this is behind it)."""
    from django.conf import settings
    from django.db import connection

    from .. import work_dirs
    from ..worker_limits import AnalysisTimeout, deadline, duration
    try:
        with work_dirs.work_dir() as work, deadline(settings.PERFWEB_ANALYSIS_TIME_LIMIT_S):
            index_archive(pk, work)
    except AnalysisTimeout:
        connection.close()  # (a query the alarm interrupted leaves it busy)
        limit = duration(settings.PERFWEB_ANALYSIS_TIME_LIMIT_S)
        SymbolFile.objects.filter(pk=pk, indexed=False).update(
            indexed=True, refused=f"Reading this archive took longer than the {limit} "
                                  f"limit (PERFWEB_ANALYSIS_TIME_LIMIT_S).")


def index_sources(build, work: str) -> None:
    """Read the build's source archives not read yet (`work`: the analysis's folder)."""
    waiting = SymbolFile.objects.filter(build=build, kind=SymbolFile.SOURCE, indexed=False)
    for pk in waiting.order_by("pk").values_list("pk", flat=True):
        index_archive(pk, work)


def index_archive(pk: int, work: str) -> None:
    """Read one source archive and record what it holds, unless another worker did
    meanwhile (both read it then; one records it)."""
    sf = SymbolFile.objects.filter(pk=pk, indexed=False).first()
    if sf is None:
        return
    try:
        local = local_copy(sf.file, work, sf.original_name, sf.sha256)
    except OSError as e:  # the stored file cannot be had now: the next analysis tries
        log.warning("source archive %s not indexed: %s", pk, e)
        return
    refused = ""
    with tempfile.TemporaryFile(dir=work) as spool:
        try:
            for m in text_members(local, sf.original_name):
                name, text = m.name.encode(), zlib.compress(m.text, 6)
                spool.write(_FRAME.pack(len(name), len(text)) + name + text)
        except SourceArchiveRefused as e:
            refused = str(e)[:2000]
        spool.seek(0)
        with transaction.atomic():
            if not SymbolFile.objects.select_for_update().filter(pk=pk, indexed=False) \
                    .exists():  # recorded by another worker, or deleted
                return
            if not refused:
                _insert(sf, spool)
            SymbolFile.objects.filter(pk=pk).update(indexed=True, refused=refused)


def _frames(spool):
    while head := spool.read(_FRAME.size):
        n_name, n_text = _FRAME.unpack(head)
        yield spool.read(n_name).decode(), spool.read(n_text)


def _insert(sf: SymbolFile, spool) -> None:
    batch, size = [], 0
    for name, text in _frames(spool):
        batch.append(SourceMember(archive=sf, name=name, basename=member_basename(name),
                                  text=text))
        size += len(text)
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            SourceMember.objects.bulk_create(batch)
            batch, size = [], 0
    SourceMember.objects.bulk_create(batch)
