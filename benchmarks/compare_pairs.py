"""The comparison figure (issue 38): for each bad/fixed pair of the real-software folders
(tests/fixtures/realworld*/pairs.yaml), the verdict and its reason both ways, without the
throughput (what decides is what the captures show) and with it. The fix compared after
the bad side should be an improvement, the bad side after the fix a regression whose
reason names the component that grew.

    python benchmarks/compare_pairs.py tests/fixtures/realworld* [--cache DIR] [--rates]

--cache keeps each capture's report as JSON (the comparison reads only reports), so a
change of the comparison is measured again in seconds.
"""
import argparse
import json
import pathlib
import sys

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from analysis.compare import Rate, compare_reports  # noqa: E402
from analysis.importers import load  # noqa: E402
from analysis.report import build_report  # noqa: E402


def report_of(path: pathlib.Path, cache: pathlib.Path | None) -> dict:
    if cache is None:
        return build_report(load(path), label="load")
    key = cache / (str(path).strip("/").replace("/", "__") + ".json")
    if key.exists():
        return json.loads(key.read_text())
    report = build_report(load(path), label="load")
    key.write_text(json.dumps(report))
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", type=pathlib.Path, nargs="+")
    ap.add_argument("--cache", type=pathlib.Path)
    ap.add_argument("--rates", action="store_true", help="also with each side's throughput")
    args = ap.parse_args()
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    tally = {"regression": 0, "improvement": 0, "pairs": 0}
    for folder in args.folders:
        pairs = yaml.safe_load((folder / "pairs.yaml").read_text())
        for kind, pair in pairs.items():
            bad = report_of(folder / kind / pair["bad"], args.cache)
            fixed = report_of(folder / kind / pair["fixed"], args.cache)
            worse = compare_reports(fixed, bad)
            better = compare_reports(bad, fixed)
            tally["pairs"] += 1
            tally["regression"] += worse["verdict"] == "regression"
            tally["improvement"] += better["verdict"] == "improvement"
            print(f"== {folder.name}/{kind}: {pair['rate_fixed'] / pair['rate_bad']:.1f}x")
            print(f"   fixed->bad: {worse['verdict']}: {worse['reason'][:400]}")
            print(f"   bad->fixed: {better['verdict']}: {better['reason'][:200]}")
            if args.rates:
                rb, rf = Rate(pair["rate_bad"], pair["unit"]), Rate(pair["rate_fixed"],
                                                                     pair["unit"])
                print(f"   with rates: {compare_reports(fixed, bad, rf, rb)['verdict']}")
    print(f"fixed->bad regression {tally['regression']} of {tally['pairs']}; "
          f"bad->fixed improvement {tally['improvement']} of {tally['pairs']}")


if __name__ == "__main__":
    main()
