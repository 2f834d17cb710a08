"""Another team's copy of the spinpool 1.0.0 symbol bundle, made the way the security
probe of issue 12 made it: libqualla.so.debug with every `ThreadPool` renamed
`HackedPool` in place, so its build-id, size and layout are those of the real file and
only the names in its symbol table differ."""
import zipfile

from conftest import SPINPOOL

REAL = SPINPOOL / "symbols-1.0.0.zip"


def renamed_bundle(folder):
    """symbols-1.0.0.zip (same name as the real one) under `folder`."""
    out = folder / "symbols-1.0.0.zip"
    with zipfile.ZipFile(REAL) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "libqualla.so.debug":
                assert data.count(b"ThreadPool") > 0
                data = data.replace(b"ThreadPool", b"HackedPool")
                assert len(data) == info.file_size
            dst.writestr(info.filename, data)
    return out
