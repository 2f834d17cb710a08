import os
import pathlib

import pytest

# every importer and transform checks the profile it returns (analysis/profile_check.py),
# here and in the workers and CLIs the tests start; set before anything imports analysis
os.environ.setdefault("PERFWEB_CHECK_PROFILES", "1")

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
PUBLIC = CORPUS / "public"
SPINPOOL = CORPUS / "cases" / "spinpool"
FIXTURES = ROOT / "tests" / "fixtures"


def pytest_configure(config):
    """The process that starts the run (not each xdist worker) drops what runs killed
    before they could clean up left behind: their test databases and Redis keys, named
    after the run (perfweb/settings_test.py) whose pid is no longer alive."""
    import os
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    from perfweb import settings_test
    from tests.stale_runs import drop_stale_runs
    drop_stale_runs(settings_test.RUN)


def pytest_collection_modifyitems(config, items):
    if not CORPUS.is_dir():
        raise pytest.UsageError(f"capture corpus not found at {CORPUS}")


@pytest.fixture(autouse=True, scope="session")
def _private_symbol_cache(tmp_path_factory):
    """Symbol indexes go to a throw-away cache, also for CLI subprocesses."""
    import os
    os.environ["PERFWEB_CACHE_DIR"] = str(tmp_path_factory.mktemp("symbol-cache"))
