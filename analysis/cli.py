"""`python -m analysis report FILE` and `python -m analysis compare BEFORE AFTER`: the
engine without the web app.

Exit codes: 0 success, 2 the input could not be read (the message says why), 1 usage.
"""
from __future__ import annotations

import argparse
import os
import sys

from .errors import AnalysisError
from .export.folded import FLAMEGRAPH, INFERNO, PERIOD, SAMPLES, FoldOptions, write_folded
from .importers import load
from .offcpu.views import ON_CPU, VIEWS, view
from .gc_pause import paused_gc
from .malloc_tuning import bound_heap

# the symbolizer (pyelftools, the demangler) and the comparison are imported when a
# command needs them: a report without symbols starts 0.08 s sooner; the report (its
# diagnosis) and the JSON writer likewise: folded output starts 0.05 s sooner; the
# speedscope and perf script writers too (0.01 s)


def main(argv: list[str] | None = None) -> int:
    bound_heap()
    with paused_gc():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command not in ("report", "compare"):
        _parser().print_help()
        return 1
    symbol_args = args.symbols + getattr(args, "symbols_before", []) + \
        getattr(args, "symbols_after", [])
    for path in symbol_args:
        if not os.path.exists(path):
            print(f"error: symbol input {path} does not exist", file=sys.stderr)
            return 2
    current = args.file if args.command == "report" else args.before
    try:
        if args.command == "compare":
            before = _load(args.before, args.symbols + args.symbols_before, args.inline)
            current = args.after
            after = _load(args.after, args.symbols + args.symbols_after, args.inline)
            return _compare(args, before, after, sys.stdout)
        if args.debuginfod and not _debuginfod():
            print("error: --debuginfod asks the servers in DEBUGINFOD_URLS, which names "
                  "none (set it to URLs separated by spaces)", file=sys.stderr)
            return 2
        profile = _load(args.file, args.symbols, args.inline, args.debuginfod)
        out = sys.stdout
        if args.format in BINARY_FORMATS:
            return _write_binary(profile, args, out)
        if args.view != ON_CPU and args.format in ("folded", "speedscope", "perf-script"):
            profile = view(profile, args.view)  # rows weighted by µs, of one event
        if args.format == "speedscope":
            from .export.speedscope import write_speedscope
            write_speedscope(profile, out, name=os.path.basename(args.file),
                             event_id=_event_id(profile, args))
        elif args.format == "perf-script":
            from .export.perf_script_text import write_perf_script
            write_perf_script(profile, out)
        elif args.format == "folded":
            annotate = args.annotate or ""
            event = _event_id(profile, args)
            opts = FoldOptions(
                convention=args.convention, weight=args.weight,
                event=None if event is None else profile.events[event].name,
                include_pid=args.pid, include_tid=args.tid,
                annotate_kernel=annotate in ("kernel", "all"),
                annotate_jit=annotate in ("jit", "all"), include_addrs=args.addrs)
            write_folded(profile, out, opts)
        else:
            from . import jsonio
            from .report import build_report
            report = build_report(profile, event=args.event, top=args.top, label=args.label,
                                  rate=_rate(args.rate, args.rate_unit), view_name=args.view)
            if args.format == "json":
                jsonio.write(report, out)
            else:
                out.write(render_text(report))
    except FileNotFoundError as e:
        print(f"error: {e.filename}: no such file", file=sys.stderr)
        return 2
    except AnalysisError as e:
        print(f"error: {current}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


def _event_id(profile, args) -> int | None:
    """The event an export shows: `--event`, else the one the page shows (a capture
    recorded with switch events beside its CPU samples exports its CPU samples, not
    the first event of the file, as stackcollapse-perf.pl would). `--event` of an
    off-CPU or wall view: the view's one event."""
    if args.event is None or args.view != ON_CPU:
        return profile.default_event()
    names = [e.name for e in profile.events]
    if args.event not in names:
        raise AnalysisError(f"no event {args.event!r} in this capture (it has: "
                            f"{', '.join(map(repr, names)) or 'none'})")
    return names.index(args.event)


#: gzipped files for other tools: pprof (`go tool pprof`, Pyroscope, Parca) and the
#: Firefox Profiler's Gecko format, the same files the capture page exports
BINARY_FORMATS = ("pprof", "firefox")


def _write_binary(profile, args, out) -> int:
    """The export of `--format`, of the event and view asked for, to stdout (which must
    not be a terminal: the file is gzip)."""
    from .explore import Query
    if out.isatty():
        print(f"error: --format {args.format} writes a gzipped file: redirect the output "
              f"(> capture.{'pb.gz' if args.format == 'pprof' else 'json.gz'})",
              file=sys.stderr)
        return 2
    event = _event_id(profile, args) if args.event is not None else None
    q = Query(view=args.view, event=event)
    if args.format == "pprof":
        from .export.pprof import pprof_bytes
        data = pprof_bytes(profile, q)
    else:
        from .export.firefox import firefox_bytes
        data = firefox_bytes(profile, q, name=os.path.basename(args.file))
    out.buffer.write(data)
    out.flush()
    return 0


def _load(path: str, symbols: list[str], inline: bool = True, debuginfod: bool = False):
    profile = load(path)
    if symbols or debuginfod:
        from .symbols import symbolize
        symbolize(profile, symbols, inline=inline,
                  debuginfod=_debuginfod() if debuginfod else None)
    return profile


def _debuginfod():
    """The client of DEBUGINFOD_URLS, caching beside the symbol indexes; None if unset."""
    from .symbols.debuginfod import Client
    from .symbols.index_cache import cache_dir
    return Client.from_env(os.environ, cache_dir().parent)


def _rate(values: tuple[float, ...] | None, unit: str):
    from .compare import Rate
    return None if values is None else Rate.of(values, unit)


def _positive(text: str) -> tuple[float, ...]:
    """One measurement or several, "7.5,7.9,8.1" or "7.5 7.9 8.1": their spread is the
    rate's noise (compare.rates.parse_measurements)."""
    from .compare.rates import parse_measurements
    try:
        return parse_measurements(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _compare(args, before, after, out) -> int:
    """With --view off-cpu or wall the movers are of that view (µs); the verdict is the
    same whatever the view."""
    from . import jsonio
    from .compare import compare
    from .report import build_report
    la, lb = args.label_before or args.label, args.label_after or args.label
    cmp = compare(before, after, la, lb,
                  report_before=build_report(before, label=la, view_name=args.view),
                  report_after=build_report(after, label=lb, view_name=args.view),
                  rate_before=_rate(args.rate_before, args.rate_unit),
                  rate_after=_rate(args.rate_after, args.rate_unit))
    cmp["view"] = args.view
    if args.format == "json":
        jsonio.write(cmp, out)
    else:
        out.write(render_comparison(cmp))
    return 0


def render_comparison(c: dict) -> str:
    lines = [f"verdict:    {c['verdict']}: {c['reason']}",
             f"samples:    {c['samples_before']} -> {c['samples_after']}"]
    if c["cpus_change"] is not None:
        lines.append(f"CPUs busy:  {c['cpus_before']:.2f} -> {c['cpus_after']:.2f} "
                     f"({c['cpus_change']:+.2f})")
    u = c.get("cpu_per_unit") or {}
    if "change" in u:
        lines.append(f"CPU per {u['unit']}: {1e3 * u['before']:.4g} ms -> "
                     f"{1e3 * u['after']:.4g} ms ({u['change']:+.1%})")
    if c["regression"]:
        lines.append(f"[{c['regression']['severity']}] {c['regression']['title']}: "
                     f"{c['regression']['summary']}")
    for key, title in (("findings_appeared", "appeared"), ("findings_gone", "went away")):
        for f in c[key]:
            gone_with = " (gone with the lower throughput: no fix)" \
                if f.get("with_less_work") else ""
            lines.append(f"finding {title}: [{f['severity']}] {f['title']}{gone_with}")
    for b in [r for r in c.get("blocked", []) if not r["benign"]][:5]:
        lines.append(f"blocked:    {b['kind']}: {b['before']:.1f}% -> {b['after']:.1f}% of "
                     f"the threads' time ({b['change']:+.1f})")
    lines.append("")
    # off-CPU and wall views: the leaf is the scheduler, what moved is the stack above
    col = "self" if c.get("view", ON_CPU) == ON_CPU else "total"
    rows = sorted(c["movers"]["functions"], key=lambda m: -abs(m[f"{col}_change"]))
    lines.append(f"{col + '% before':>12} {'after':>7} {'change':>8}  function  [dso]")
    for m in rows:
        lines.append(f"{m[col + '_before']:>11.2f}% {m[col + '_after']:>6.2f}% "
                     f"{m[col + '_change']:>+7.2f}  {m['name']}  [{m['dso']}]")
    if c["movers"]["dsos"]:
        lines.append("")
        lines.append(f"{'self% before':>12} {'after':>7} {'change':>8}  dso")
        for d in c["movers"]["dsos"]:
            lines.append(f"{d['self_before']:>11.2f}% {d['self_after']:>6.2f}% "
                         f"{d['self_change']:>+7.2f}  {d['dso']}")
    return "\n".join(lines) + "\n"


def render_text(r: dict) -> str:
    from .diagnosis.finding import seconds_text
    lines = [f"format:     {r['format']}",
             f"event:      {r['event']}",
             f"samples:    {r['samples']}"]
    if r["duration_s"] is not None:
        lines.append(f"duration:   {r['duration_s']:.3f} s")
    if r["cpus_busy"] is not None:
        lines.append(f"CPUs busy:  {r['cpus_busy']:.2f}  ({r['cpus_busy'] * 100:.0f}% CPU)")
    for n in r["notes"]:
        lines.append(f"note:       {n}")
    oc = r.get("off_cpu")
    if oc:
        t = oc["totals"]
        lines.append(f"off-CPU:    {t['off_cpu_s']:.3f} s over {t['threads']} threads "
                     f"({t['blocked_s']:.3f} s blocked, {t['preempted_s']:.3f} s waiting "
                     f"for a CPU; {t['on_cpu_s']:.3f} s on CPU), {t['switches']} switches")
        for b in oc["top_blocking"][:5]:
            where = " in ".join(x for x in (b["syscall"], b["caller"]) if x) or \
                ("(no stack recorded)" if not b["frames"] else b["frames"][-1])
            woke = "; woken by " + ", ".join(
                f"{w['comm']}" + (f" in {w['caller']}" if w["caller"] else "")
                for w in b["woken_by"][:2]) if b.get("woken_by") else ""
            lines.append(f"  blocked {b['seconds']:.3f} s in {b['count']} waits "
                         f"(mean {seconds_text(b['mean_ms'] / 1e3)}): {where}{woke}")
    if r["findings"]:
        lines.append("")
        lines.append("findings:")
        for f in r["findings"]:
            lines.append(f"  [{f['severity']}] {f['title']}")
            if f["summary"]:
                lines.append(f"      {f['summary']}")
            if f["fix"]:
                lines.append(f"      fix: {f['fix']}")
    total = r["samples"] or 1
    lines.append("")
    head = "self"
    if r.get("view", ON_CPU) != ON_CPU:
        total = r["view_total"] or 1
        head = "self µs"
        lines.append(f"view:       {r['view']}, weighted by microseconds "
                     f"({r['view_total'] / 1e6:.3f} s in all)")
    lines.append(f"{head:>8} {'self%':>7} {'total':>8} {'total%':>7}  function  [dso]")
    for f in r["functions"]:
        lines.append(f"{f['self']:>8} {100 * f['self'] / total:>6.2f}% {f['total']:>8} "
                     f"{100 * f['total'] / total:>6.2f}%  {f['name']}  [{f['dso']}]")
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m analysis",
                                 description="Read a perf capture and report where CPU went.")
    sub = ap.add_subparsers(dest="command")
    r = sub.add_parser("report", help="import FILE and print a report, JSON or folded stacks")
    r.add_argument("file", metavar="FILE",
                   help="perf script / perf report --stdio / folded text, plain or gzip")
    r.add_argument("--symbols", action="append", default=[], metavar="PATH",
                   help="symbol file, directory or archive (repeatable)")
    r.add_argument("--no-inline", dest="inline", action="store_false",
                   help="as perf's --no-inline: no inline frames or source lines from "
                        "DWARF debug info in the symbol files")
    r.add_argument("--debuginfod", action="store_true",
                   help="ask the debuginfod servers in DEBUGINFOD_URLS for the files of "
                        "build-ids the symbol inputs lack (cached in PERFWEB_CACHE_DIR)")
    r.add_argument("--format", choices=("text", "json", "folded", "speedscope", "perf-script",
                                        *BINARY_FORMATS),
                   default="text", help="speedscope JSON and perf-script text are for "
                                        "speedscope and Firefox Profiler; pprof and firefox "
                                        "write gzipped files (pprof's profile.proto, the "
                                        "Firefox Profiler's Gecko format)")
    r.add_argument("--event", help="event to show and export (default: the one the page "
                                   "shows, the first sampling event with samples)")
    r.add_argument("--top", type=int, default=None, help="only the N heaviest functions")
    r.add_argument("--label", default="", help='what the capture is, e.g. "idle"')
    r.add_argument("--view", choices=VIEWS, default=ON_CPU,
                   help="on-cpu (samples), off-cpu (blocked time at the switch-out stack) "
                        "or wall (both); off-cpu and wall weigh by microseconds and need "
                        "context switches in the capture")
    r.add_argument("--rate", type=_positive, metavar="R",
                   help="the throughput measured while the capture was taken, e.g. 53556")
    r.add_argument("--rate-unit", default="req/s", metavar="UNIT",
                   help="the unit of --rate (default req/s)")
    f = r.add_argument_group("folded output")
    f.add_argument("--convention", choices=(FLAMEGRAPH, INFERNO), default=FLAMEGRAPH,
                   help="spell frames like stackcollapse-perf.pl or inferno-collapse-perf")
    f.add_argument("--weight", choices=(PERIOD, SAMPLES), default=PERIOD,
                   help="weigh stacks by sample period (stackcollapse-perf.pl) or count")
    f.add_argument("--pid", action="store_true", help="process name with its PID")
    f.add_argument("--tid", action="store_true", help="process name with PID and TID")
    f.add_argument("--annotate", choices=("kernel", "jit", "all"),
                   help="suffix kernel frames _[k], JIT frames _[j]")
    f.add_argument("--addrs", action="store_true",
                   help="keep raw addresses on frames without symbols")
    c = sub.add_parser("compare", help="what grew and shrank from BEFORE to AFTER, shares "
                                       "normalised to each capture")
    c.add_argument("before", metavar="BEFORE")
    c.add_argument("after", metavar="AFTER")
    c.add_argument("--symbols", action="append", default=[], metavar="PATH",
                   help="symbol input for both captures (repeatable)")
    c.add_argument("--symbols-before", action="append", default=[], metavar="PATH")
    c.add_argument("--symbols-after", action="append", default=[], metavar="PATH")
    c.add_argument("--no-inline", dest="inline", action="store_false",
                   help="no inline frames from DWARF debug info (perf's --no-inline)")
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.add_argument("--view", choices=VIEWS, default=ON_CPU,
                   help="what the movers weigh: on-cpu samples, or off-cpu / wall µs")
    c.add_argument("--label", default="", help='what both captures are, e.g. "idle"')
    c.add_argument("--label-before", default="", help="the label of BEFORE, if it differs")
    c.add_argument("--label-after", default="", help="the label of AFTER, if it differs")
    c.add_argument("--rate-before", type=_positive, metavar="R",
                   help="the throughput while BEFORE was taken: the verdict is then CPU "
                        "per unit of work; several measurements (7.5,7.9,8.1) give the "
                        "spread a change of throughput is judged against")
    c.add_argument("--rate-after", type=_positive, metavar="R",
                   help="the throughput while AFTER was taken")
    c.add_argument("--rate-unit", default="req/s", metavar="UNIT",
                   help="the unit of both rates (default req/s)")
    return ap
