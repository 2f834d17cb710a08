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
