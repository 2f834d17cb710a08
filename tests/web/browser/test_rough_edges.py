"""The rough edges a new user met (issue 17's list of bugs), each as it shows in Chromium."""
import pytest
from django.core.management import call_command

from perfweb.captures.models import Capture

pytestmark = pytest.mark.django_db(transaction=True)


def test_upload_help_shows_commands_as_code_not_markdown(page):
    page.goto(f"{page.base}/upload/")
    help_text = page.text_content("#upload-form .helptext, #upload-form [id$='_helptext']")
    assert help_text.startswith("perf.data, perf script or perf report --stdio output")
    assert "`" not in page.text_content("#upload-form")
    assert page.eval_on_selector_all("#upload-form code", "els => els.map(e => e.textContent)") \
        [:2] == ["perf script", "perf report --stdio"]


def test_coverage_says_which_uploaded_file_the_symbols_came_from(page):
    """The file the user uploaded, and which member of it in words, not the path of
    perf's build-id cache inside the bundle."""
    call_command("load_demo", "--username", "alice")
    busy = Capture.objects.get(build__version="1.0.0", label="busy")
    page.goto(page.base + busy.get_absolute_url())
    rows = page.eval_on_selector_all(
        "section:has(h2:text('Symbol coverage')) tbody tr",
        "rows => rows.map(r => [r.cells[0].textContent, r.cells[5].innerText])")
    by_dso = dict(rows)
    assert by_dso["/usr/lib/x86_64-linux-gnu/libc.so.6"] == \
        "1.0.0-busy.perf.data.tar.bz2\nlibc.so.6 (debug file)"
    assert by_dso["[kernel.kallsyms]"] == "1.0.0-busy.perf.data.tar.bz2\n" \
        "[kernel.kallsyms] (kallsyms)"
    assert by_dso["/opt/qualla-1.0.0/bin/libqualla.so"] == \
        "symbols-1.0.0.zip\nlibqualla.so.debug"
    assert all("/" not in cell.split("\n")[-1] for cell in by_dso.values())
    # the whole origin stays one hover away
    assert page.get_attribute("section:has(h2:text('Symbol coverage')) small[title*='libc.so.6']",
                              "title").endswith("/debug")
