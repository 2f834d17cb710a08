"""The call tree at Firefox Profiler's level (issue 36, item 2), in Chromium on the demo's
busy capture: it opens along its heaviest path (each row's heaviest child while it holds
a hundredth of the samples, as the server's tree has them) with the path's end selected;
the arrow keys move, open and close, `*` opens everything below a row, Enter shows the
row in the flame graph."""
import pytest
from django.core.management import call_command

from perfweb.captures.models import Capture

pytestmark = pytest.mark.django_db(transaction=True)


def _heaviest(tree: dict) -> list[str]:
    """The names along the heaviest path of the server's flat tree."""
    nodes = tree["nodes"]
    kids: dict[int, list[int]] = {}
    for i, n in enumerate(nodes[1:], 1):
        kids.setdefault(n["p"], []).append(i)
    total, at, names = nodes[0]["t"], 0, []
    while True:
        named = [i for i in kids.get(at, []) if nodes[i]["f"] >= 0]
        if not named:
            return names
        nxt = max(named, key=lambda i: nodes[i]["t"])
        if nodes[nxt]["t"] < 0.01 * total:
            return names
        names.append(nodes[nxt]["n"])
        at = nxt


def _selected(page) -> str:
    return page.eval_on_selector("#calltree tr.selected td.fn span",
                                 "s => s.textContent")


def test_the_call_tree_opens_on_its_heaviest_path_and_walks_by_keyboard(page):
    call_command("load_demo", "--username", "alice")
    busy = Capture.objects.get(build__version="1.0.0", label="busy")
    url = page.base + busy.get_absolute_url()
    page.goto(url)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    flame = page.answer(f"{page.base}/captures/{busy.pk}/data/flame.json").json()
    path = _heaviest(flame["tree"])
    assert len(path) >= 3
    page.click("#view-tabs button[data-view=topdown]")
    page.wait_for_selector("#calltree tbody tr.selected")
    rows = page.locator("#calltree tbody tr")
    names = page.eval_on_selector_all("#calltree tbody tr td.fn span",
                                      "ss => ss.map(s => s.textContent)")
    assert all(n in names for n in path)
    assert _selected(page) == path[-1]
    # up to its parent (the heaviest child is its parent's first row), close it, open it
    page.focus("#calltree tbody tr.selected")
    page.keyboard.press("ArrowUp")
    assert _selected(page) == path[-2]
    shown = rows.count()
    page.keyboard.press("ArrowLeft")
    assert rows.count() < shown
    page.keyboard.press("ArrowRight")
    assert rows.count() == shown
    page.keyboard.press("ArrowRight")  # (open: to its first child)
    assert _selected(page) == path[-1]
    # everything below the root
    for _ in range(2 * len(path) + 2):  # (each level: close the row, go to its parent)
        page.keyboard.press("ArrowLeft")
    assert page.eval_on_selector("#calltree tr.selected", "r => r.dataset.key") == ""
    page.keyboard.press("*")
    assert rows.count() == len(flame["tree"]["nodes"])
    # Enter: the selected row in the flame graph
    page.keyboard.press("ArrowDown")
    row = _selected(page)
    page.keyboard.press("Enter")
    # (the flame graph zooms once its data is in: its crumbs end with the row)
    page.wait_for_function("(n) => { const c = document.querySelectorAll("
                           "'#breadcrumbs .crumb'); return c.length > 1 &&"
                           " c[c.length - 1].textContent === n; }", arg=row, timeout=30000)
    assert page.errors == []
