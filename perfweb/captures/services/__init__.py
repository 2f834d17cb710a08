"""The one door from Django into the engine (`analysis/`).

Views, tasks and commands call these functions; only modules in this package import
`analysis`, which tests/test_framework_free.py checks, so what the web app asks of the
engine is all in one place.
"""
from .analysis_run import run_analysis

__all__ = ["run_analysis"]
