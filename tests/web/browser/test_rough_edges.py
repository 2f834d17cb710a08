"""The rough edges a new user met (issue 17's list of bugs), each as it shows in Chromium."""
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from perfweb.captures.models import Build, Capture, Service

from ..conftest import SPINPOOL, analysed
from .test_capture_page import _click_frame

pytestmark = pytest.mark.django_db(transaction=True)


def _open(page, capture):
    """The capture page with its flame graph's data in (the page's own requests end
    before the test does: the database is emptied after it)."""
    page.goto(page.base + capture.get_absolute_url())
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)


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
    _open(page, busy)
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


def _unreadable_upload(page, tmp_path, worker_factory):
    """A perf.data cut short (its analysis fails) uploaded through the form, after a
    text of no profile's shape, which the form refuses before anything is made."""
    worker_factory()
    junk = tmp_path / "notes.txt"
    junk.write_text("these are my notes, not a profile\n" * 20)
    page.goto(f"{page.base}/upload/")
    page.set_input_files("#id_capture", str(junk))
    page.fill("#id_service", "scratch")
    page.fill("#id_version", "0.1")
    page.click("#upload-form button[type=submit]")
    page.wait_for_function("() => document.getElementById('upload-status').textContent",
                           timeout=30000)
    assert page.text_content("#upload-status").startswith(
        "capture: This file is not a capture perfweb can read: not perf script, perf "
        "report or folded-stack text")
    assert not Service.objects.filter(name="scratch").exists()
    cut = tmp_path / "cut.perf.data"
    cut.write_bytes((SPINPOOL / "1.0.0-idle.perf.data").read_bytes()[:300])
    page.set_input_files("#id_capture", str(cut))
    page.fill("#id_service", "scratch")
    page.fill("#id_version", "0.1")
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/captures/\d+/$"), timeout=60000)
    page.wait_for_selector("#status[data-status='failed']", state="attached", timeout=90000)
    return Capture.objects.get(original_name="cut.perf.data")


def test_a_failed_upload_offers_no_retry_and_is_deleted_with_its_build(page, tmp_path,
                                                                        worker_factory):
    capture = _unreadable_upload(page, tmp_path, worker_factory)
    build_id, service_id = capture.build_id, capture.build.service_id
    page.reload()
    assert "perf.data is cut short" in page.text_content("#status")
    assert page.locator("#retry").count() == 0  # the same file fails the same way
    assert page.locator("#sharing").count() == 0  # nothing to share
    stored = Path(capture.file.path)
    assert stored.exists()
    page.click("#delete-capture")
    # (issue 36: the service it made held nothing else, and stayed listed with empty
    # charts: it goes too)
    assert page.text_content("#delete-summary") == \
        "1 service, 1 build, 1 capture, 1 stored file"
    assert "and the build and the service, which hold nothing else" in \
        " ".join(page.text_content("#delete-plan").split())
    page.click("#confirm-delete")
    page.wait_for_url(f"{page.base}/")
    assert "Deleted 1 service, 1 build, 1 capture, 1 stored file." in \
        page.text_content("body")
    assert "scratch" not in page.text_content("main")
    assert not Capture.objects.filter(pk=capture.pk).exists()
    assert not Build.objects.filter(pk=build_id).exists()
    assert not Service.objects.filter(pk=service_id).exists()
    assert not stored.exists()
    assert not page.errors


def test_a_team_deletes_a_build_and_a_service_with_their_files(page, browser, outsider):
    call_command("load_demo", "--username", "alice")
    service = Service.objects.get(name="llm-api")
    build = Build.objects.get(service=service, version="1.0.0")
    files = [Path(c.file.path) for c in build.captures.all()] + \
        [Path(sf.file.path) for sf in build.symbol_files.all()] + \
        [Path(f.path) for c in build.captures.all() for r in c.results.all()
         for f in (r.folded, r.profile)]
    assert len(files) == 2 + 3 + 4 and all(f.exists() for f in files)
    # someone of another team: not found, whatever the method, and nothing goes
    other = browser.new_context()
    guest = other.new_page()
    guest.goto(f"{page.base}/login/")
    guest.fill("#id_username", "mallory")
    guest.fill("#id_password", "pw-mallory-123")
    guest.click("button[type=submit]")
    guest.wait_for_url(f"{page.base}/")
    for url in (f"/builds/{build.pk}/delete/", f"/services/{service.pk}/delete/",
                f"/captures/{build.captures.first().pk}/delete/"):
        assert guest.goto(page.base + url).status == 404
        assert guest.request.post(page.base + url).status in (403, 404)  # (no CSRF token: 403)
    other.close()
    assert all(f.exists() for f in files)

    page.goto(page.base + build.get_absolute_url())
    page.click("#delete-build")
    assert page.text_content("#delete-summary") == "1 build, 2 captures, 9 stored files"
    page.click("#confirm-delete")
    page.wait_for_url(re.compile(rf".*/services/{service.pk}/$"))
    page.wait_for_selector("#history[data-points='2']", state="attached", timeout=30000)
    assert not Build.objects.filter(pk=build.pk).exists()
    assert not any(f.exists() for f in files)
    assert list(service.builds.values_list("version", flat=True)) == ["1.1.0"]

    page.click("#delete-service")
    assert page.text_content("#delete-summary") == "1 service, 1 build, 2 captures, " \
        "9 stored files"
    page.click("#confirm-delete")
    page.wait_for_url(f"{page.base}/")
    assert not Service.objects.filter(pk=service.pk).exists()
    assert not Capture.objects.exists()
    assert not page.errors


def test_service_charts_start_at_zero_chart_shares_and_fit_their_legends(page):
    call_command("load_demo", "--username", "alice")
    service = Service.objects.get(name="llm-api")
    page.goto(page.base + service.get_absolute_url())
    page.wait_for_selector("#history[data-points='4']", state="attached", timeout=30000)
    for chart in ("chart-cpus", "chart-functions", "chart-rules"):
        low = page.evaluate(f"document.getElementById('{chart}')._fullLayout.yaxis.range[0]")
        assert low == 0, chart
        # the legend is inside the chart's box, not cut off by it
        box = page.evaluate(f"""() => {{
            const c = document.getElementById('{chart}').getBoundingClientRect();
            const l = document.querySelector('#{chart} .legend').getBoundingClientRect();
            return [c.top, c.bottom, l.top, l.bottom];
        }}""")
        assert box[0] <= box[2] and box[3] <= box[1], (chart, box)
    rules = page.evaluate("""() => Object.fromEntries(document.getElementById('chart-rules')
        .data.map((t) => [t.name, t.y]))""")
    # findings about the whole capture (the CPU headline) are no share of samples
    assert "cpu-use" not in rules
    assert max(v for ys in rules.values() for v in ys) < 100
    assert rules["spin-wait"][0] > 50 and rules["spin-wait"][1] == 0
    assert not page.errors


def test_compare_with_previous_only_where_there_is_a_previous_capture(page):
    call_command("load_demo", "--username", "alice")
    first = Capture.objects.get(build__version="1.0.0", label="idle")
    second = Capture.objects.get(build__version="1.1.0", label="idle")
    _open(page, first)
    assert page.locator("#compare-previous").count() == 0
    _open(page, second)
    assert page.text_content("#compare-previous") == "Compare with 1.0.0 idle"
    assert page.get_attribute("#compare-previous", "href") == \
        f"/compare/{first.pk}/{second.pk}/"


def test_evidence_lists_each_function_once_with_small_shares_readable(page):
    call_command("load_demo", "--username", "alice")
    busy = Capture.objects.get(build__version="1.0.0", label="busy")
    _open(page, busy)
    rows = page.eval_on_selector_all(
        "#finding-spin-wait table.evidence tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    names = [r[0] for r in rows]
    assert len(names) == len(set(names))
    # 7 of 973 samples: 0.72%, not "1%" or "0%"
    assert ["qualla::ThreadPool::loop", "/opt/qualla-1.0.0/bin/libqualla.so", "7", "0.72%"] \
        in rows
    assert ["__x64_sys_futex", "[kernel.kallsyms]", "335", "34.4%"] in rows
    for table in page.query_selector_all("table.evidence"):
        cells = table.eval_on_selector_all("tbody tr", "rs => rs.map(r => r.cells[0].textContent)")
        assert len(cells) == len(set(cells))


def test_comparison_numbers_in_one_format_with_a_sign_on_every_change(page):
    call_command("load_demo", "--username", "alice")
    before = Capture.objects.get(build__version="1.0.0", label="idle")
    after = Capture.objects.get(build__version="1.1.0", label="idle")
    page.goto(page.base + f"/compare/{before.pk}/{after.pk}/")
    page.wait_for_selector("#diff[data-frames]", state="attached", timeout=30000)
    dsos = page.eval_on_selector_all(
        "#dso-movers tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert dsos, "the idle capture's DSOs all went"
    for dso, was, now, change in dsos:
        assert was.endswith("%") and now.endswith("%"), (dso, was, now)
        assert change.endswith(" pp") and change[0] in "+−", (dso, change)
    # 1.1.0 idle has no samples: every DSO of 1.0.0 went from its share to 0%
    kernel = next(r for r in dsos if r[0] == "[kernel.kallsyms]")
    assert kernel[2] == "0%" and kernel[3] == "−" + kernel[1].replace("%", " pp")
    for row in page.eval_on_selector_all(
            "#movers tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"):
        assert all(v.endswith("%") for v in (row[2], row[3], row[5], row[6])), row
        assert row[4].endswith(" pp") and row[4][0] in "+−" or row[4] == "0 pp", row


def _contrast(rgb_a, rgb_b):
    def lum(rgb):
        c = [v / 255 for v in rgb]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    hi, lo = sorted((lum(rgb_a), lum(rgb_b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_kernel_names_are_not_link_coloured_and_frames_keep_their_labels_readable(page):
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    page.goto(page.base + idle.get_absolute_url())
    page.wait_for_selector("#functions tbody tr.kind-kernel", timeout=30000)
    colours = page.evaluate("""() => {
        const k = document.querySelector('#functions tr.kind-kernel td.fn');
        const u = document.querySelector('#functions tr.kind-user td.fn');
        const a = document.createElement('a'); a.href = '#'; document.body.append(a);
        const out = [getComputedStyle(k).color, getComputedStyle(u).color,
                     getComputedStyle(a).color];
        a.remove();
        return out;
    }""")
    kernel, user, link = colours
    assert kernel == user and kernel != link
    # every frame colour of every kind keeps the dark label at 4.5:1 (WCAG AA)
    src = page.get_attribute("#capture-main", "src")
    rgbs = page.evaluate("""async (src) => {
        const {frameColor} = await import(new URL('colors.js', new URL(src, location.href)));
        const probe = document.createElement('div'); document.body.append(probe);
        const out = [];
        for (const k of ['user', 'kernel', 'jit', 'vdso']) {
            for (let i = 0; i < 300; i++) {
                probe.style.color = frameColor({k, n: k + i + 'f'});
                out.push(getComputedStyle(probe).color.match(/\\d+/g).map(Number));
            }
        }
        probe.remove();
        return out;
    }""", src)
    assert len(rgbs) == 1200
    worst = min(_contrast(rgb, (0x11, 0x11, 0x11)) for rgb in rgbs)
    assert worst >= 4.5, worst


def test_heat_map_colour_scale_starts_at_zero(page):
    """A thread spinning uniformly fills every cell with about the same count: from the
    data's minimum that would read as bold stripes."""
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    page.goto(page.base + idle.get_absolute_url())
    page.locator("#timeline").scroll_into_view_if_needed()
    page.wait_for_selector("#heatmap .main-svg", timeout=30000)
    z = page.evaluate("""() => {
        const t = document.getElementById('heatmap')._fullData[0];
        const cells = t.z.flat();
        return [t.zmin, t.zmax, Math.min(...cells), Math.max(...cells)];
    }""")
    zmin, zmax, low, high = z
    assert low > 0  # the spin fills every cell ...
    assert zmin == 0 and zmax == high  # ... and the scale still starts at 0


def test_bottom_up_roots_carry_their_self_time_and_sort_by_it(page):
    """Bottom-up, a root is a sampled function: its samples are its self time (for a
    kernel function, what perf report --no-children gives it: the functions table's
    self), the roots' selves add up to the samples, and sorting by self orders them."""
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    _open(page, idle)
    functions = page.evaluate(f"""async () => (await (await answer(
        '/captures/{idle.pk}/data/functions.json')).json()).functions""")
    # (kernel functions have no inline frames: there the leaf-most frame, the
    # bottom-up root, is the function perf report gives the sample to)
    own = {f["n"]: f["s"] for f in functions if f["k"] == "kernel"}
    page.click("#view-tabs button[data-view=bottomup]")
    page.wait_for_selector("#calltree tbody tr:nth-child(2)")
    page.click("#calltree th[data-sort=s]")
    rows = page.eval_on_selector_all(
        "#calltree tbody tr", "rs => rs.map(r => [r.cells[0].querySelector('span')"
        ".textContent, Number(r.cells[1].textContent), Number(r.cells[3].textContent)])")
    roots = rows[1:]  # (all)
    assert sum(s for _, s, _ in roots) == 975
    assert all(s == t for _, s, t in roots)  # a root's samples are all its own
    assert [s for _, s, _ in roots] == sorted((s for _, s, _ in roots), reverse=True)
    by_name = {n: s for n, s, _ in roots}
    kernel = [n for n in by_name if n in own]
    assert len(kernel) >= 5
    for name in kernel:
        assert by_name[name] == own[name], name
    # a caller under a root has no self time of its own there
    page.locator("#calltree tbody tr").nth(1).locator("button.toggle").click()
    caller = page.locator("#calltree tbody tr").nth(2)
    assert caller.locator("td").nth(1).text_content() == "0"


def test_clicking_a_frame_in_the_focused_view_zooms_there_and_stays_focused(page):
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    _open(page, idle)
    page.click("article[data-rule=spin-wait] a.show-flame")  # focuses its function
    page.wait_for_selector("#callers-box:not([hidden])")
    assert page.text_content("#focus-label") == "qualla::ThreadPool::loop"
    focus = re.search(r"focus=(\d+)", page.url).group(1)
    # the callee tree as the server gives it: the child to click, and its total there
    callees = page.evaluate(f"""async () => (await (await answer(
        '/captures/{idle.pk}/data/flame.json?focus={focus}')).json()).callees.nodes""")
    child = max((n for n in callees if n["p"] == 0 and n["f"] >= 0), key=lambda n: n["t"])
    spot = _click_frame(page, child["n"])
    page.wait_for_function(
        "(n) => [...document.querySelectorAll('#breadcrumbs .crumb')].pop().textContent === n",
        arg=child["n"])
    assert f"focus={focus}" in page.url and f"root={child['f']}" in page.url
    assert page.eval_on_selector_all("#breadcrumbs .crumb", "bs => bs.map(b => b.textContent)") \
        == ["all", "qualla::ThreadPool::loop", child["n"]]
    assert not page.locator("#callers-box").is_hidden()  # still the focused view
    # the drawn root is that child, with its total in the callee tree
    top = page.evaluate("(n) => window.perfweb.frameCenter(n)", child["n"])
    assert top["total"] == child["t"] == spot["total"]
    # a reload shows the same view; the focused function's crumb goes back up one level
    page.reload()
    page.wait_for_function(
        "(n) => [...document.querySelectorAll('#breadcrumbs .crumb')].pop().textContent === n",
        arg=child["n"])
    page.click("#breadcrumbs .crumb:nth-child(2)")
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 2")
    assert f"focus={focus}" in page.url and "root=" not in page.url
    page.click("#breadcrumbs .crumb:nth-child(1)")
    page.wait_for_selector("#callers-box[hidden]", state="attached")
    assert "focus=" not in page.url
    assert not page.errors


def test_show_in_flame_graph_focuses_a_function_that_holds_the_lock_time(page):
    """lock-contention names the code that takes the lock (qualla::ThreadPool::loop,
    from the same threads: glibc has no frame pointers, so the lock stacks stop in it);
    the flame graph is focused on a function of the lock stacks themselves."""
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    _open(page, idle)
    assert "taken by qualla::ThreadPool::loop" in page.text_content("#finding-lock-contention")
    page.click("article[data-rule=lock-contention] a.show-flame")
    page.wait_for_selector("#callers-box:not([hidden])")
    assert page.text_content("#focus-label") == "__x64_sys_futex"
    focus = re.search(r"focus=(\d+)", page.url).group(1)
    callees = page.evaluate(f"""async () => (await (await answer(
        '/captures/{idle.pk}/data/flame.json?focus={focus}')).json()).callees.nodes""")
    # perf report --children on the recording host: __x64_sys_futex 386 samples
    assert callees[0]["t"] == 386


def test_top_functions_rows_stay_short_with_long_names_and_paths(page, tmp_path,
                                                                  worker_factory):
    worker_factory()
    long = ("std::__1::__function::__func<std::__1::__bind<void (tensor::Engine::*)("
            "std::__1::shared_ptr<tensor::Batch> const&, std::__1::vector<int, "
            "std::__1::allocator<int> >&), tensor::Engine*, std::__1::placeholders::__ph<1> "
            "const&>, std::__1::allocator<std::__1::__bind<...> >, void (int)>::operator()")
    folded = tmp_path / "long.folded"
    folded.write_text("".join(f"server;main;{long}<{i}>(int&&) {1000 - i}\n"
                              for i in range(120)))
    page.goto(f"{page.base}/upload/")
    page.set_input_files("#id_capture", str(folded))
    page.fill("#id_service", "tensor")
    page.fill("#id_version", "2.0")
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/captures/\d+/$"), timeout=60000)
    page.wait_for_selector("#functions tbody tr:nth-child(100)", timeout=90000)
    heights = page.eval_on_selector_all("#functions tbody tr",
                                        "rs => rs.map(r => r.getBoundingClientRect().height)")
    line = page.evaluate("parseFloat(getComputedStyle(document.querySelector("
                         "'#functions td.fn')).lineHeight) || 20")
    assert max(heights) <= 3 * line, (max(heights), line)
    # numbers on one line each
    for cell in page.query_selector_all("#functions tbody tr:first-child td:not(.fn)"):
        assert cell.evaluate("c => c.getClientRects().length === 1 && "
                             "c.scrollHeight <= c.clientHeight + 2")
    # the whole name on hover
    assert page.get_attribute("#functions tbody tr:first-child td.fn", "title").startswith(
        long + "<0>")
    assert page.evaluate("document.documentElement.scrollHeight") < 9000
    # a library's path: its file name, the folder on hover
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    page.goto(page.base + idle.get_absolute_url())
    page.wait_for_selector("#functions tbody tr", timeout=30000)
    cell = page.locator("#functions td.dso", has_text="libqualla.so").first
    assert cell.text_content() == "libqualla.so"
    assert cell.get_attribute("title") == "/opt/qualla-1.0.0/bin/libqualla.so"


def test_a_share_link_keeps_the_view_and_shows_in_full_with_a_copy_button(page, browser):
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    _open(page, idle)
    _click_frame(page, "qualla::ThreadPool::loop")
    page.wait_for_selector("#breadcrumbs .crumb:nth-child(3)")
    page.fill("#flame-search", "futex")
    page.wait_for_function("() => location.search.includes('search=futex')")
    view = page.evaluate("location.search")
    page.click("#sharing button[type=submit]")
    page.wait_for_url(re.compile(r".*#sharing$"))
    # the page keeps its view and stands at the Share card, the new link first in it
    assert page.evaluate("location.search") == view
    page.wait_for_selector("#breadcrumbs .crumb:nth-child(3)")
    assert page.input_value("#flame-search") == "futex"
    url = page.input_value("#share-links li:first-child input.share-url")
    assert url.startswith(page.base + "/s/") and "root=" in url and "search=futex" in url
    page.click("#share-links li:first-child button.copy")
    page.wait_for_selector("#share-links li:first-child button.copy:text('Copied')")
    # someone without an account sees the same view
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    guest = other.new_page()
    assert guest.goto(url).status == 200
    guest.wait_for_selector("#breadcrumbs .crumb:nth-child(3)", timeout=30000)
    assert guest.locator("#breadcrumbs .crumb").last.text_content() == \
        "qualla::ThreadPool::loop"
    assert guest.input_value("#flame-search") == "futex"
    other.close()
    assert not page.errors


def _tip_inside(page, canvas, tip, x_frac, y_from_bottom):
    """Hover the canvas y_from_bottom px above its bottom edge (the root row of a flame
    orientation), scrolled so that edge is at the window's bottom; the tooltip's box."""
    page.evaluate(f"""() => {{
        const c = document.getElementById('{canvas}');
        const r = c.getBoundingClientRect();
        window.scrollBy(0, r.bottom - window.innerHeight + 2);
    }}""")
    box = page.locator(f"#{canvas}").bounding_box()
    page.mouse.move(box["x"] + box["width"] * x_frac, box["y"] + box["height"] - y_from_bottom)
    page.wait_for_selector(f"#{tip}:not([hidden])")
    return page.evaluate(f"""() => {{
        const t = document.getElementById('{tip}').getBoundingClientRect();
        return [t.left, t.top, t.right, t.bottom, window.innerWidth, window.innerHeight];
    }}""")


def test_tooltips_on_the_bottom_rows_stay_in_the_window(page):
    call_command("load_demo", "--username", "alice")
    before = Capture.objects.get(build__version="1.0.0", label="idle")
    after = Capture.objects.get(build__version="1.1.0", label="idle")
    _open(page, before)
    for x in (0.02, 0.5, 0.98):  # the root row, left, middle and right
        left, top, right, bottom, w, h = _tip_inside(page, "flame-canvas", "flame-tooltip",
                                                     x, 6)
        assert 0 <= left and right <= w and 0 <= top and bottom <= h, (x, left, top, right,
                                                                      bottom, w, h)
    page.goto(page.base + f"/compare/{before.pk}/{after.pk}/")
    page.wait_for_selector("#diff[data-frames]", state="attached", timeout=30000)
    left, top, right, bottom, w, h = _tip_inside(page, "diff-canvas", "diff-tooltip", 0.9, 6)
    assert 0 <= left and right <= w and 0 <= top and bottom <= h


def test_a_long_build_version_stays_within_the_page(page, member):
    """(Issue 36.) A build version of 100 characters without a space (a hash and a
    date, as CI names builds) wraps in the capture page's title at 1280x800 instead of
    running off it."""
    version = "1.4.2+" + "0123456789abcdef" * 5 + "-20261207T2359"
    assert len(version) == 100
    capture = analysed(member, SPINPOOL / "1.0.0-idle.perf.data", "llm-api", version, "idle")
    page.set_viewport_size({"width": 1280, "height": 800})
    _open(page, capture)
    box = page.evaluate("""() => { const h = document.querySelector('main h1');
        return [h.scrollWidth, h.clientWidth, h.getBoundingClientRect().right,
                document.documentElement.clientWidth]; }""")
    scroll, client, right, viewport = box
    assert scroll <= client and right <= viewport, box
    assert version in page.text_content("main h1")
