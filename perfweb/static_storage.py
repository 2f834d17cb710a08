"""Static files as deployed: `collectstatic` (the Dockerfile runs it) writes each file
under a name with its content's hash and a gzip and a brotli copy beside it, which
WhiteNoise sends to a browser that accepts them, cached for a year: the capture page's
4.8 MB Plotly bundle goes out as 1.1 MB of brotli, once.

The page's ES modules import one another by their hashed names too (Django rewrites the
imports), so none is fetched under a plain name, which a browser keeps for a minute only.

Without collectstatic (a checkout under gunicorn, the test suite) there is no manifest:
files keep their plain names and WhiteNoise serves them from the source folders
(WHITENOISE_USE_FINDERS), uncompressed, as before; the log says so once.
"""
from __future__ import annotations

import logging
from pathlib import Path

import brotli
from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

log = logging.getLogger(__name__)

PLOTLY = "vendor/plotly/plotly.min.js"
#: plotly.js's basic bundle (scatter, bar, pie: all the service page draws), 1.2 MB
#: where the whole bundle is 4.8: from npm (package.json, `make` runs `npm ci`)
PLOTLY_BASIC = "vendor/plotly/plotly-basic.min.js"
BASIC_PACKAGE = Path(settings.BASE_DIR) / "node_modules" / "plotly.js-basic-dist-min"


class StaticStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
    _said = False

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:  # no manifest entry: collectstatic was not run (since)
            if not StaticStorage._said:
                StaticStorage._said = True
                log.warning("static files are served uncompressed under their plain "
                            "names: %r is not in %s's manifest (run manage.py "
                            "collectstatic)", name, self.location)
            return name

    def create_compressor(self, **kwargs) -> Compressor:
        return _Compressor(**kwargs)


class _Compressor(Compressor):
    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        """Brotli's best (11) takes 15 to 30 s of a build on Plotly's bundle; the test
        suite, which collects the files for its server as deployed, asks for less."""
        return brotli.compress(data, quality=settings.PERFWEB_BROTLI_QUALITY)


class PlotlyFinder(BaseFinder):
    """The plotly package's bundle, the charts' only script (nothing from a CDN), and
    none of the rest of its package data: a 5 MB widget bundle, data sets and
    templates that no page asks for and collectstatic would copy and compress."""

    def __init__(self, *args, **kwargs):
        import plotly
        self.storage = FileSystemStorage(location=Path(plotly.__file__).parent /
                                         "package_data")
        self.storage.prefix = str(Path(PLOTLY).parent)
        self.basic = FileSystemStorage(location=BASIC_PACKAGE)
        self.basic.prefix = str(Path(PLOTLY_BASIC).parent)
        super().__init__(*args, **kwargs)

    def check(self, **kwargs):
        from django.core import checks
        if (BASIC_PACKAGE / Path(PLOTLY_BASIC).name).is_file():
            return []
        return [checks.Error(f"{PLOTLY_BASIC} is missing: run `npm ci` (make does)",
                             id="perfweb.E001")]

    def find(self, path, find_all=False, **kwargs):
        for name, storage in ((PLOTLY, self.storage), (PLOTLY_BASIC, self.basic)):
            if path == name:
                found = storage.path(Path(name).name)
                return [found] if find_all else found
        return []  # "none", as Django's own finders say it

    def list(self, ignore_patterns):
        yield Path(PLOTLY).name, self.storage
        if (BASIC_PACKAGE / Path(PLOTLY_BASIC).name).is_file():
            yield Path(PLOTLY_BASIC).name, self.basic
