"""What moved between two captures: functions and libraries by their identities
(identity.py), as shares of each capture's own samples, so a capture with twice the
samples does not look twice as bad. A row is listed only when its change is beyond the
sampling noise (noise.py) as well as MOVER_MIN_PP: two captures of the same work list
nothing, and no row moved by 0.00."""
from __future__ import annotations

from ..identity import address_like, function_key, library_identity
from . import noise

#: a function or DSO moving by this many percentage points of the capture is notable
MOVER_MIN_PP = 1.0


#: the row of a library's code no symbol names (regression.py words it per library)
UNNAMED = "[no symbol]"


def _function_shares(report: dict, shared: set[str], changed: set) -> dict:
    """Self and total share per function identity (identity.py): the clones and
    signatures of one function in one build are one row, and the same row in the next.

    Functions are compared as compiled, self as perf counts it (the function holding the
    sampled address) and totals of holders only (report.function_rows' `physical_total`),
    so a function that exists only inlined in both captures is in its holders. A function
    whose inlining changed (`changed`: inline_changes) is a row of its own in both: where
    it was inlined, its inline self is taken out of the holders it was inlined in, so a
    build that inlines a callee its predecessor called does not read as a change of cost.

    Addresses no symbol names are one row per library when the library's file is not in
    both captures (`shared`: the paths both have): another build puts the same code at
    other addresses (gateway-1.0+0x473d is gateway-1.1+0x472d); in the same file an
    address is the same code, and summing them would make many small moves one."""
    total = out_of(report)
    out: dict[tuple[str, str], list[float]] = {}
    for f in report["functions"]:
        if f.get("kind") == "unknown" and f["name"].startswith("0x"):
            continue  # an address in no known mapping: where it lands differs per run
        key = function_key(f["name"], f["dso"])
        own, whole = f["self"], f.get("physical_total", f["total"])
        if key in changed and not own and not whole:  # inlined here, called there
            own, whole = f.get("inline_self", 0), f["total"]
            for holder, w in f.get("inlined_in", []):
                row = out.setdefault(function_key(holder, f["dso"]), [0.0, 0.0])
                row[0] -= w / total
        if not own and not whole:
            continue  # only ever inlined: its cost is its holders'
        if address_like(f["name"]) and f["dso"] not in shared:
            key = (UNNAMED, key[1])
        row = out.setdefault(key, [0.0, 0.0])
        row[0] += own / total
        # totals of two clones (or two unnamed addresses) overlap when one calls the
        # other: the larger bounds them, and their summed self
        row[1] = max(row[1], whole / total, row[0])
    return {k: (max(s, 0.0), max(t, s)) for k, (s, t) in out.items()}


def inline_changes(ra: dict, rb: dict) -> set:
    """Function identities compiled as functions of their own in one capture and only
    inlined in the other."""
    ca, ia = _compiled(ra)
    cb, ib = _compiled(rb)
    return (ia - ca) & cb | (ib - cb) & ca


def _compiled(report: dict) -> tuple[set, set]:
    """(identities holding sampled addresses, identities with inline frames)."""
    compiled, inlined = set(), set()
    for f in report["functions"]:
        key = function_key(f["name"], f["dso"])
        if f["self"] or f.get("physical_total", f["total"]):
            compiled.add(key)
        if f.get("inline_self") or f.get("inlined_in") or \
                f.get("physical_total", f["total"]) < f["total"]:
            inlined.add(key)
    return compiled, inlined


def out_of(report: dict) -> int:
    """What the functions' weights are out of: samples, or the µs of an off-CPU or wall
    view (build_report's view_name)."""
    return report.get("view_total") or report["samples"] or 1


def counted(report: dict) -> int:
    """How many independent observations the report's shares are of: its samples, or
    for an off-CPU or wall view (weighted by µs) its waits, the number that sets the
    noise of a share of time (a few long waits move it more than many short ones; this
    is its floor)."""
    if report.get("view_total"):
        waits = ((report.get("off_cpu") or {}).get("totals") or {}).get("switches")
        return int(waits or report["samples"] or 0)
    return int(report["samples"] or 0)


def movers(ra: dict, rb: dict, n: int = 30, repeats: tuple = ((), ())) -> dict:
    """From the two reports (build_report with every function): their function and DSO
    tables already hold what moved. Each row carries the half-width of its change's 99%
    interval (`self_noise`, `total_noise`, in points). `repeats`: the other captures of
    each side (the same build and label, reports too): a side's share is then the mean
    of its captures', and its noise the wider of the pooled samples' and the captures'
    own spread (noise.spread_half)."""
    sides = ([ra, *repeats[0]], [rb, *repeats[1]])
    shared = set.intersection(*({f["dso"] for f in r["functions"]} for r in sides[0]),
                              *({f["dso"] for f in r["functions"]} for r in sides[1]))
    changed = inline_changes(ra, rb)
    fa = [_function_shares(r, shared, changed) for r in sides[0]]
    fb = [_function_shares(r, shared, changed) for r in sides[1]]
    na, nb = (sum(counted(r) for r in side) for side in sides)
    rows = []
    for key in set().union(*fa, *fb):
        a = [f.get(key, (0.0, 0.0)) for f in fa]
        b = [f.get(key, (0.0, 0.0)) for f in fb]
        ds, hs = _change([x[0] for x in a], na, [x[0] for x in b], nb)
        dt, ht = _change([x[1] for x in a], na, [x[1] for x in b], nb)
        rows.append({"name": key[0], "dso": key[1],
                     "self_before": _mean_pp(a, 0), "self_after": _mean_pp(b, 0),
                     "total_before": _mean_pp(a, 1), "total_after": _mean_pp(b, 1),
                     "self_change": round(ds, 2), "total_change": round(dt, 2),
                     "self_noise": round(hs, 2), "total_noise": round(ht, 2)})
    rows.sort(key=lambda r: (-abs(r["self_change"]), -abs(r["total_change"]), r["name"]))
    da = [_library_shares(r) for r in sides[0]]
    db = [_library_shares(r) for r in sides[1]]
    dsos = []
    for dso in set().union(*da, *db):
        a = [d.get(dso, 0.0) for d in da]
        b = [d.get(dso, 0.0) for d in db]
        ds, hs = _change(a, na, b, nb)
        dsos.append({"dso": dso, "self_before": round(100 * _mean(a), 2),
                     "self_after": round(100 * _mean(b), 2), "self_change": round(ds, 2),
                     "self_noise": round(hs, 2)})
    dsos.sort(key=lambda r: (-abs(r["self_change"]), r["dso"]))
    return {"functions": [r for r in rows if moved(r, "self") or moved(r, "total")][:n],
            "dsos": [d for d in dsos if moved(d, "self")][:n],
            "largest": rows[0] if rows else None,  # (listed or not: the noise's example)
            "samples_before": ra["samples"], "samples_after": rb["samples"],
            "captures": [len(sides[0]), len(sides[1])]}


def _change(a: list[float], na: int, b: list[float], nb: int) -> tuple[float, float]:
    """(change in points, half-width) of a share measured in each side's captures
    (`a`, `b`: per capture, of `na` and `nb` samples in all)."""
    ma, mb = _mean(a), _mean(b)
    change, half = noise.share_change(ma * na, na, mb * nb, nb)
    spread = noise.spread_half([100 * x for x in a], [100 * x for x in b])
    return change, half if spread is None else max(half, spread)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _mean_pp(pairs: list[tuple[float, float]], i: int) -> float:
    return round(100 * _mean([p[i] for p in pairs]), 2)


def _library_shares(report: dict) -> dict[str, float]:
    total = out_of(report)
    return {k: v / total for k, v in library_self(report).items()}


def moved(row: dict, column: str) -> bool:
    """The row's `column` (self or total) changed by MOVER_MIN_PP and beyond its noise."""
    change = row[f"{column}_change"]
    return abs(change) >= MOVER_MIN_PP and noise.beyond(change, row[f"{column}_noise"])


def library_self(report: dict, keep=None) -> dict[str, int]:
    """Self weight per library identity (a library's builds and clones are one row);
    `keep(path)`: only the DSOs it accepts."""
    out: dict[str, int] = {}
    for d in report.get("dsos", []):
        if keep is not None and not keep(d["dso"]):
            continue
        key = library_identity(d["dso"])
        out[key] = out.get(key, 0) + d["self"]
    return out
