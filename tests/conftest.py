import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
PUBLIC = CORPUS / "public"
SPINPOOL = CORPUS / "cases" / "spinpool"
FIXTURES = ROOT / "tests" / "fixtures"


def pytest_collection_modifyitems(config, items):
    if not CORPUS.is_dir():
        raise pytest.UsageError(f"capture corpus not found at {CORPUS}")


@pytest.fixture(autouse=True, scope="session")
def _private_symbol_cache(tmp_path_factory):
    """Symbol indexes go to a throw-away cache, also for CLI subprocesses."""
    import os
    os.environ["PERFWEB_CACHE_DIR"] = str(tmp_path_factory.mktemp("symbol-cache"))
