"""Symbol inputs in the forms users bring them, on captures recorded for these tests
(tests/fixtures/perfdata/record.sh): full, stripped and split binaries, a build-id
debug tree, JIT maps, a System.map under KASLR, and hostile archives."""
import io
import os
import shutil
import tarfile
import zipfile

import pytest

from analysis.export.folded import FoldOptions, fold
from analysis.importers import load
from analysis.symbols import symbolize
from analysis.symbols.demangle import demangle
from analysis.symbols.inputs import BundleError, collect
from conftest import FIXTURES, SPINPOOL

HERE = FIXTURES / "perfdata"
BIN = HERE / "bin"


def _names(profile):
    return {f.name for f in profile.functions if f.resolved}


def _folded(profile):
    return fold(profile, FoldOptions(convention="inferno", weight="samples"))


def test_full_binaries_give_perfs_names():
    p = load(HERE / "dlopen.perf.data")
    cov = symbolize(p, [BIN / "pw-dlopen", BIN / "libplugin.so"])
    truth = load(HERE / "dlopen.script.txt")
    ours, theirs = _folded(p), _folded(truth)
    # libc was not given: perf named its frames from the machine, we keep them unnamed
    strip_libc = lambda d: {";".join(x for x in k.split(";") if "libc" not in x
                                     and not x.startswith("__libc")): v
                            for k, v in d.items()}
    assert strip_libc(ours) == strip_libc(theirs)
    assert {"main_work", "plugin_work"} <= _names(p)
    by = {c["dso"]: c for c in cov}
    assert by["/tmp/pw-dlopen"]["status"] == "resolved"
    assert by["/usr/lib/x86_64-linux-gnu/libc.so.6"]["status"] == "missing"


def test_stripped_binary_names_only_exported_functions():
    p = load(HERE / "dlopen.perf.data")
    cov = {c["dso"]: c for c in symbolize(p, [BIN / "pw-dlopen.stripped",
                                              BIN / "libplugin.stripped.so"])}
    assert "main_work" not in _names(p)  # static: only in the .symtab strip removed
    assert "plugin_work" in _names(p)  # exported: in .dynsym
    assert cov["/tmp/pw-dlopen"]["status"] == "stripped"
    assert "debug file" in cov["/tmp/pw-dlopen"]["advice"]


def test_stripped_binary_plus_debug_file():
    p = load(HERE / "dlopen.perf.data")
    cov = {c["dso"]: c for c in symbolize(p, [BIN / "pw-dlopen.stripped",
                                              BIN / "pw-dlopen.debug"])}
    assert "main_work" in _names(p)
    assert cov["/tmp/pw-dlopen"]["status"] == "resolved"
    assert cov["/tmp/pw-dlopen"]["source"] == "pw-dlopen.debug"


def test_build_id_debug_tree(tmp_path):
    bid = "f7142a817a82108888864f43a07f0a3580870906"
    tree = tmp_path / "usr/lib/debug/.build-id" / bid[:2]
    tree.mkdir(parents=True)
    shutil.copy(BIN / "pw-dlopen.debug", tree / f"{bid[2:]}.debug")
    p = load(HERE / "dlopen.perf.data")
    symbolize(p, [tmp_path / "usr"])
    assert "main_work" in _names(p)


def test_jit_perf_map():
    p = load(HERE / "jit.perf.data")
    cov = {c["dso"]: c for c in symbolize(p, [HERE / "jit.perf-map.txt"])}
    assert {"LJitted;.hotLoop(I)V", "Interpreter stub with spaces"} & _names(p)
    jit = [c for c in cov.values() if c["kind"] == "jit"]
    assert jit and jit[0]["status"] == "resolved"
    truth = load(HERE / "jit.script.txt")
    jit_truth = {k for k in _folded(truth) if "LJitted" in k or "Interpreter" in k}
    jit_ours = {k for k in _folded(p) if "LJitted" in k or "Interpreter" in k}
    assert {k.split(";")[-1] for k in jit_ours} == {k.split(";")[-1] for k in jit_truth}


def test_system_map_under_kaslr(tmp_path):
    """A System.map holds link-time addresses; the capture's kernel map says where _text
    really was. Shift kallsyms by 16 MiB to get such a map, and expect the same names."""
    data = zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip").read("kallsyms")
    out = []
    for line in data.decode().splitlines():
        addr, rest = line.split(" ", 1)
        out.append(f"{int(addr, 16) - 0x1000000:016x} {rest}")
    system_map = tmp_path / "System.map-6.18"
    system_map.write_text("\n".join(out) + "\n")
    a = load(SPINPOOL / "1.0.0-idle.perf.data")
    symbolize(a, [system_map])
    b = load(SPINPOOL / "1.0.0-idle.perf.data")
    symbolize(b, [SPINPOOL / "kernel-symbols.zip"])
    assert _folded(a) == _folded(b)
    assert "do_syscall_64" in _names(a)


def test_cache_is_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFWEB_CACHE_DIR", str(tmp_path))
    p = load(HERE / "dlopen.perf.data")
    symbolize(p, [BIN / "pw-dlopen"])
    files = list((tmp_path / "symbols").glob("*.idx"))
    assert len(files) == 1
    before = files[0].stat().st_mtime_ns
    q = load(HERE / "dlopen.perf.data")
    symbolize(q, [BIN / "pw-dlopen"])
    assert files[0].stat().st_mtime_ns == before
    assert _names(p) == _names(q)


def test_demangling_cpp_and_rust():
    assert demangle("_ZN6qualla10ThreadPool4loopEv") == "qualla::ThreadPool::loop()"
    assert demangle("_ZN3std2rt19lang_start_internal17h540c897fe52ba9c5E") == \
        "std::rt::lang_start_internal"
    assert demangle("_RNvCskwGfYPst2Cb_3foo16example_function") == "foo::example_function"
    assert demangle("pthread_mutex_lock@@GLIBC_2.2.5") == "pthread_mutex_lock@@GLIBC_2.2.5"
    assert demangle("_ZN6qualla10ThreadPool4loopEv@plt") == "qualla::ThreadPool::loop()@plt"
    assert demangle("_Znot a symbol") == "_Znot a symbol"


# ---- hostile archives --------------------------------------------------------------------
def _zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_traversal_names_stay_inside(tmp_path):
    kallsyms = zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip").read("kallsyms")
    bad = tmp_path / "bad.zip"
    _zip(bad, {"../../escape/kallsyms": kallsyms, "/etc/abs.debug": b"x" * 10})
    work = tmp_path / "work"
    work.mkdir()
    got = collect([bad], work)
    assert [f.kind for f in got.files] == ["kallsyms"]
    assert not (tmp_path / "escape").exists()
    assert all(os.path.dirname(f.path) == str(work) for f in got.files)


def test_links_and_devices_are_skipped(tmp_path):
    tar = tmp_path / "links.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        for name, kind in (("sym", tarfile.SYMTYPE), ("hard", tarfile.LNKTYPE),
                           ("dev", tarfile.CHRTYPE)):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "/etc/passwd"
            t.addfile(info)
    work = tmp_path / "work"
    work.mkdir()
    got = collect([tar], work)
    assert got.files == []
    assert any("special file" in n for n in got.notes)
    assert os.listdir(work) == []


def test_archive_bomb_is_refused(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.debug", b"\0" * (300 << 20))
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(BundleError, match="expands more than"):
        collect([bomb], work)


def test_nested_archives_have_a_depth_limit(tmp_path):
    kallsyms = zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip").read("kallsyms")
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("kallsyms", kallsyms)
    level = inner.getvalue()
    for _ in range(3):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("nested.zip", level)
        level = buf.getvalue()
    deep = tmp_path / "deep.zip"
    deep.write_bytes(level)
    work = tmp_path / "work"
    work.mkdir()
    got = collect([deep], work)
    assert got.files == []
    assert any("nested deeper" in n for n in got.notes)


def test_one_member_is_taken_out_alone(tmp_path):
    """debuginfod asks for one member: only it (and the archive holding it) is written."""
    kallsyms = zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip").read("kallsyms")
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as t:
        for name in ("a/libfoo.debug", "b/libfoo.debug", "kallsyms"):
            data = (BIN / "libplugin.so").read_bytes() if name != "kallsyms" else kallsyms
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    bundle = tmp_path / "b:1.zip"  # a colon in the name, as uploads may have
    _zip(bundle, {"pw-dlopen": (BIN / "pw-dlopen").read_bytes(), "inner.tar.gz":
                  inner.getvalue()})
    work = tmp_path / "work"
    work.mkdir()
    got = collect([bundle], work, only="b:1.zip:inner.tar.gz:b/libfoo.debug")
    assert [f.origin for f in got.files] == ["b:1.zip:inner.tar.gz:b/libfoo.debug"]
    assert sorted(os.listdir(work)) == ["00001-inner.tar.gz", "00002-libfoo.debug"]
