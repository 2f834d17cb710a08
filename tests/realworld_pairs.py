"""The checks every folder of real-software pairs gets (tests/fixtures/realworld*/): its
table names real files, and the comparison follows the throughput the load generator
printed: with rates the fix is an improvement and the reverse a regression, without them
the fix is never a regression."""
from analysis.compare import Rate, compare_reports


def assert_pairs_on_disk(here, pairs: dict, expected: dict) -> None:
    assert set(expected) == set(pairs)
    for kind, pair in pairs.items():
        for side in ("bad", "fixed"):
            assert (here / kind / pair[side]).is_file(), (kind, side)


def assert_follows_throughput(pair: dict, bad: dict, fixed: dict) -> None:
    rb, rf = Rate(pair["rate_bad"], pair["unit"]), Rate(pair["rate_fixed"], pair["unit"])
    assert compare_reports(bad, fixed, rb, rf)["verdict"] == "improvement"
    assert compare_reports(fixed, bad, rf, rb)["verdict"] == "regression"
    assert compare_reports(bad, fixed)["verdict"] in ("improvement", "inconclusive")
