"""Values found by comparing them with every element: a list searched per lookup.

`x in list`, Array#include?, ArrayList.contains and in_array compare the value with the
elements one by one, so a lookup costs the list's length in comparisons; inside a loop
over another collection the work grows with the product of the two sizes, where a set or
a hash would make each lookup one hash and one comparison. The search functions
themselves are thin (their time is the comparisons they call, often inlined or in the C
library, whose callers are lost when the library has no frame pointers), so the finding
reads both: the comparisons' share of the CPU, and a search known by its name
(knowledge.LINEAR_SEARCH) running in the same capture. Comparisons without such a search
are sorting, or a tree or hash lookup, the work itself: nothing is said of them.
"""
from __future__ import annotations

from .context import Context
from .evidence import wilson
from .finding import Finding, cpus_text, focus_of, pct, severity_of


def linear_search(ctx: Context, t: dict) -> Finding | None:
    search = ctx.select(any_of=("linear_search",), busy=True)
    found = ctx.samples(search)
    if found < t["min_samples"] or ctx.share(found) < t["min_search_share"]:
        return None
    compares = ctx.select(leaf_any=("compare",), busy=True)
    hits = {**compares, **search}
    samples = ctx.samples(hits)
    share = ctx.share(samples)
    lo, hi = wilson(samples, ctx.total)
    if lo < t["min_share"]:
        return None
    searchers = ctx.top_functions(search, lambda f: "linear_search" in ctx.cats[f], 3)
    comparers = ctx.top_functions(compares, lambda f: "compare" in ctx.cats[f], 3)
    under = sum(w for sid, w in compares.items() if sid in search)
    callers = ctx.app_functions(search)
    where = f" under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
    seen = (f"{pct(ctx.share(under))} of them inside the search's own stacks"
            if under else "their callers are not in the stacks (code without frame "
            "pointers), so which of them the search makes is not measured")
    compared = ", ".join(f"{c['name']} {pct(c['share'])}" for c in comparers)
    return Finding(
        "linear-search", "Lookups that compare with every element (a list used as a set)",
        severity_of(lo, t), "high" if under or callers else "medium", share, samples,
        f"{pct(share)} of the busy samples{cpus_text(ctx.cpus(samples))} (95% interval "
        f"{pct(lo)}-{pct(hi)}) compare values "
        f"({compared}) or search "
        f"element by element ({', '.join(f['name'] for f in searchers)}, "
        f"{pct(ctx.share(found))}){where}; {seen}.",
        "A search of a list, an array or a vector compares the value with its elements "
        "one by one: each lookup costs the list's length in comparisons, and a loop that "
        "looks up every item of another collection does the product of the two sizes.",
        "Look values up in a set or a hash built once (Ruby: Set or Hash#key?; Python: "
        "set or dict; Java: HashSet; JavaScript: Set; PHP: array keys with isset), or "
        "sort once and search by bisection.",
        cpus=ctx.cpus(samples),
        evidence={"functions": searchers + comparers, "callers": callers,
                  "interval": [round(lo, 4), round(hi, 4)],
                  "stacks": ctx.heaviest_stacks(search)},
        focus=focus_of(callers or searchers))
