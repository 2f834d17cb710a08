"""Set-up repeated under load: sessions started and ended per unit of work.

A service under steady load that spends a tenth of its CPU connecting, handshaking,
logging in and tearing connections down does so per request: set-up done once (a pool,
a kept connection, a reused client or channel) leaves nothing of it in a profile taken
after start-up. The cost is spread over the call tree (the kernel's connect and close,
the handshake's crypto, the server's authentication) and never tops a table, so it is
found by the frames that say "a session begins or ends" (knowledge.SETUP), on the
busy samples of a capture labelled as under load.
"""
from __future__ import annotations

from .context import Context
from .finding import Finding, cpus_text, focus_of, pct, severity_of


def setup_repeated(ctx: Context, t: dict) -> Finding | None:
    if "load" not in ctx.label or not ctx.total:
        return None
    hits = ctx.select(any_of=("setup",), busy=True)
    samples = ctx.samples(hits)
    share = ctx.share(samples)
    if share < t["min_share"] or samples < t["min_samples"]:
        return None
    funcs = ctx.top_functions(hits, lambda f: "setup" in ctx.cats[f])
    callers = ctx.app_functions(hits)
    where = f" under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
    return Finding(
        "setup-repeated", "Connections set up and torn down under load",
        severity_of(share, t), "high", share, samples,
        f"{pct(share)} of the busy samples{cpus_text(ctx.cpus(samples))} connect, "
        f"handshake, log in or close a session ({', '.join(f['name'] for f in funcs[:3])})"
        f"{where}: under steady load, set-up that costs this much is repeated per request.",
        "Starting a session (TCP connect and accept, a TLS or protocol handshake, the "
        "server authenticating the client, setting up and resetting its state) costs "
        "round trips and CPU on both sides, many times the cost of a small request on a "
        "session that exists.",
        "Keep sessions open and reuse them: a connection pool for the database, HTTP "
        "keep-alive, one long-lived client or channel per process instead of one per "
        "call, TLS session resumption where a new connection cannot be avoided.",
        cpus=ctx.cpus(samples),
        evidence={"functions": funcs, "callers": callers,
                  "stacks": ctx.heaviest_stacks(hits)},
        focus=focus_of(callers or funcs))
