"""Which files the static finders give: Plotly's bundle from its package and nothing
else of it, its basic bundle from npm (package.json: the service page's), and nothing
(not an error) for a file that is not there, as `make run`'s server asks them (DEBUG:
runserver serves static files through the finders)."""
from pathlib import Path

import plotly
from django.contrib.staticfiles import finders

from perfweb.static_storage import PlotlyFinder

BUNDLE = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
ROOT = Path(__file__).resolve().parents[2]
BASIC = ROOT / "node_modules" / "plotly.js-basic-dist-min" / "plotly-basic.min.js"


def test_plotly_bundle_and_nothing_else_of_its_package():
    assert Path(finders.find("vendor/plotly/plotly.min.js")) == BUNDLE
    assert [Path(p) for p in finders.find("vendor/plotly/plotly.min.js", find_all=True)] \
        == [BUNDLE]
    for missing in ("vendor/plotly/widgetbundle.js", "vendor/plotly/datasets/iris.csv.gz",
                    "js/no-such-file.js"):
        assert finders.find(missing) is None
        assert finders.find(missing, find_all=True) == []
    listed = {(path, getattr(storage, "prefix", None)) for finder in finders.get_finders()
              for path, storage in finder.list(None) if "plotly" in str(storage.location)}
    assert listed == {("plotly.min.js", "vendor/plotly"),
                      ("plotly-basic.min.js", "vendor/plotly")}


def test_the_basic_bundle_is_plotly_js_of_the_same_version():
    """The service page's bundle is the one package-lock.json pins (make runs npm ci),
    a quarter of the whole one, of the plotly.js version the plotly package bundles."""
    assert Path(finders.find("vendor/plotly/plotly-basic.min.js")) == BASIC
    head, basic_head = BUNDLE.read_bytes()[:100], BASIC.read_bytes()[:100]
    version = head.split(b"plotly.js v", 1)[1].split(b"\n", 1)[0]
    assert basic_head.split(b"plotly.js (basic - minified) v", 1)[1].startswith(version)
    assert BASIC.stat().st_size < 0.3 * BUNDLE.stat().st_size
    assert PlotlyFinder().check() == []
