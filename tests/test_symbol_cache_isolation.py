"""One symbol cache serves every team, so its entries must be keyed by the bytes they were
built from: a file that claims another build's build-id (and has its size) gets its own
index, and never decides the names someone else's capture shows (issue 12, hole 1)."""
import hashlib
import shutil
import subprocess

import pytest

from analysis.importers import load
from analysis.symbols import symbolize
from conftest import FIXTURES, SPINPOOL
from renamed_symbols import REAL, renamed_bundle

HERE = FIXTURES / "perfdata"
DLOPEN_BUILD_ID = "f7142a817a82108888864f43a07f0a3580870906"  # /tmp/pw-dlopen in the capture


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """One cache folder for both teams, as the workers share PERFWEB_CACHE_DIR."""
    monkeypatch.setenv("PERFWEB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "symbols"


def _names(profile):
    return {f.name for f in profile.functions if f.resolved}


def _spinpool(bundle):
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    symbolize(p, [SPINPOOL / "1.0.0-idle.perf.data.tar.bz2", bundle])
    return _names(p)


@pytest.mark.parametrize("first", ["team A", "team B"])
def test_a_renamed_copy_of_a_bundle_does_not_share_its_index(tmp_path, cache, first):
    """The probe: B's ELF with A's build-id and size showed A's names to B (and, the
    other way round, B's names to A). The perf archive of the capture is given too, so the
    merged PLT index is exercised as well."""
    real, renamed = REAL, renamed_bundle(tmp_path)
    order = [real, renamed] if first == "team A" else [renamed, real]
    seen = {bundle: _spinpool(bundle) for bundle in order}
    assert "qualla::ThreadPool::loop" in seen[real]
    assert not any("HackedPool" in n for n in seen[real])
    assert "qualla::HackedPool::loop" in seen[renamed]
    assert not any("ThreadPool" in n for n in seen[renamed])
    # both runs wrote into the one cache: isolation is by key, not by separate folders
    assert len(list(cache.glob("*.idx"))) >= 4


def _gcc(folder, source):
    folder.mkdir()
    (folder / "main.c").write_text(source)
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "main.c", "-ldl",
                    f"-Wl,--build-id=0x{DLOPEN_BUILD_ID}", "-o", "pw-dlopen"],
                   cwd=folder, check=True)
    return folder / "pw-dlopen"


def _dlopen(binary):
    p = load(HERE / "dlopen.perf.data")
    cov = {c["dso"]: c for c in symbolize(p, [binary])}
    assert cov["/tmp/pw-dlopen"]["status"] == "resolved"
    return _names(p)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_two_builds_forced_to_one_build_id_keep_their_own_names(tmp_path, cache):
    """The same program built twice with gcc, once with its hot function renamed, both
    linked with the build-id of the binary the capture ran: equal size, equal build-id,
    different .symtab. Each must name the capture's frames from its own table."""
    source = (HERE / "dlopen_main.c").read_text()
    a = _gcc(tmp_path / "a", source)
    b = _gcc(tmp_path / "b", source.replace("main_work", "evil_work"))
    assert a.stat().st_size == b.stat().st_size
    assert a.read_bytes() != b.read_bytes()
    for first, second in ((a, b), (b, a)):
        shutil.rmtree(cache, ignore_errors=True)
        names = {first: _dlopen(first)}
        names[second] = _dlopen(second)
        assert "main_work" in names[a] and "evil_work" not in names[a]
        assert "evil_work" in names[b] and "main_work" not in names[b]


def test_a_recorded_digest_keys_the_index_without_hashing_again(cache):
    """The server records each stored file's SHA-256 on upload and passes it in, so a
    400 MB library is not read twice per analysis; the entry is keyed by that digest."""
    from analysis.symbols.index_cache import cache_key
    binary = HERE / "bin" / "pw-dlopen"
    # not the file's own digest: an entry under it proves the file was not hashed again
    recorded = hashlib.sha256(b"what the server recorded on upload").hexdigest()
    assert recorded != hashlib.sha256(binary.read_bytes()).hexdigest()
    p = load(HERE / "dlopen.perf.data")
    symbolize(p, [binary], {str(binary): recorded})
    assert "main_work" in _names(p)
    assert [f.name for f in cache.glob("*.idx")] == [cache_key("elf", recorded) + ".idx"]
    # a build-id is no digest: cache keys refuse anything else
    with pytest.raises(ValueError, match="SHA-256"):
        cache_key("elf", DLOPEN_BUILD_ID)
