"""The upload page as habits expect it (issue 36, "Upload that fits habits"), in
Chromium: the teams' services are offered as the service is typed, a name that is new
says so and names the known service it is a typo of, and a capture file dropped on the
form is uploaded and analysed like a chosen one."""
import base64
import re

import pytest

from perfweb.captures.models import Capture, Service

from ..conftest import SPINPOOL, analysed

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_typo_of_a_known_service_is_named_before_it_makes_a_new_one(page, member):
    analysed(member, SPINPOOL / "1.1.0-idle.perf.data", "llm-api", "1.1.0", "idle")
    page.goto(f"{page.base}/upload/")
    assert page.eval_on_selector_all("#known-services option", "os => os.map(o => o.value)") \
        == ["llm-api"]
    assert page.get_attribute("#id_service", "list") == "known-services"
    note = page.locator("#service-new")
    page.fill("#id_service", "llm-api")
    assert note.is_hidden()
    page.fill("#id_service", "lm-api")
    assert note.text_content() == \
        "A new service “lm-api” will be made. Did you mean “llm-api”?"
    page.fill("#id_service", "LLM-API")
    assert note.text_content().endswith("Did you mean “llm-api”?")
    page.fill("#id_service", "billing-gateway")
    assert note.text_content() == "A new service “billing-gateway” will be made."
    assert not page.errors


def test_a_dropped_capture_is_uploaded(page, member, worker_factory):
    worker_factory()
    page.goto(f"{page.base}/upload/")
    data = base64.b64encode((SPINPOOL / "1.1.0-idle.perf.data").read_bytes()).decode()
    page.evaluate("""(data) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], "dropped.perf.data"));
        const form = document.getElementById("upload-form");
        form.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true,
                                                       cancelable: true}));
        form.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true,
                                                   cancelable: true}));
    }""", data)
    assert page.text_content("#drop-hint") == "Capture: dropped.perf.data"
    assert page.evaluate("document.getElementById('id_capture').files[0].name") == \
        "dropped.perf.data"
    page.fill("#id_service", "llm-api")
    page.fill("#id_version", "1.1.0")
    page.fill("#id_label", "idle")
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/captures/\d+/$"), timeout=60000)
    page.wait_for_selector("#status[data-status='done']", state="attached", timeout=90000)
    capture = Capture.objects.get(original_name="dropped.perf.data")
    assert capture.size == (SPINPOOL / "1.1.0-idle.perf.data").stat().st_size
    assert Service.objects.filter(name="llm-api").count() == 1
    assert not page.errors
