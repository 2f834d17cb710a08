"""The service page loads plotly.js's basic bundle (1.2 MB, scatter and bar: what its
charts are), not the whole 4.8 MB one (issue 36: 2.3 s cold, most of it Plotly's), and
draws every chart with it. Its cold time is `make bench-browser`'s to measure."""
import pytest

from ..conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)

CHARTS = ("chart-cpus", "chart-functions", "chart-rules")


def test_the_service_page_draws_its_charts_with_the_basic_bundle(page, member):
    busy = spinpool(member, "1.0.0", "busy")
    spinpool(member, "1.1.0", "busy")
    page.goto(page.base + busy.build.service.get_absolute_url())
    for chart in CHARTS:
        page.wait_for_selector(f"#{chart} .main-svg", state="attached", timeout=30000)
    fetched = page.evaluate("""() => performance.getEntriesByType('resource')
        .filter((r) => r.name.includes('/vendor/plotly/'))
        .map((r) => [r.name.split('/').pop(), r.decodedBodySize])""")
    assert [name for name, _ in fetched] == ["plotly-basic.min.js"]
    assert fetched[0][1] < 1_300_000
    # two builds' points on the CPUs chart, bars of the top functions per build
    assert page.evaluate("document.querySelectorAll('#chart-cpus .point').length") >= 2
    assert page.evaluate("document.querySelectorAll('#chart-functions .point').length") > 0
    assert page.errors == []
