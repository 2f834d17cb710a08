"""A finding lists each function of its evidence once, whatever roles the rule gave it;
shares on the pages read at the precision a small one needs."""
from analysis.diagnosis.finding import Finding


def _row(fid, name, samples):
    return {"id": fid, "name": name, "dso": "/lib/x.so", "samples": samples,
            "share": samples / 100}


def test_a_function_in_two_roles_is_evidence_once_where_it_first_appears():
    f = Finding("spin-wait", "t", "high", "high", 0.5, 50, "", "", "",
                evidence={"functions": [_row(3, "loop", 40), _row(7, "lock", 30),
                                        _row(3, "loop", 40), _row(9, "spin", 5),
                                        _row(7, "lock", 30)]})
    assert [r["id"] for r in f.evidence["functions"]] == [3, 7, 9]
    assert f.to_dict()["functions"] == ["loop", "lock", "spin"]


def test_percent_text():
    import django
    from django.conf import settings
    if not settings.configured:
        django.setup()
    from perfweb.captures.templatetags.numbers import percent_text
    assert [percent_text(x) for x in (0, 0.0042, 0.0072, 0.3443, 1.0, 0.00004)] == \
        ["0%", "0.42%", "0.72%", "34.4%", "100%", "<0.01%"]
    assert [percent_text(x, signed=True) for x in (0.015, -0.0042, 0.0)] == \
        ["+1.5%", "−0.42%", "0%"]
