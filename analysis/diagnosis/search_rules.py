"""Values found by comparing them with every element, and positions reached by walking
from one end: a list searched per lookup, a linked list indexed in a loop.

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

from . import knowledge
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
        "sort once and search by bisection." + "".join(
            f" {a}" for a in dict.fromkeys(knowledge.search_advice(f["name"])
                                           for f in searchers) if a),
        cpus=ctx.cpus(samples),
        evidence={"functions": searchers + comparers, "callers": callers,
                  "interval": [round(lo, 4), round(hi, 4)],
                  "stacks": ctx.heaviest_stacks(search)},
        focus=focus_of(callers or searchers))


def linear_walk(ctx: Context, t: dict) -> Finding | None:
    """A collection walked from one end to reach a position (knowledge.WALK): the last
    node of a GList, the n-th of a LinkedList, the n-th character of a UTF-8 string.
    These functions are their own cost (a pointer chase or a byte scan, no calls), so
    their share is the cost; which loop calls them is the application frame above."""
    walk = ctx.select(any_of=("walk",), busy=True)
    leaf = ctx.select(leaf_any=("walk",), busy=True)
    samples = ctx.samples(leaf)
    if samples < t["min_samples"]:
        return None
    lo, hi = wilson(samples, ctx.total)
    if lo < t["min_share"]:
        return None
    share = ctx.share(samples)
    walkers = ctx.top_functions(leaf, lambda f: "walk" in ctx.cats[f], 3)
    callers = ctx.callers_above(walk, lambda f: "walk" in ctx.cats[f])
    walked = ", ".join(f"{w['name']} {pct(w['share'])}" for w in walkers)
    where = (f", under {', '.join(c['name'] for c in callers[:2])}" if callers else
             "; their callers are not in the stacks (code without frame pointers: record "
             "with --call-graph dwarf to see which loop calls them)")
    return Finding(
        "linear-walk", "Walking a list or a string from its start to reach a position",
        severity_of(lo, t), "high" if callers else "medium", share, samples,
        f"{pct(share)} of the busy samples{cpus_text(ctx.cpus(samples))} (95% interval "
        f"{pct(lo)}-{pct(hi)}) walk a collection element by element "
        f"({walked}){where}.",
        "A linked list has no index and, in GLib's GList, no tail pointer: reaching its "
        "n-th element or appending to it walks the nodes one by one, as reaching the "
        "n-th character of a UTF-8 string decodes every character before it. Each call "
        "costs the position it reaches; done for every element in a loop, the work grows "
        "with the square of the size.",
        "Keep a position instead of finding it again: iterate once (an iterator, "
        "for-each, chars()/char_indices()), append at a kept tail (GLib: GQueue with "
        "g_queue_push_tail, or prepend and reverse once), or use an indexed structure "
        "(an array: std::vector, ArrayList, Vec<char> collected once).",
        cpus=ctx.cpus(samples),
        evidence={"functions": walkers, "callers": callers,
                  "interval": [round(lo, 4), round(hi, 4)],
                  "stacks": ctx.heaviest_stacks(walk)},
        focus=focus_of(callers or walkers))
