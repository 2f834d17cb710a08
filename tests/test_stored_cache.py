"""The symbol files a host keeps downloaded from the bucket (perfweb/captures/local_files.py,
PERFWEB_CACHE_DIR/stored): the least recently used go past PERFWEB_STORED_CACHE_BYTES,
the one just downloaded stays, and the parts of downloads whose worker died go."""
import os

from perfweb.captures.local_files import trim_cache


def _kept(root, digest: str, size: int, mtime: float):
    path = root / digest[:2] / digest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def test_least_recently_used_go_first_and_dead_parts_go(settings, tmp_path):
    settings.PERFWEB_CACHE_DIR = str(tmp_path)
    settings.PERFWEB_STORED_CACHE_BYTES = 250
    root = tmp_path / "stored"
    a, b, c, d = (_kept(root, ch * 64, 100, t) for ch, t in
                  (("a", 1000), ("b", 3000), ("c", 2000), ("d", 500)))
    dead = root / "ee" / f".{'e' * 64}.999999999.1"  # no such pid
    live = root / "ee" / f".{'f' * 64}.{os.getpid()}.1"  # this process: still writing
    for part in (dead, live):
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(b"x" * 1000)
    # d is the oldest but just downloaded (keep); a and then c are the least recent
    assert trim_cache(keep=d) == 2
    assert sorted(p.name[0] for p in root.glob("??/*") if not p.name.startswith(".")) == \
        ["b", "d"]
    assert not dead.exists() and live.exists()
    settings.PERFWEB_STORED_CACHE_BYTES = 1000
    assert trim_cache() == 0 and b.exists() and d.exists()
    assert not a.exists() and not c.exists()
