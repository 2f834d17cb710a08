"""The one door from Django into the engine (`analysis/`).

Views, tasks and commands call these modules; only they import `analysis`, which
tests/test_framework_free.py checks, so what the web app asks of the engine is all here:
analysis_run (a worker's analysis of one capture), profiles (stored profiles, cached per
process), explore (the explorer's views), history (a service's builds and comparisons),
exports (other tools' formats), buildids (what symbol files hold, for debuginfod).
"""
from analysis import ANALYSIS_VERSION

from .analysis_run import run_analysis

__all__ = ["ANALYSIS_VERSION", "run_analysis"]
