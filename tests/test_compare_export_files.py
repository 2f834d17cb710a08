"""A comparison's files (analysis/export/comparison.py) with names an upload chose: the
gateway 1.0 and 1.1 captures as perf script printed them (tests/fixtures/formats), 1.1's
hot function renamed to markup and its request handler to a spreadsheet formula. The Markdown, rendered as
GitHub renders it (CommonMark with tables, markdown-it-py), holds no HTML, link or extra
table cell from a name; the CSV holds no formula."""
import csv
import gzip
import io

import pytest
from markdown_it import MarkdownIt

from analysis.compare import compare_reports, diff_tree
from analysis.export.comparison import diff_folded, movers_csv, summary_markdown
from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES

FORMATS = FIXTURES / "formats"
MARKUP = "<img src=x onerror=alert(1)>|[x](javascript:alert(1))`**"
FORMULA = '=HYPERLINK("http://evil.example","x")'


@pytest.fixture(scope="module")
def renamed(tmp_path_factory):
    """(profiles, reports) of 1.0 as recorded and 1.1 with its hot functions renamed."""
    tmp = tmp_path_factory.mktemp("names")
    text = gzip.decompress((FORMATS / "gateway-1.1.script.txt.gz").read_bytes()).decode()
    text = text.replace(" gateway::hash_payload+", f" {MARKUP}+")
    text = text.replace(" gateway::Worker::on_readable+", f" {FORMULA}+")
    after = tmp / "gateway-1.1.script.txt"
    after.write_text(text)
    profiles = [load(FORMATS / "gateway-1.0.script.txt.gz"), load(after)]
    return profiles, [build_report(p, label="load") for p in profiles]


def test_names_are_movers(renamed):
    c = compare_reports(*renamed[1])
    names = {m["name"] for m in c["movers"]["functions"]}
    assert MARKUP in names and "gateway::hash_payload" in names  # 0 -> 94.7% and back


def test_markdown_renders_no_markup_from_a_name(renamed):
    c = compare_reports(*renamed[1])
    md = summary_markdown(c, f"gateway: 1.0 load -> {MARKUP}")
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in html and "<a " not in html and "<strong>x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # shown, as text
    table = html[html.rindex("<table>"):html.rindex("</table>")]  # the movers
    rows = [r for r in table.split("<tr>")[2:]]
    assert rows and all(r.count("<td>") == 7 for r in rows)  # no cell split by a name


def test_csv_quotes_a_formula_as_text(renamed):
    c = compare_reports(*renamed[1])
    rows = list(csv.DictReader(io.StringIO(movers_csv(c))))
    names = [r["name"] for r in rows if r["kind"] == "function"]
    # (a function's identity has no argument list: =HYPERLINK, its total 0 -> 98.6%)
    assert "'=HYPERLINK" in names and not [n for n in names if n.startswith("=")]
    assert MARKUP in names  # (not a formula: left as it is)


def test_differential_folded_stacks_hold_every_sample(renamed):
    profiles, reports = renamed
    lines = diff_folded(diff_tree(*profiles, min_share=0.0)).splitlines()
    assert sum(int(line.rsplit(" ", 2)[1]) for line in lines) == reports[0]["samples"]
    assert sum(int(line.rsplit(" ", 2)[2]) for line in lines) == reports[1]["samples"]
    hot = [line for line in lines if line.rsplit(" ", 2)[0].endswith(MARKUP)]
    assert hot and all(";" not in MARKUP for _ in hot)
