"""The holdout figure (issue 34): for each bad/fixed pair of a real-software folder
(tests/fixtures/realworld*/pairs.yaml), the findings of medium or high severity the
diagnosis gives each side, beside the cause an expert names and what the expert says of
the fixed capture. Whether a bad side's findings name the cause is an expert's reading of
this output; a fixed side with any medium/high finding that names a problem is a false
alarm unless its README names that problem too.

    python benchmarks/holdout_findings.py tests/fixtures/realworld-holdout3 [--rates]
        [--all] [--no-runtime-tables]
"""
import argparse
import pathlib
import sys

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from analysis.compare import Rate  # noqa: E402
from analysis.importers import load  # noqa: E402
from analysis.report import build_report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=pathlib.Path)
    ap.add_argument("--rates", action="store_true", help="give each side its throughput")
    ap.add_argument("--all", action="store_true", help="list low and info findings too")
    ap.add_argument("--no-runtime-tables", action="store_true",
                    help="the general pass alone: analysis/diagnosis/runtimes.py emptied")
    args = ap.parse_args()
    if args.no_runtime_tables:
        from analysis.diagnosis import runtimes
        runtimes._DSO_RX.clear(), runtimes._SIG_RX.clear()
        for rt in runtimes.RUNTIMES:
            runtimes._SUB_RX[rt.name] = []
        runtimes.RUNTIMES = ()
    pairs = yaml.safe_load((args.folder / "pairs.yaml").read_text())
    for kind, pair in pairs.items():
        print(f"== {kind} ({pair.get('kind', '')})")
        print(f"   cause: {pair['cause']}")
        print(f"   fixed: {pair.get('fixed_expect', '')}")
        for side in ("bad", "fixed"):
            rate = Rate(pair[f"rate_{side}"], pair["unit"]) if args.rates else None
            report = build_report(load(args.folder / kind / pair[side]), label="load",
                                  rate=rate)
            shown = [f for f in report["findings"]
                     if args.all or f["severity"] in ("medium", "high")]
            print(f"   {side}: {len(report['findings'])} findings, "
                  f"{len(shown)} shown; cpus {report.get('cpus_busy')}")
            for f in shown:
                print(f"     [{f['severity']}] {f['rule']}: {f['title']}")
                print(f"        {f['summary'][:300]}")
        print()


if __name__ == "__main__":
    main()
