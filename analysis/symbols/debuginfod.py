"""A debuginfod client: the symbol files of a build-id nobody uploaded, asked of the
servers in DEBUGINFOD_URLS (the variable gdb, perf and libdebuginfod read: URLs separated
by spaces; unset or empty, nothing is asked and nothing downloads).

For a build-id the symbolizer needs, each server is asked in turn for
`/buildid/<hex>/debuginfo` (a file with the symbol table) or `/buildid/<hex>/executable`
(the binary that ran, for its segments and PLT); the first answer that passes the checks
is kept. An answer is hostile until checked: http and https only (redirects too), a
connect/read timeout (DEBUGINFOD_TIMEOUT, seconds) and a time limit for the whole
transfer, a size cap (DEBUGINFOD_MAXSIZE, bytes; a larger Content-Length is refused
before reading, a body is cut as it passes the cap), then the file must be ELF and its
GNU build-id note the one asked for, or it is dropped with a note.

What was fetched is kept under `<cache>/debuginfod-client/<hex[:2]>/<hex>/<kind>` with a
`<kind>.json` beside it (the server, size and SHA-256, which keys the symbol index cache
so the file is not hashed again); a miss is remembered for MISS_TTL_S (per set of
servers) so a capture of many missing libraries does not ask again at every analysis.
I/O only: no Django here; the worker builds a Client from its settings.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from .elf import ElfUnreadable, is_elf, read_info

KINDS = ("debuginfo", "executable")
TIMEOUT_S = 5.0  # connect and each read (libdebuginfod's default is 90 s: too long here)
MAX_TIME_S = 120.0  # one transfer, whole
MAX_BYTES = 1 << 30  # 1 GiB: a big library's debug file is a few hundred MB
MISS_TTL_S = 600  # libdebuginfod's cache_miss_s default
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
    notes: list[str] = field(default_factory=list)
    requests: int = 0  # HTTP requests made by this client (cache hits make none)

    def __post_init__(self) -> None:
        self.cache = Path(self.cache) / "debuginfod-client"
        self._opener = urllib.request.build_opener(_HttpOnlyRedirects())
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
                                ("DEBUGINFOD_MAXTIME", "max_time", float)):
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
            return hit
        miss = folder / f"{kind}.missing-{self._servers_key}"
        try:
            if time.time() - miss.stat().st_mtime < self.miss_ttl:
                return None
        except FileNotFoundError:
            pass
        folder.mkdir(parents=True, exist_ok=True)
        for server in self.urls:
            if server in self.down:
                continue
            url = f"{server}/buildid/{build_id}/{kind}"
            try:
                got = self._download(url, server, folder, build_id, kind)
            except _Refused as e:
                self.notes.append(f"debuginfod {server}: {build_id}/{kind}: {e}; not used")
                continue
            if got is None:
                continue
            path, digest, size = got
            meta = {"server": server, "url": url, "sha256": digest, "size": size,
                    "fetched_at": time.time()}
            _write_atomic(folder / f"{kind}.json", json.dumps(meta).encode(), folder)
            return Fetched(str(path), kind, server, url, digest)
        miss.touch()
        return None

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
        self.requests += 1
        req = urllib.request.Request(url, headers={"User-Agent": "perfweb-debuginfod/1"})
        start = time.monotonic()
        try:
            resp = self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            e.close()
            if e.code not in (404, 410):
                self.notes.append(f"debuginfod {url}: HTTP {e.code}")
            return None
        except http.client.HTTPException as e:  # a garbled answer: no HTTP server
            self.down.add(server)
            self.notes.append(f"debuginfod {server}: not an HTTP answer "
                              f"({type(e).__name__}); not asked again this time")
            return None
        except (urllib.error.URLError, OSError, ValueError) as e:
            self.down.add(server)
            self.notes.append(f"debuginfod {server}: not reachable "
                              f"({getattr(e, 'reason', e)}); not asked again this time")
            return None
        with resp:
            length = resp.headers.get("Content-Length")
            if length and length.strip().isdigit() and int(length) > self.max_bytes:
                raise _Refused(f"{int(length)} bytes, over the {self.max_bytes} byte cap")
            fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", dir=folder)
            try:
                digest, size = hashlib.sha256(), 0
                with os.fdopen(fd, "wb") as out:
                    while True:
                        try:
                            chunk = resp.read(_CHUNK)
                        except (OSError, ValueError, http.client.HTTPException) as e:
                            raise _Refused(f"transfer broke off "
                                           f"({type(e).__name__})") from e
                        if not chunk:
                            break
                        if size == 0 and not is_elf(chunk):
                            raise _Refused("not an ELF file")
                        size += len(chunk)
                        if size > self.max_bytes:
                            raise _Refused(f"over the {self.max_bytes} byte cap")
                        if time.monotonic() - start > self.max_time:
                            raise _Refused(f"took longer than {self.max_time:g} s")
                        digest.update(chunk)
                        out.write(chunk)
                if size == 0:
                    raise _Refused("empty answer")
                if length and length.strip().isdigit() and size != int(length):
                    raise _Refused(f"cut short ({size} of {int(length)} bytes)")
                try:
                    info = read_info(tmp, url)
                except ElfUnreadable as e:
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
