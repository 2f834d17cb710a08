"""Which files the static finders give: Plotly's bundle from its package and nothing
else of it, and nothing (not an error) for a file that is not there, as `make run`'s
server asks them (DEBUG: runserver serves static files through the finders)."""
from pathlib import Path

import plotly
from django.contrib.staticfiles import finders

BUNDLE = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


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
    assert listed == {("plotly.min.js", "vendor/plotly")}
