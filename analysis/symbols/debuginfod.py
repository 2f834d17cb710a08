"""A debuginfod client: the symbol files of a build-id nobody uploaded, asked of the
servers in DEBUGINFOD_URLS (the variable gdb, perf and libdebuginfod read: URLs separated
by spaces; unset or empty, nothing is asked and nothing downloads).

For a build-id the symbolizer needs, each server is asked in turn for
`/buildid/<hex>/debuginfo` (a file with the symbol table) or `/buildid/<hex>/executable`
(the binary that ran, for its segments and PLT); the first answer that passes the checks
is kept. An answer is hostile until checked: http and https only (redirects too), a
connect/read timeout (DEBUGINFOD_TIMEOUT, seconds) and a time limit for the whole
transfer (DEBUGINFOD_MAXTIME: a timer shuts the socket at the deadline, however slowly
the server drips, and that server is not asked again by this client), a size cap (DEBUGINFOD_MAXSIZE, bytes; a larger Content-Length is refused
before reading, a body is cut as it passes the cap), then the file must be ELF and its
GNU build-id note the one asked for, or it is dropped with a note.

What was fetched is kept under `<cache>/debuginfod-client/<hex[:2]>/<hex>/<kind>` with a
`<kind>.json` beside it (the server, size and SHA-256, which keys the symbol index cache
so the file is not hashed again); a miss is remembered for MISS_TTL_S (per set of
servers) so a capture of many missing libraries does not ask again at every analysis.
The cache is bounded: past PERFWEB_DEBUGINFOD_CACHE_BYTES (10 GiB) the least recently
used files go (a hit counts as a use; what this client fetched or found stays), and one
client (one analysis) downloads at most PERFWEB_DEBUGINFOD_ANALYSIS_BYTES (4 GiB) in all,
then asks nothing more, with a note.
I/O only: no Django here; the worker builds a Client from its settings.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..errors import AnalysisError
from .elf import is_elf, read_info

KINDS = ("debuginfo", "executable")
TIMEOUT_S = 5.0  # connect and each read (libdebuginfod's default is 90 s: too long here)
MAX_TIME_S = 120.0  # one transfer, whole
MAX_BYTES = 1 << 30  # 1 GiB: a big library's debug file is a few hundred MB
MISS_TTL_S = 600  # libdebuginfod's cache_miss_s default
CACHE_BYTES = 10 << 30  # the client cache folder in all (PERFWEB_DEBUGINFOD_CACHE_BYTES)
ANALYSIS_BYTES = 4 << 30  # downloaded by one client (PERFWEB_DEBUGINFOD_ANALYSIS_BYTES)
_CHUNK = 1 << 20
_HEX = re.compile(r"[0-9a-f]{16,128}")


@dataclass
class Fetched:
    path: str
    kind: str  # debuginfo | executable
    server: str
    url: str
    sha256: str


class _Refused(Exception):
    """An answer we do not use; the message says why (it becomes a note)."""
    down = False  # the server is not asked again by this client


class _TooSlow(_Refused):
    down = True


class _OverBudget(_Refused):
    """The analysis's download total would pass its cap: not the server's fault."""


class _Deadline:
    """Shuts every socket of one transfer (redirects make more) when `seconds` have
    passed: a read that blocks on a server dripping a byte at a time ends then."""

    def __init__(self, seconds: float) -> None:
        self.cut = threading.Event()
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._shut)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.cut.is_set():
                _shutdown(sock)

    def _shut(self) -> None:
        with self._lock:
            self.cut.set()
            for sock in self._socks:
                _shutdown(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _watched(base, deadline: _Deadline):
    """`base` (HTTPConnection or HTTPSConnection) whose TCP socket `deadline` can shut,
    registered before the TLS handshake so a dripped handshake is cut too."""
    class Watched(base):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            connect = self._create_connection

            def create(*a, **k):
                sock = connect(*a, **k)
                deadline.add(sock)
                return sock
            self._create_connection = create
    return Watched


class _HttpHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._conn = _watched(http.client.HTTPConnection, deadline)

    def http_open(self, req):
        return self.do_open(self._conn, req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._conn = _watched(http.client.HTTPSConnection, deadline)

    def https_open(self, req):
        return self.do_open(self._conn, req, context=self._context)


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    max_redirections = 4

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not newurl.lower().startswith(("http://", "https://")):
            raise urllib.error.HTTPError(newurl, code, "redirect to a non-HTTP URL refused",
                                         headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass
class Client:
    urls: list[str]
    cache: Path  # the worker's cache folder (PERFWEB_CACHE_DIR)
    timeout: float = TIMEOUT_S
    max_bytes: int = MAX_BYTES
    max_time: float = MAX_TIME_S
    miss_ttl: float = MISS_TTL_S
    cache_bytes: int = CACHE_BYTES
    analysis_bytes: int = ANALYSIS_BYTES
    notes: list[str] = field(default_factory=list)
    requests: int = 0  # HTTP requests made by this client (cache hits make none)
    downloaded: int = 0  # bytes received by this client, kept or not

    def __post_init__(self) -> None:
        self.cache = Path(self.cache) / "debuginfod-client"
        #: the files this client returned: a trim leaves them (the analysis reads them)
        self._in_use: set[Path] = set()
        self._over_budget = False
        self._servers_key = hashlib.sha256(" ".join(self.urls).encode()).hexdigest()[:16]
        #: servers that did not answer (refused, timed out): not asked again by this
        #: client, so a dead server costs one timeout per analysis, not one per file
        self.down: set[str] = set()

    @classmethod
    def from_env(cls, environ: Mapping[str, str], cache_dir: str | os.PathLike,
                 **kw) -> "Client | None":
        """None when DEBUGINFOD_URLS is unset or names no http(s) server."""
        urls = parse_urls(environ.get("DEBUGINFOD_URLS", ""))
        if not urls:
            return None
        for name, key, conv in (("DEBUGINFOD_TIMEOUT", "timeout", float),
                                ("DEBUGINFOD_MAXSIZE", "max_bytes", int),
                                ("DEBUGINFOD_MAXTIME", "max_time", float),
                                ("PERFWEB_DEBUGINFOD_CACHE_BYTES", "cache_bytes", int),
                                ("PERFWEB_DEBUGINFOD_ANALYSIS_BYTES", "analysis_bytes",
                                 int)):
            value = (environ.get(name) or "").strip()
            if value:
                try:
                    if conv(value) > 0:
                        kw.setdefault(key, conv(value))
                except ValueError:
                    pass
        return cls(urls, Path(cache_dir), **kw)

    # ---- the one call the symbolizer makes -------------------------------------------
    def fetch(self, build_id: str, kind: str) -> Fetched | None:
        """The file of `kind` for `build_id`, from the cache or the first server that
        has a good one; None when none has (remembered for miss_ttl)."""
        build_id = build_id.lower()
        if kind not in KINDS or not _HEX.fullmatch(build_id) or len(build_id) % 2:
            return None
        folder = self.cache / build_id[:2] / build_id
        hit = self._cached(folder, kind)
        if hit is not None:
            self._in_use.add(Path(hit.path))
            try:
                os.utime(hit.path)  # recently used (trim goes by modification time)
            except OSError:
                pass
            return hit
        miss = folder / f"{kind}.missing-{self._servers_key}"
        try:
            if time.time() - miss.stat().st_mtime < self.miss_ttl:
                return None
        except FileNotFoundError:
            pass
        if self._over_budget:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        unanswered = False  # a server down or too slow: not a miss to remember
        for server in self.urls:
            if server in self.down:
                unanswered = True
                continue
            url = f"{server}/buildid/{build_id}/{kind}"
            try:
                got = self._download(url, server, folder, build_id, kind)
            except _OverBudget as e:
                self._over_budget = True
                self.notes.append(
                    f"debuginfod {server}: {build_id}/{kind} not fetched ({e}): this "
                    f"analysis's downloads are capped at {self.analysis_bytes} bytes "
                    f"(PERFWEB_DEBUGINFOD_ANALYSIS_BYTES; {self.downloaded} downloaded); "
                    f"nothing more is asked this time")
                return None  # no miss: the servers may have it (the folder may stay)
            except _Refused as e:
                if e.down:
                    self.down.add(server)
                    unanswered = True
                    self.notes.append(f"debuginfod {server}: {build_id}/{kind}: {e}; "
                                      f"not used, not asked again this time")
                else:
                    self.notes.append(f"debuginfod {server}: {build_id}/{kind}: {e}; "
                                      f"not used")
                continue
            if got is None:
                unanswered |= server in self.down
                continue
            path, digest, size = got
            meta = {"server": server, "url": url, "sha256": digest, "size": size,
                    "fetched_at": time.time()}
            _write_atomic(folder / f"{kind}.json", json.dumps(meta).encode(), folder)
            self._in_use.add(path)
            self.trim()
            return Fetched(str(path), kind, server, url, digest)
        if not unanswered:
            miss.touch()
        else:
            try:
                folder.rmdir()  # (when empty) the next analysis asks again
            except OSError:
                pass
        return None

    def trim(self) -> int:
        """Remove the least recently used files until the cache fits cache_bytes (the
        files this client returned stay), and misses older than miss_ttl; how many
        files were removed. Another process's trim may run at the same time."""
        files, total = [], 0
        for folder in self.cache.glob("??/*"):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                f = folder / name
                try:
                    st = f.stat()
                except OSError:
                    continue
                if name in KINDS:
                    files.append((st.st_mtime, st.st_size, f))
                    total += st.st_size
                elif ".missing-" in name and time.time() - st.st_mtime > self.miss_ttl:
                    f.unlink(missing_ok=True)
        removed = 0
        for _, size, f in sorted(files, key=lambda x: x[0]):
            if total <= self.cache_bytes:
                break
            if f in self._in_use:
                continue
            f.with_name(f.name + ".json").unlink(missing_ok=True)
            f.unlink(missing_ok=True)
            total -= size
            removed += 1
            try:
                f.parent.rmdir()  # the build-id's folder, when nothing else is left
            except OSError:
                pass
        return removed

    def _cached(self, folder: Path, kind: str) -> Fetched | None:
        try:
            meta = json.loads((folder / f"{kind}.json").read_text())
            path = folder / kind
            if path.stat().st_size != meta["size"]:
                return None
            return Fetched(str(path), kind, meta["server"], meta["url"], meta["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _download(self, url: str, server: str, folder: Path, build_id: str, kind: str):
        """(path, sha256, size) of a checked file, None on a plain miss (404, a server
        that is down); _Refused for an answer that fails a check."""
        budget = min(self.max_bytes, self.analysis_bytes - self.downloaded)
        if budget <= 0:
            raise _OverBudget("the cap reached")
        self.requests += 1
        req = urllib.request.Request(url, headers={"User-Agent": "perfweb-debuginfod/1"})
        deadline = _Deadline(self.max_time)
        opener = urllib.request.build_opener(_HttpOnlyRedirects(), _HttpHandler(deadline),
                                             _HttpsHandler(deadline))
        try:
            return self._transfer(opener, req, deadline, budget, url, server, folder,
                                  build_id, kind)
        finally:
            deadline.cancel()

    def _transfer(self, opener, req, deadline: _Deadline, budget: int, url: str,
                  server: str, folder: Path, build_id: str, kind: str):
        too_slow = f"took longer than {self.max_time:g} s (DEBUGINFOD_MAXTIME)"
        try:
            resp = opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            e.close()
            if e.code not in (404, 410):
                self.notes.append(f"debuginfod {url}: HTTP {e.code}")
            return None
        except (urllib.error.URLError, OSError, ValueError,
                http.client.HTTPException) as e:
            if deadline.cut.is_set():  # the status line or headers dripped
                raise _TooSlow(too_slow) from None
            self.down.add(server)
            if isinstance(e, http.client.HTTPException):  # a garbled answer
                self.notes.append(f"debuginfod {server}: not an HTTP answer "
                                  f"({type(e).__name__}); not asked again this time")
            else:
                self.notes.append(f"debuginfod {server}: not reachable "
                                  f"({getattr(e, 'reason', e)}); not asked again this time")
            return None
        with resp:
            length = resp.headers.get("Content-Length")
            length = int(length) if length and length.strip().isdigit() else None
            if length is not None and length > self.max_bytes:
                raise _Refused(f"{length} bytes, over the {self.max_bytes} byte cap")
            if length is not None and length > budget:
                raise _OverBudget(f"{length} bytes")
            fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", dir=folder)
            try:
                digest, size = hashlib.sha256(), 0
                with os.fdopen(fd, "wb") as out:
                    while True:
                        try:
                            chunk = resp.read(_CHUNK)
                        except (OSError, ValueError, http.client.HTTPException) as e:
                            if deadline.cut.is_set():
                                raise _TooSlow(too_slow) from None
                            raise _Refused(f"transfer broke off "
                                           f"({type(e).__name__})") from e
                        if deadline.cut.is_set():  # (a shut socket reads as the end)
                            raise _TooSlow(too_slow)
                        if not chunk:
                            break
                        if size == 0 and not is_elf(chunk):
                            raise _Refused("not an ELF file")
                        size += len(chunk)
                        self.downloaded += len(chunk)
                        if size > self.max_bytes:
                            raise _Refused(f"over the {self.max_bytes} byte cap")
                        if size > budget:
                            raise _OverBudget(f"more than {budget} bytes")
                        digest.update(chunk)
                        out.write(chunk)
                if size == 0:
                    raise _Refused("empty answer")
                if length is not None and size != length:
                    raise _Refused(f"cut short ({size} of {length} bytes)")
                try:
                    info = read_info(tmp, url)
                except AnalysisError as e:  # damaged, or over its budget (budget.py)
                    raise _Refused(str(e)) from e
                if info.build_id != build_id:
                    raise _Refused(f"its build-id is {info.build_id or 'missing'}")
                if kind == "executable" and info.debug_only:
                    raise _Refused("a debug file where the binary was asked for")
                path = folder / kind
                os.replace(tmp, path)
                return path, digest.hexdigest(), size
            except BaseException:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                raise


def parse_urls(value: str) -> list[str]:
    """DEBUGINFOD_URLS as libdebuginfod reads it: URLs separated by whitespace; only
    http and https ones are used here (no file://), each once, without a trailing /."""
    out = []
    for u in value.split():
        u = u.rstrip("/")
        if u.lower().startswith(("http://", "https://")) and u not in out:
            out.append(u)
    return out


def _write_atomic(path: Path, data: bytes, folder: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".meta-", dir=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
