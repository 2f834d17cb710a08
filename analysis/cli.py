"""`python -m analysis report FILE`: the engine without the web app.

Exit codes: 0 success, 2 the input could not be read (the message says why), 1 usage.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .errors import AnalysisError
from .export.folded import FLAMEGRAPH, INFERNO, PERIOD, SAMPLES, FoldOptions, write_folded
from .importers import load
from .report import build_report
from .symbols import symbolize


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command != "report":
        _parser().print_help()
        return 1
    for path in args.symbols:
        if not os.path.exists(path):
            print(f"error: symbol input {path} does not exist", file=sys.stderr)
            return 2
    try:
        profile = load(args.file)
        if args.symbols:
            symbolize(profile, args.symbols)
        out = sys.stdout
        if args.format == "folded":
            annotate = args.annotate or ""
            opts = FoldOptions(
                convention=args.convention, weight=args.weight, event=args.event,
                include_pid=args.pid, include_tid=args.tid,
                annotate_kernel=annotate in ("kernel", "all"),
                annotate_jit=annotate in ("jit", "all"), include_addrs=args.addrs)
            write_folded(profile, out, opts)
        else:
            report = build_report(profile, event=args.event, top=args.top, label=args.label)
            if args.format == "json":
                json.dump(report, out, indent=1)
                out.write("\n")
            else:
                out.write(render_text(report))
    except FileNotFoundError as e:
        print(f"error: {e.filename}: no such file", file=sys.stderr)
        return 2
    except AnalysisError as e:
        print(f"error: {args.file}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


def render_text(r: dict) -> str:
    lines = [f"format:     {r['format']}",
             f"event:      {r['event']}",
             f"samples:    {r['samples']}"]
    if r["duration_s"] is not None:
        lines.append(f"duration:   {r['duration_s']:.3f} s")
    if r["cpus_busy"] is not None:
        lines.append(f"CPUs busy:  {r['cpus_busy']:.2f}  ({r['cpus_busy'] * 100:.0f}% CPU)")
    for n in r["notes"]:
        lines.append(f"note:       {n}")
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
    lines.append(f"{'self':>8} {'self%':>7} {'total':>8} {'total%':>7}  function  [dso]")
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
    r.add_argument("--format", choices=("text", "json", "folded"), default="text")
    r.add_argument("--event", help="event to show (default: the first with samples)")
    r.add_argument("--top", type=int, default=None, help="only the N heaviest functions")
    r.add_argument("--label", default="", help='what the capture is, e.g. "idle"')
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
    return ap
