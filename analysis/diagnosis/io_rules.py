"""Rules about files: commits that wait for the disk (fsync and friends), and writes and
logging on the hot path. The two are kept apart because their fixes differ: a database
bound by fsync needs fewer or grouped commits, a logger needs buffering or a lower level.
"""
from __future__ import annotations

import re
from collections import Counter

from . import format_facts, knowledge
from .context import Context
from .evidence import wilson
from .finding import Finding, cpus_text, focus_of, pct, severity_of
from .recognise import runtime_of, server_of, verb, who_runs

GENERIC_COMMIT_FIX = (
    "Make fewer durable commits: batch many writes per commit (one transaction, one "
    "fsync for many rows or records), let concurrent commits share one flush (group "
    "commit), or, where losing the last second of writes on a crash is acceptable, "
    "fsync once a second in the background instead of per write.")

LOGGING_FIX = (
    "Buffer the output and flush in the background (an asynchronous logger, a dedicated "
    "writer thread), lower the log level on hot paths, and avoid fflush/fsync per line.")


def _commit_calls(ctx: Context, stacks: dict[int, int]) -> Counter:
    """Which call makes each stack's writes durable: its outermost commit frame (the C
    library's fdatasync, or the kernel's __x64_sys_fdatasync without user frames)."""
    out: Counter = Counter()
    for sid, w in stacks.items():
        name = next((ctx.name(f) for f in reversed(ctx.funcs[sid])
                     if "commit_io" in ctx.cats[f]), "?")
        m = knowledge.SYSCALL_ENTRY.match(name)
        out[m.group(1) if m else name.lstrip("_").removeprefix("libc_")] += w
    return out


#: glibc's internal names of its system-call wrappers: __GI___libc_write is write(2),
#: __libc_pwrite is pwrite64(2)
_WRAPPER = re.compile(r"^(__GI_)?_*(libc_)?")
_SYSCALL_NAMES = {"pwrite": "pwrite64", "pread": "pread64"}


def _wrapped_call(name: str) -> str:
    call = _WRAPPER.sub("", name)
    return _SYSCALL_NAMES.get(call, call)


def _write_calls(ctx: Context, stacks: dict[int, int]) -> Counter:
    out: Counter = Counter()
    for sid, w in stacks.items():
        call = knowledge.syscall_of([ctx.name(f) for f in ctx.funcs[sid]])
        if call is None:
            call = next((_wrapped_call(ctx.name(f)) if "write_call" in ctx.cats[f]
                         else ctx.name(f) for f in reversed(ctx.funcs[sid])
                         if ctx.cats[f] & {"sync_io", "write_call"}), "?")
        out[call] += w
    return out


def _off_cpu_note(ctx: Context, stacks: dict[int, int]) -> str:
    used = ctx.cpus(ctx.samples(ctx.same_threads(stacks)))
    if used is None:
        return ""
    who = who_runs(ctx, stacks)
    return (f" The {who} {verb(who, 'uses', 'use')} {used:.2f} CPUs in all: the wait for "
            f"the disk itself is off-CPU, which a CPU profile does not sample.")


def _bound_unknown(ctx: Context, t: dict, used: float | None, capacity) -> str:
    """Under load, what the capture lacks to say whether the committing threads are
    mostly off-CPU (which makes the commits a medium or high cause): the duration or
    the threads (perf report text), or the host's CPU count (perf script text)."""
    if "load" not in ctx.label:
        return ""
    if used is None or not ctx.has_threads():
        lacks = (format_facts.busy_unknown(ctx.profile, ctx.event_id)[1]
                 if ctx.cpus_busy is None else
                 f"The capture ({format_facts.format_name(ctx.profile)}) does not say "
                 f"which thread ran which sample")
    elif not capacity.known and used < t["off_cpu_use"] * capacity.most:
        lacks = format_facts.cpu_count_unknown(ctx.profile)
    else:
        return ""
    return (f" Whether the threads that commit are mostly off-CPU, waiting for the disk "
            f"(a larger cause than these samples), the capture cannot say. {lacks}.")


def _file_writes(ctx: Context) -> dict[int, int]:
    """Stacks writing files: through a file system's write path (sync_io), or in a
    write(2) whose sample stopped before the kernel chose the file's write path, in a
    thread whose other writes all go to files (its share of the unknown ones)."""
    known = ctx.select(any_of=("sync_io",), none_of=("commit_io",))
    to_sockets = dict(ctx.having("socket_io"))
    file_threads = set(ctx.threads(known)) - set(ctx.threads(to_sockets))
    out = dict(known)
    for sid, w in ctx.having("write_call").items():
        if sid in out or sid in to_sockets:
            continue
        if set(ctx.thread_of.get(sid, {})) <= file_threads and ctx.thread_of.get(sid):
            out[sid] = w
    return out


def commit_io(ctx: Context, t: dict) -> Finding | None:
    hits = dict(ctx.having("commit_io"))
    samples = ctx.samples(hits)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    calls = _commit_calls(ctx, hits)
    call, _ = calls.most_common(1)[0]
    callers = ctx.callers_above(hits, lambda f: "commit_io" in ctx.cats[f])
    server = server_of(ctx, hits)
    where = (f" under {', '.join(c['name'] for c in callers[:2])}" if callers else
             " (its callers are not in the stacks: the program or its C library has no "
             "frame pointers)")
    of = f" in {server.name}" if server else ""
    calls_text = ", ".join(f"{k} {pct(ctx.share(v))}" for k, v in calls.most_common(3))
    funcs = ctx.top_functions(hits, lambda f: "commit_io" in ctx.cats[f])
    # under load, threads that commit and are mostly off-CPU are bound by the disk: the
    # samples show only the CPU side of each commit, the wait is larger
    used, capacity, _ = ctx.thread_use(set(ctx.threads(hits)))
    # (a fifth of its samples under load is at least a medium cause: each sampled
    # fdatasync stands for a far longer wait)
    # (without the host's CPU count, only what holds on the smallest host it can be)
    bound = "load" in ctx.label and used is not None and capacity.fewest and \
        used < t["off_cpu_use"] * capacity.fewest
    severity = severity_of(share, t)
    if bound:
        severity = "high" if share >= t["medium"] else "medium"
    elif "load" in ctx.label:
        # (under load, each sampled fdatasync is the CPU side of a far longer wait: the
        # threads' use of the CPUs decides only whether it is the whole limit)
        severity = "medium" if severity == "low" else severity
    return Finding(
        "commit-io", f"Commits wait for the disk: {call} in {pct(share)} of samples{of}",
        severity, "high", share, samples,
        f"{pct(share)} of samples{cpus_text(ctx.cpus(samples))} make writes durable "
        f"({calls_text}){where}.{_off_cpu_note(ctx, hits)}"
        f"{'' if bound else _bound_unknown(ctx, t, used, capacity)}",
        "Every durable commit waits until the device confirms the write (a cache flush "
        "on most disks): the thread sleeps for it, and work that must follow the commit "
        "(the next transaction, the reply) waits too, so throughput follows the disk's "
        "flush latency instead of the CPU.",
        (server.commit_fix if server and server.commit_fix else GENERIC_COMMIT_FIX),
        cpus=ctx.cpus(samples),
        evidence={"functions": callers + funcs[:4],
                  "syscalls": [{"name": k, "samples": v, "share": round(ctx.share(v), 4)}
                               for k, v in calls.most_common(5)],
                  "software": server.name if server else None,
                  "stacks": ctx.heaviest_stacks(hits)},
        focus=focus_of(callers or funcs))


def sync_io(ctx: Context, t: dict) -> Finding | None:
    """Writes to files (not fsync: commit_io) and, in a process that writes files, the
    formatting of what it writes (timestamps, %-formatting, caller line numbers)."""
    writes = _file_writes(ctx)
    if ctx.share(ctx.samples(writes)) < t["min_write_share"]:
        return None
    fmt = {sid: w for sid, w in ctx.having("log_format").items() if sid not in writes}
    hits = {**writes, **fmt}
    samples = ctx.samples(hits)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    callers = ctx.app_functions(hits)
    funcs = ctx.top_functions(writes, lambda f: "sync_io" in ctx.cats[f])
    fmt_funcs = ctx.top_functions(fmt, lambda f: "log_format" in ctx.cats[f])
    calls = _write_calls(ctx, writes)
    where = f" under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
    text = (f"{pct(share)} of samples{cpus_text(ctx.cpus(samples))} write files "
            f"({', '.join(f'{k} {pct(ctx.share(v))}' for k, v in calls.most_common(2))}: "
            f"{', '.join(f['name'] for f in funcs[:3])}){where}")
    if fmt:
        named = ", ".join(f"{x['name']} {pct(x['share'])}" for x in fmt_funcs[:4])
        text += f"; {pct(ctx.share(ctx.samples(fmt)))} format what is written ({named})"
    server = server_of(ctx, writes)
    runtime = runtime_of(ctx, hits)
    # the write calls decide how bad it is: stdio's buffering (fputs, _IO_file_xsputn
    # copying into the FILE buffer) and the formatting of what is written are said with
    # them, but a program whose output is its work (a report, an export, a log written
    # through a buffer) formats and buffers because it must
    calls_made = ctx.having("write_call")
    severity = severity_of(ctx.share(sum(w for sid, w in writes.items()
                                         if sid in calls_made)), t)
    if server is not None and server.commit_fix:
        # a database writing its log and data files is doing its work; what its
        # durability costs is commit-io's to judge
        severity = "low"
        fix = (f"These are {server.name}'s own log and data-file writes; fewer, larger "
               f"commits write less per unit of work. " + server.commit_fix)
    elif runtime is not None and runtime.logging_fix:
        fix = runtime.logging_fix
        if fmt:
            # the logging code itself runs as interpreted code, inside the interpreter's
            # frames: what is visible of it (the C helpers, the writes) is a lower bound
            severity = "medium" if severity == "low" else severity
            text += (f"; the logging code itself runs inside {runtime.name}'s interpreter "
                     f"frames, so its real share is larger")
    else:
        fix = LOGGING_FIX
    return Finding(
        "sync-io", "Synchronous writes and logging on the hot path", severity,
        "high" if callers or fmt else "medium", share, samples, text + ".",
        "Each write, flush or fsync made by the thread doing the work waits for the kernel "
        "and the file system; logging a line per request with a flush turns every request "
        "into system calls, and formatting each record (timestamps, the caller's line, "
        "the arguments) can cost more than the request's own work.",
        fix, cpus=ctx.cpus(samples),
        evidence={"functions": funcs + fmt_funcs, "callers": callers,
                  "stacks": ctx.heaviest_stacks(hits)},
        focus=focus_of(callers or funcs))


def direct_reads(ctx: Context, t: dict) -> Finding | None:
    """Reads that bypass the page cache (O_DIRECT) under load. Only a program that keeps
    its own cache reads that way (a database's buffer pool), so each such read is a
    miss of that cache: its working set does not fit the memory it was given. The
    kernel's part of a read is otherwise the data's work (kernel-heavy says it at low);
    here the reads themselves are the fault."""
    stacks = ctx.select(all_of=("direct_io", "file_read"), busy=True)
    samples = ctx.samples(stacks)
    if samples < t["min_samples"]:
        return None
    lo, hi = wilson(samples, ctx.total)
    if lo < t["min_share"]:
        return None
    share = ctx.share(samples)
    callers = ctx.app_functions(stacks)
    where = f" under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
    server = server_of(ctx, stacks)
    readers = ctx.top_functions(stacks, lambda f: "direct_io" in ctx.cats[f], 2)
    return Finding(
        "direct-reads", "Reads that bypass the page cache: the program's own cache misses",
        severity_of(lo, t), "high" if callers else "medium", share, samples,
        f"{pct(share)} of the busy samples{cpus_text(ctx.cpus(samples))} (95% interval "
        f"{pct(lo)}-{pct(hi)}) read files with direct I/O (O_DIRECT: "
        f"{', '.join(f['name'] for f in readers)})"
        f"{where}" + (f", in {server.name}" if server else "") + ": every such read goes "
        f"to the storage device, and the thread waits for it.",
        "A program reads with O_DIRECT when it keeps its own cache of the file's pages (a "
        "database's buffer pool) and does not want the kernel's page cache to keep a "
        "second copy. Under steady load its reads are that cache's misses: the data the "
        "requests touch is larger than the memory the cache was given.",
        "Give the program's cache the memory the data it serves needs (MariaDB/MySQL: "
        "innodb_buffer_pool_size, its 128M default fits no real table; commonly 50-75% "
        "of the memory of a dedicated host), check its hit rate (InnoDB: "
        "Innodb_buffer_pool_reads against Innodb_buffer_pool_read_requests), or read "
        "less per request (an index that covers the query).",
        cpus=ctx.cpus(samples),
        evidence={"callers": callers, "interval": [round(lo, 4), round(hi, 4)],
                  "functions": ctx.top_functions(
                      stacks, lambda f: bool(ctx.cats[f] & {"direct_io", "file_read"}), 4),
                  "stacks": ctx.heaviest_stacks(stacks)},
        focus=focus_of(callers))
