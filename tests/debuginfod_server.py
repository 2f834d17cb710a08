"""Debian's debuginfod (elfutils 0.188) serving a folder of the spinpool case's ELF files
on loopback, for the debuginfod client's tests: what `perf archive` and the build's
symbol bundle hold (libc.so.6 and its debug file, the stripped libqualla.so, api.debug,
libqualla.so.debug), so a capture uploaded with no symbols gets every user frame perf
names from it; and the DWARF fixture's pool binaries with their debug files and its
libstdc++ (tests/fixtures/dwarf). Its /metrics counts the requests it answered."""
import bz2
import io
import os
import re
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

from conftest import FIXTURES, SPINPOOL

LIBC = "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
QUALLA = "abc4bdbc2be6358ce43990b764daff42500785f3"  # 1.0.0's libqualla.so
DWARF = FIXTURES / "dwarf"
DWARF_FILES = [DWARF / "cpp-pool" / n for n in
               ("pool", "pool.debug", "libwork.so", "libwork.so.debug")] + \
    [DWARF / "system-libs" / "libstdc++.so.6.0.30"]
FILES = 10  # the ELF files served


def served_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    with zipfile.ZipFile(SPINPOOL / "symbols-1.0.0.zip") as z:
        for name in z.namelist():
            (folder / name).write_bytes(z.read(name))
    data = bz2.decompress((SPINPOOL / "1.0.0-busy.perf.data.tar.bz2").read_bytes())
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        for m in t:
            if m.isreg() and m.name.rsplit("/", 1)[-1] in ("elf", "debug"):
                dso, bid, kind = m.name.rsplit("/", 3)[-3:]
                (folder / f"{dso}-{bid[:8]}.{kind}").write_bytes(t.extractfile(m).read())
    for f in DWARF_FILES:
        shutil.copyfile(f, folder / f.name)
    assert len(list(folder.iterdir())) == FILES, sorted(folder.iterdir())
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def requests(url: str) -> tuple[int, int]:
    """(debuginfo, executable) requests the server has answered so far."""
    m = metrics(url)
    return (int(m.get('http_requests_total{type="debuginfo"}', 0)),
            int(m.get('http_requests_total{type="executable"}', 0)))


class Server:
    def __init__(self, tmp: Path):
        if shutil.which("debuginfod") is None:
            raise AssertionError("Debian's debuginfod is not installed (apt install debuginfod)")
        folder = served_folder(tmp / "served")
        for attempt in range(3):  # a free port may be taken by another test meanwhile
            if self._start(tmp, folder, attempt):
                return
        raise AssertionError(f"debuginfod did not start: "
                             f"{(tmp / 'debuginfod-2.log').read_text()[-2000:]}")

    def _start(self, tmp: Path, folder: Path, attempt: int) -> bool:
        t0 = time.monotonic()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
        self.log = open(tmp / f"debuginfod-{attempt}.log", "wb")
        # no upstream servers (DEBUGINFOD_URLS unset: it would federate), no rescans
        self.proc = subprocess.Popen(
            ["debuginfod", "-F", str(folder), "-p", str(self.port), "-d",
             str(tmp / f"debuginfod-{attempt}.sqlite"), "-t", "0", "-g", "0"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        while True:
            try:
                m = metrics(self.url)
                if m.get('scanned_files_total{source="file"}') == FILES and \
                        m.get('thread_work_pending{role="scan"}') == 0 and \
                        m.get('thread_busy{role="scan"}', 0) == 0:
                    self.scanned_s = time.monotonic() - t0
                    return True
            except OSError:
                pass
            if self.proc.poll() is not None:
                self.stop()
                return False
            if time.monotonic() > t0 + 30:
                self.stop()
                raise AssertionError(f"debuginfod did not finish its scan in 30 s: "
                                     f"{(tmp / f'debuginfod-{attempt}.log').read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
