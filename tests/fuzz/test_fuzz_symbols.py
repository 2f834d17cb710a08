"""The readers of symbol inputs on mutated real files: ELF binaries and debug files,
kallsyms, /proc/PID/maps, perf-PID.map, and archives of them."""
import io
import tarfile
import zipfile

from hypothesis import given

from .mutate import FIXTURES, FUZZ, SPINPOOL, check, kallsyms_seed, mutated, seed
from .targets import TARGETS

BIN = FIXTURES / "perfdata" / "bin"
ELVES = [seed(BIN / n) for n in ("libplugin.so", "libplugin.stripped.so", "pw-dlopen.debug")]
MAPS = [seed(SPINPOOL / "1.0.0-idle.maps")]
PERF_MAP = [seed(FIXTURES / "perfdata" / "jit.perf-map.txt")]


def _archives() -> list[bytes]:
    """Small zip and tar.gz bundles holding an ELF, kallsyms and maps, as users send."""
    members = {"lib/libplugin.so": ELVES[0], "kallsyms": kallsyms_seed()[:4096],
               "maps": MAPS[0][:2048]}
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    t = io.BytesIO()
    with tarfile.open(fileobj=t, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return [z.getvalue(), t.getvalue()]


ARCHIVES = _archives()


@FUZZ
@given(mutated(ELVES))
def test_elf(data):
    check("elf", TARGETS["elf"], data)


@FUZZ
@given(mutated([kallsyms_seed()]))
def test_kallsyms(data):
    check("kallsyms", TARGETS["kallsyms"], data)


@FUZZ
@given(mutated(MAPS))
def test_procmaps(data):
    check("procmaps", TARGETS["procmaps"], data)


@FUZZ
@given(mutated(PERF_MAP))
def test_perfmap(data):
    check("perfmap", TARGETS["perfmap"], data)


@FUZZ
@given(mutated(ARCHIVES))
def test_archive(data):
    check("archive", TARGETS["archive"], data)
