"""Call-tree transforms applied from the capture page in Chromium: from the focused
function's toolbar and from a frame's right-click menu, each changing the selection's
total, the drawn frames and the tables as the server's data says, kept in the URL as
chips a reload restores and a click removes."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from perfweb.captures import services
from perfweb.captures.models import Capture, Team
from perfweb.captures.uploads import store_upload

from ..conftest import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def _data(page, capture, kind, query=""):
    r = page.answer(f"{page.base}/captures/{capture.pk}/data/{kind}.json{query}")
    assert r.ok, r.text()
    return r.json()


def _settled(page, applied):
    """The flame graph drawn with the transforms `applied` (a tf string), its answer in."""
    page.wait_for_selector(f"#transforms[data-transforms='{applied}']", state="attached",
                           timeout=30000)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached")
    page.settle()


def _open(page, capture, query=""):
    page.goto(page.base + capture.get_absolute_url() + query)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    page.settle()


def _chips(page):
    return page.eval_on_selector_all("#transform-chips .chip",
                                     "cs => cs.map(c => [c.dataset.t, c.textContent])")


def _top_functions(page):
    """The Top functions card: name -> (self, total), as the page shows them."""
    rows = page.eval_on_selector_all("#functions tbody tr", """rs => rs.map(r => [
        r.cells[4].querySelector('.name').textContent, Number(r.cells[0].textContent),
        Number(r.cells[2].textContent)])""")
    return {n: (s, t) for n, s, t in rows}


def _right_click(page, name):
    spot = page.evaluate("(n) => window.perfweb.frameCenter(n)", name)
    assert spot, f"{name} is not drawn"
    page.locator("#flame-canvas").scroll_into_view_if_needed()
    box = page.locator("#flame-canvas").bounding_box()
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"], button="right")
    page.wait_for_selector("#frame-menu:not([hidden])")


def test_drop_merge_and_collapse_a_library_from_the_page(page):
    call_command("load_demo", "--username", "alice")
    busy = Capture.objects.get(build__version="1.0.0", label="busy")
    table = {f["n"]: f for f in _data(page, busy, "functions")["functions"]}
    syscall, entry = table["do_syscall_64"], table["entry_SYSCALL_64_after_hwframe"]
    assert (syscall["s"], syscall["t"], entry["s"], entry["t"]) == (133, 473, 0, 473)

    # drop, from the toolbar of the focused function: its 473 samples leave every view
    _open(page, busy, f"?focus={syscall['f']}")
    assert page.text_content("#transform-target") == "do_syscall_64"
    page.click("#transform-tools button[data-kind='df']")
    tf = f"df-{syscall['f']}"
    _settled(page, tf)
    dropped = _data(page, busy, "flame", f"?tf={tf}")
    assert dropped["total"] == 973 - 473
    assert page.text_content("#selection-total") == "500"
    assert _chips(page) == [[tf, "drop do_syscall_64×"]]
    assert f"tf={tf}" in page.url and "focus=" not in page.url
    assert page.is_hidden("#transform-tools")  # (it acts on a focused function)
    assert page.evaluate("window.perfweb.frameCenter('do_syscall_64')") is None
    page.wait_for_function("() => !document.querySelector('#functions tbody')"
                           ".textContent.includes('do_syscall_64')")
    assert _top_functions(page)["__GI___pthread_mutex_unlock_usercnt"] == \
        tuple(table["__GI___pthread_mutex_unlock_usercnt"][k] for k in "st")
    # a reload restores it, the chip's × takes it off
    page.reload()
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    _settled(page, tf)
    assert page.text_content("#selection-total") == "500"
    assert _chips(page) == [[tf, "drop do_syscall_64×"]]
    page.click("#transform-chips .chip-remove")
    _settled(page, "")
    assert page.text_content("#selection-total") == "973" and "tf=" not in page.url
    assert page.is_hidden("#transform-chips")

    # merge, from a frame's menu: its 133 self samples are its caller's
    _right_click(page, "do_syscall_64")
    page.click("#frame-menu button[data-action='transform-mf']")
    tf = f"mf-{syscall['f']}"
    _settled(page, tf)
    assert page.text_content("#selection-total") == "973"
    assert page.evaluate("window.perfweb.frameCenter('do_syscall_64')") is None
    merged = {f["n"]: f for f in _data(page, busy, "functions", f"?tf={tf}")["functions"]}
    assert (merged["entry_SYSCALL_64_after_hwframe"]["s"],
            merged["entry_SYSCALL_64_after_hwframe"]["t"]) == (133, 473)
    page.wait_for_function("() => !document.querySelector('#functions tbody')"
                           ".textContent.includes('do_syscall_64')")
    assert _top_functions(page)["entry_SYSCALL_64_after_hwframe"] == (133, 473)
    drawn = page.evaluate("window.perfweb.frameCenter('entry_SYSCALL_64_after_hwframe')")
    nodes = _data(page, busy, "flame", f"?tf={tf}")["tree"]["nodes"]
    assert sum(n["s"] for n in nodes if n["n"] == "entry_SYSCALL_64_after_hwframe") == 133
    assert drawn["self"] > 0

    # collapse glibc, from a frame's menu, on top of the merge: one frame named after it
    # with perf report --sort dso's 314 self samples, 787 through it (--children)
    lock = table["__GI___lll_lock_wait"]
    _right_click(page, "__GI___lll_lock_wait")
    page.click("#frame-menu button[data-action='transform-cr']")
    both = f"{tf}.cr-{lock['f']}"
    _settled(page, both)
    assert [c[1] for c in _chips(page)] == ["merge do_syscall_64×", "collapse libc.so.6×"]
    libc = {f["n"]: f for f in _data(page, busy, "functions", f"?tf={both}")["functions"]}
    assert (libc["libc.so.6"]["s"], libc["libc.so.6"]["t"]) == (314, 787)
    page.wait_for_function("() => document.querySelector('#functions tbody')"
                           ".textContent.includes('libc.so.6')")
    assert _top_functions(page)["libc.so.6"] == (314, 787)
    assert page.evaluate("window.perfweb.frameCenter('__GI___lll_lock_wait')") is None
    assert page.evaluate("window.perfweb.frameCenter('libc.so.6')")
    assert f"tf={both}" in page.url
    # removing the merge keeps the collapse (no later transform names a collapsed frame)
    page.click("#transform-chips .chip:first-child .chip-remove")
    _settled(page, f"cr-{lock['f']}")
    assert page.text_content("#selection-total") == "973"
    assert page.evaluate("window.perfweb.frameCenter('do_syscall_64')")
    assert not page.errors


def test_collapse_recursion_in_the_sandwich_view(page, member):
    """FlameGraph's vertx capture: Interpreter calls itself directly; collapsed, its
    callees no longer start with itself, and its total stays the server's."""
    source = ROOT.parent / "shared" / "corpus" / "public" / "brendangregg__FlameGraph" / \
        "test" / "perf-vertx-stacks-01.txt"
    c, _ = store_upload(member, Team.objects.get(name="inference"), {
        "service": "vertx", "version": "1", "label": "java",
        "capture": SimpleUploadedFile(source.name, source.read_bytes()), "symbols": []})
    services.run_analysis(c.pk)
    capture = Capture.objects.get(pk=c.pk)
    assert capture.status == "done", capture.error
    interp = next(f for f in _data(page, capture, "functions")["functions"]
                  if f["n"] == "Interpreter")
    _open(page, capture, f"?view=sandwich&focus={interp['f']}")
    page.wait_for_selector(f"#sandwich-panel[data-function='{interp['f']}']",
                           state="attached", timeout=30000)
    callees = page.evaluate("window.perfweb.sandwichFrames('callees')")
    assert "Interpreter" in {r["name"] for r in callees if r["depth"] == 1}
    page.click("#transform-tools button[data-kind='rec']")
    tf = f"rec-{interp['f']}"
    _settled(page, tf)
    page.wait_for_function("""() => !window.perfweb.sandwichFrames('callees')
        .some((r) => r.depth === 1 && r.name === 'Interpreter')""")
    callees = page.evaluate("window.perfweb.sandwichFrames('callees')")
    server = _data(page, capture, "flame", f"?tf={tf}&focus={interp['f']}")["callees"]["nodes"]
    assert not [n for n in server if n["p"] == 0 and n["n"] == "Interpreter"]
    assert [r["total"] for r in callees if r["depth"] == 0] == [server[0]["t"]] == \
        [interp["t"]]
    assert f"tf={tf}" in page.url and f"focus={interp['f']}" in page.url
    assert _chips(page) == [[tf, "collapse recursion Interpreter×"]]
    page.reload()
    page.wait_for_selector(f"#sandwich-panel[data-function='{interp['f']}']",
                           state="attached", timeout=30000)
    _settled(page, tf)
    callees = page.evaluate("window.perfweb.sandwichFrames('callees')")
    assert not [r for r in callees if r["depth"] == 1 and r["name"] == "Interpreter"]
    assert not page.errors
