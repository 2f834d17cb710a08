"""analysis/ is a library: it must not import the web stack it is used by."""
import ast
import pathlib

from conftest import ROOT

FORBIDDEN = {"django", "celery", "redis", "kombu", "rest_framework", "perfweb"}


def test_analysis_imports_no_framework():
    offenders = []
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                if n.split(".")[0] in FORBIDDEN:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {n}")
    assert offenders == []


def test_the_check_sees_a_framework_import(tmp_path):
    """The scan above must be able to fail: it recognises a django import."""
    tree = ast.parse("from django.db import models\nimport celery\n")
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert len(found) == 2
