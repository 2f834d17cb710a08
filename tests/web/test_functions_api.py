"""The whole top-functions table through the API, a page at a time, beside a result that
lists only the notable functions (issue 16). A real worker analyzes the upload."""
from pathlib import Path

import pytest

from perfweb.captures.api_tokens import create_token

from .test_api import _auth, _wait_done

pytestmark = pytest.mark.django_db(transaction=True)

HOT_ROW = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / \
    "postgres-hot-row" / "bad-hot-row.perf.data"


def test_functions_page_through_the_whole_table(client, member, outsider, worker_factory):
    worker_factory()
    key = create_token(member, "ci")
    with open(HOT_ROW, "rb") as f:
        r = client.post("/api/v1/captures/", {"service": "pg", "version": "16",
                                               "label": "load", "capture": f}, **_auth(key))
    assert r.status_code == 201, r.content
    pk = r.json()["id"]
    _wait_done(client, key, pk)
    result = client.get(f"/api/v1/captures/{pk}/result/", **_auth(key)).json()
    assert (len(result["functions"]), result["functions_rest"]["functions"]) == (1083, 1413)

    rows, offset = [], 0
    while True:
        page = client.get(f"/api/v1/captures/{pk}/functions/?offset={offset}&limit=1000",
                          **_auth(key)).json()
        assert page["count"] == 2496 and page["offset"] == offset
        rows += page["functions"]
        offset += 1000
        if offset >= page["count"]:
            break
    assert len(rows) == 2496
    # the result's functions are the table's, in its order, the others left out
    listed = {(f["name"], f["dso"]) for f in result["functions"]}
    assert [(x["n"], x["s"], x["t"]) for x in rows if (x["n"], x["d"]) in listed] == \
        [(f["name"], f["self"], f["total"]) for f in result["functions"]]
    assert sum(x["s"] for x in rows) == result["samples"]
    # bounds and bad numbers: clamped, or a 400 saying what is wanted
    one = client.get(f"/api/v1/captures/{pk}/functions/?limit=999999", **_auth(key)).json()
    assert len(one["functions"]) == 1000
    bad = client.get(f"/api/v1/captures/{pk}/functions/?offset=x", **_auth(key))
    assert bad.status_code == 400
    other = create_token(outsider, "other")
    assert client.get(f"/api/v1/captures/{pk}/functions/", **_auth(other)).status_code == 404
