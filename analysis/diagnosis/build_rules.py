"""How the program was built, read from its frames: an unoptimized (debug) build.

An optimizing compiler inlines the standard library's one-line helpers (an iterator's
operator++, a tree node's _M_valptr, std::move, Rust's pointer `add`): in a release
build they never hold a sample of their own. A service deployed as its debug build
(CMake's Debug type, `-O0`, `cargo build` without --release) runs every one of them
as a call, and its profile is full of them; the fix is a flag, not code.
"""
from __future__ import annotations

from .context import Context
from .finding import Finding, cpus_text, focus_of, pct, severity_of


def _brief(name: str) -> str:
    """A template's name with its arguments elided (std::_Rb_tree_node<…>::_M_valptr):
    the helper's own name is what says it should have been inlined."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def unoptimized_build(ctx: Context, t: dict) -> Finding | None:
    hits = ctx.select(leaf_any=("unoptimized",), busy=True)
    samples = ctx.samples(hits)
    share = ctx.share(samples)
    if share < t["min_share"] or samples < t["min_samples"]:
        return None
    funcs = ctx.top_functions(hits, lambda f: "unoptimized" in ctx.cats[f])
    files = sorted({ctx.dso(f["id"]) for f in funcs if "id" in f})
    return Finding(
        "unoptimized-build", "An unoptimized (debug) build is running",
        severity_of(share, t), "high", share, samples,
        f"{pct(share)} of the busy samples{cpus_text(ctx.cpus(samples))} are in "
        f"helpers an optimizing compiler always inlines "
        f"({', '.join(_brief(f['name']) for f in funcs[:3])})"
        + (f", in {', '.join(files[:2])}" if files else "") +
        ": the program was built without optimization.",
        "Without optimization every iterator step, accessor and std::move is a call with "
        "its own frame, and values live in memory instead of registers: the same code "
        "typically runs 2-10 times slower than its release build.",
        "Deploy the release build: CMAKE_BUILD_TYPE=Release or RelWithDebInfo (-O2, "
        "with -g for symbols), `cargo build --release`, or add -O2 to CFLAGS/CXXFLAGS; "
        "keep -fno-omit-frame-pointer for readable profiles.",
        cpus=ctx.cpus(samples),
        evidence={"functions": funcs, "stacks": ctx.heaviest_stacks(hits)},
        focus=focus_of(funcs))
