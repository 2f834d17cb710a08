"""A comparison in other tools' formats: the movers as CSV (a spreadsheet), a summary as
Markdown (a ticket or a pull request), and the differential tree as the two-column folded
stacks of FlameGraph's difffolded.pl (`flamegraph.pl` draws them as a differential flame
graph). Every name in them came from an uploaded file: CSV cells that a spreadsheet would
run as a formula are quoted as text (OWASP's CSV injection advice), and Markdown cells are
code spans in which neither HTML nor a table's pipe can break out."""
from __future__ import annotations

import csv
import io
import re

MOVER_COLUMNS = ("kind", "name", "dso", "self_before", "self_after", "self_change",
                 "self_noise", "total_before", "total_after", "total_change", "total_noise")
#: what a spreadsheet reads as the start of a formula (OWASP: CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def movers_csv(cmp: dict) -> str:
    """One row per function and per DSO that moved beyond noise, shares in percent of
    each capture and changes in points, with the half-width of each change's 99%
    interval (compare/noise.py)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(MOVER_COLUMNS)
    movers = cmp.get("movers") or {}
    for m in movers.get("functions", []):
        w.writerow(["function", _cell(m["name"]), _cell(m["dso"])] +
                   [m.get(c) for c in MOVER_COLUMNS[3:]])
    for d in movers.get("dsos", []):
        w.writerow(["dso", "", _cell(d["dso"]), d["self_before"], d["self_after"],
                    d["self_change"], d.get("self_noise"), "", "", "", ""])
    return out.getvalue()


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return "'" + text if text.startswith(_FORMULA_START) else text


def summary_markdown(cmp: dict, title: str) -> str:
    """The verdict and its reason, the work done, the movers and the findings that
    appeared or went away, in GitHub-flavoured Markdown."""
    rates = cmp.get("rates") or {}
    lines = [f"## {_text(title)}", "",
             f"**Verdict: {cmp.get('verdict', '')}.** {_text(cmp.get('reason', ''))}", "",
             "| | before | after | change |", "|---|---|---|---|",
             f"| Throughput | {_rate(rates.get('before'))} | {_rate(rates.get('after'))} | |",
             f"| CPUs busy | {_num(cmp.get('cpus_before'))} | {_num(cmp.get('cpus_after'))} "
             f"| {_signed(cmp.get('cpus_change'))} |"]
    per = cmp.get("cpu_per_unit") or {}
    if per.get("change") is not None:
        lines.append(f"| CPU per {_text(per.get('unit', 'unit'))} | "
                     f"{1e3 * per['before']:.4g} ms | {1e3 * per['after']:.4g} ms | "
                     f"{per['change']:+.0%} |")
    reg = cmp.get("regression")
    if reg:
        lines += ["", f"**{_text(reg.get('severity', ''))}: {_text(reg.get('title', ''))}.** "
                  f"{_text(reg.get('summary', ''))}"]
    movers = (cmp.get("movers") or {}).get("functions", [])
    lines += ["", "### Functions that moved beyond sampling noise (99%)", ""]
    if movers:
        lines += ["| function | DSO | self before | self after | change | total before "
                  "| total after |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {_code(m['name'])} | {_code(m['dso'])} | {m['self_before']:.2f}% | "
                  f"{m['self_after']:.2f}% | {m['self_change']:+.2f} ± {m['self_noise']:.2f} | "
                  f"{m['total_before']:.2f}% | {m['total_after']:.2f}% |" for m in movers]
    else:
        lines.append("None.")
    for key, heading in (("findings_appeared", "Findings that appeared"),
                         ("findings_gone", "Findings that went away")):
        found = cmp.get(key) or []
        lines += ["", f"### {heading}", ""]
        lines += [f"- {_text(f.get('title', ''))}" +
                  (" (gone with the lower throughput: no fix)" if f.get("with_less_work")
                   else "") for f in found] or ["None."]
    return "\n".join(lines) + "\n"


def _rate(rate: dict | None) -> str:
    return "not given" if not rate else f"{rate['value']:.4g} {_text(rate['unit'])}"


def _num(x) -> str:
    return "unknown" if x is None else f"{x:.2f}"


def _signed(x) -> str:
    return "" if x is None else f"{x:+.2f}"


#: Markdown's punctuation that can start markup (CommonMark's escapable characters)
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>&~])")


def _text(text: str) -> str:
    """Prose from a file (a reason, a title): one line, every markup character escaped,
    so no name in it becomes a link, HTML or a table cell."""
    return _MARKUP.sub(r"\\\1", " ".join(str(text).split()))


def _code(text: str) -> str:
    """A name as a code span: a fence longer than any run of backticks in it, and its
    pipes escaped (GFM splits table cells at a pipe even inside code spans)."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def diff_folded(tree: dict) -> str:
    """`frame;frame;frame before after` per stack of the differential tree
    (compare.diff_tree with min_share 0: every stack, in samples), the input
    flamegraph.pl draws as a differential flame graph; frame names are tidied as
    stackcollapse-perf.pl tidies them (no `;`, no quotes)."""
    nodes = tree["nodes"]
    paths: list[str] = [""] * len(nodes)
    child_a = [0] * len(nodes)
    child_b = [0] * len(nodes)
    for i, n in enumerate(nodes[1:], start=1):
        name = " ".join(n["n"].replace(";", ":").split()) or "[unknown]"
        parent = n["p"]
        paths[i] = f"{paths[parent]};{name}" if parent > 0 else name
        child_a[parent] += n["a"]
        child_b[parent] += n["b"]
    out = []
    for i, n in enumerate(nodes[1:], start=1):
        a, b = n["a"] - child_a[i], n["b"] - child_b[i]
        if a or b:
            out.append(f"{paths[i]} {a} {b}")
    return "\n".join(out) + ("\n" if out else "")
