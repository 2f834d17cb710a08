"""analysis/ is a library: it must not import the web stack it is used by."""
import ast

from conftest import ROOT

FORBIDDEN = {"django", "celery", "redis", "kombu", "rest_framework", "perfweb"}


def framework_imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [f"{path.name}:{node.lineno} imports {n}" for n in names
                  if n.split(".")[0] in FORBIDDEN]
    return found


def test_analysis_imports_no_framework():
    offenders = []
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        offenders += framework_imports(path)
    assert offenders == []


def test_the_scan_finds_framework_imports(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("import os\nfrom django.db import models\nimport celery.app\n")
    assert framework_imports(f) == ["bad.py:2 imports django.db", "bad.py:3 imports celery.app"]


def analysis_imports(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
            if (isinstance(node, ast.Import)
                and any(a.name.split(".")[0] == "analysis" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and node.module.split(".")[0] == "analysis")]


def test_only_the_services_layer_imports_the_engine():
    """Django code reaches analysis/ through perfweb/captures/services/ alone."""
    services = ROOT / "perfweb" / "captures" / "services"
    outside = []
    for path in sorted((ROOT / "perfweb").rglob("*.py")):
        if services not in path.parents:
            outside += analysis_imports(path)
    assert outside == []
    assert analysis_imports(services / "analysis_run.py")  # the scan sees imports
