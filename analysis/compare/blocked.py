"""What moved in off-CPU time between two captures with context switches: per kind of
wait (a lock, the disk, a peer...), the share of the threads' time, seconds per second
and, with rates, per unit of work, each change with its noise from the number of waits. A throughput drop with lower CPU use is explained
here: the time the threads spent waiting grew."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from . import noise

if TYPE_CHECKING:
    from .verdict import Rate

#: points of the threads' time a kind must move to be named
MOVED_PP = 1.0


def blocked_movers(ra: dict, rb: dict, rate_a: Rate | None = None,
                   rate_b: Rate | None = None) -> list[dict]:
    """Kinds of wait, largest move of share first; [] unless both captures have
    switches."""
    oa, ob = ra.get("off_cpu"), rb.get("off_cpu")
    if not oa or not ob or not oa.get("timed") or not ob.get("timed"):
        return []
    ka = {k["kind"]: k for k in oa.get("by_kind", [])}
    kb = {k["kind"]: k for k in ob.get("by_kind", [])}
    rows = []
    for kind in set(ka) | set(kb):
        a, b = ka.get(kind, {}), kb.get(kind, {})
        sa, sb = 100 * (a.get("share") or 0.0), 100 * (b.get("share") or 0.0)
        row = {"kind": kind, "benign": (a or b).get("benign", False),
               "before": round(sa, 2), "after": round(sb, 2), "change": round(sb - sa, 2),
               "noise": round(math.hypot(_noise(sa, a.get("waits")),
                                         _noise(sb, b.get("waits"))), 2),
               "per_second_before": a.get("per_second", 0.0) or 0.0,
               "per_second_after": b.get("per_second", 0.0) or 0.0,
               "under": [u["name"] for u in (b or a).get("under", [])]}
        if rate_a is not None and rate_b is not None:
            row["per_unit_before"] = row["per_second_before"] / rate_a.value
            row["per_unit_after"] = row["per_second_after"] / rate_b.value
            row["unit"] = rate_a.per
        rows.append(row)
    rows.sort(key=lambda r: (-abs(r["change"]), r["kind"]))
    return rows


def _noise(share_pp: float, waits: int | None) -> float:
    """Half-width in points of a kind's share of time made of `waits` waits: their
    count is Poisson (noise.count_change's reasoning), so the share's relative noise is
    1/sqrt(waits); a few long waits move it more than many short ones."""
    if not share_pp:
        return 0.0
    return noise.Z * noise.DISPERSION * share_pp / math.sqrt(max(waits or 1, 1))


def significant(rows: list[dict]) -> list[dict]:
    return [r for r in rows if noise.beyond(r["change"], r["noise"])]


def grew(rows: list[dict]) -> list[dict]:
    return [r for r in significant(rows) if not r["benign"] and r["change"] >= MOVED_PP]


def fell(rows: list[dict]) -> list[dict]:
    return [r for r in significant(rows) if not r["benign"] and r["change"] <= -MOVED_PP]


def describe(rows: list[dict]) -> str:
    """"threads waiting for a lock (under X): 0.0% -> 33.9% of their time (1.02 s per
    second; 0.735 ms per request)" for the first rows."""
    parts = []
    for r in rows[:2]:
        under = f" under {r['under'][0]}" if r["under"] else ""
        per = ""
        if "per_unit_after" in r:
            per = (f"; {r['per_unit_before'] * 1e3:.3g} -> {r['per_unit_after'] * 1e3:.3g} ms "
                   f"per {r['unit']}")
        parts.append(f"{_KIND_WORDS.get(r['kind'], r['kind'] + ' waits')}{under} "
                     f"{r['before']:.1f}% -> {r['after']:.1f}% of the threads' time "
                     f"({r['per_second_before']:.2f} -> {r['per_second_after']:.2f} s per "
                     f"second{per})")
    return "; ".join(parts)


_KIND_WORDS = {"lock": "lock waits", "server lock": "the server's lock waits",
               "interpreter lock": "interpreter-lock waits", "disk": "disk waits",
               "network": "network waits", "pipe": "pipe waits", "futex": "futex waits",
               "other": "other blocking"}
