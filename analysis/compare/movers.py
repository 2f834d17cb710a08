"""What moved between two captures: functions and libraries by their identities
(identity.py), as shares of each capture's own samples, so a capture with twice the
samples does not look twice as bad."""
from __future__ import annotations

from ..identity import function_key, library_identity

#: a function or DSO moving by this many percentage points of the capture is notable
MOVER_MIN_PP = 1.0


def _function_shares(report: dict) -> dict:
    """Self and total share per function identity (identity.py): the clones and
    signatures of one function in one build are one row, and the same row in the next."""
    total = _total(report)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for f in report["functions"]:
        key = function_key(f["name"], f["dso"])
        s, t = out.get(key, (0.0, 0.0))
        # totals of two clones overlap when one calls the other: the larger bounds it
        out[key] = (s + f["self"] / total, max(t, f["total"] / total))
    return out


def _total(report: dict) -> int:
    """What the functions' weights are out of: samples, or the µs of an off-CPU or wall
    view (build_report's view_name)."""
    return report.get("view_total") or report["samples"] or 1


def movers(ra: dict, rb: dict, n: int = 30) -> dict:
    """From the two reports (build_report with every function): their function and DSO
    tables already hold what moved."""
    fa, fb = _function_shares(ra), _function_shares(rb)
    ta, tb = _total(ra), _total(rb)
    rows = []
    for key in set(fa) | set(fb):
        a = fa.get(key, (0.0, 0.0))
        b = fb.get(key, (0.0, 0.0))
        rows.append({"name": key[0], "dso": key[1],
                     "self_before": round(100 * a[0], 2), "self_after": round(100 * b[0], 2),
                     "total_before": round(100 * a[1], 2), "total_after": round(100 * b[1], 2),
                     "self_change": round(100 * (b[0] - a[0]), 2),
                     "total_change": round(100 * (b[1] - a[1]), 2)})
    rows.sort(key=lambda r: (-abs(r["self_change"]), -abs(r["total_change"]), r["name"]))
    da, db = _dso_self(ra), _dso_self(rb)
    dsos = []
    for dso in set(da) | set(db):
        a, b = da.get(dso, 0), db.get(dso, 0)
        dsos.append({"dso": dso, "self_before": round(100 * a / ta, 2),
                     "self_after": round(100 * b / tb, 2),
                     "self_change": round(100 * (b / tb - a / ta), 2)})
    dsos.sort(key=lambda r: -abs(r["self_change"]))
    return {"functions": [r for r in rows if abs(r["self_change"]) >= MOVER_MIN_PP or
                          abs(r["total_change"]) >= MOVER_MIN_PP][:n],
            "dsos": [d for d in dsos if abs(d["self_change"]) >= MOVER_MIN_PP][:n],
            "samples_before": ra["samples"], "samples_after": rb["samples"]}


def _dso_self(report: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in report["dsos"]:
        key = library_identity(d["dso"])
        out[key] = out.get(key, 0) + d["self"]
    return out
