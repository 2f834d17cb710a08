"""docker-compose.yml and the Dockerfile stay consistent with the code (no Docker engine
runs here, so their structure is checked instead of a build)."""
import re

import yaml

from conftest import ROOT


def test_compose_has_the_four_services_and_shared_uploads():
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = doc["services"]
    assert set(services) == {"web", "worker", "redis", "postgres"}
    assert "gunicorn perfweb.wsgi" in services["web"]["command"]
    assert services["worker"]["command"].startswith("celery -A perfweb worker --beat")
    assert services["worker"]["restart"] == services["web"]["restart"] == "unless-stopped"
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert "uploads:/data" in services[name]["volumes"]
    assert set(doc["volumes"]) == {"uploads", "pgdata"}


def test_dockerfile_copies_what_exists_and_installs_from_pyproject():
    text = (ROOT / "Dockerfile").read_text()
    for src in re.findall(r"^COPY (\S+)", text, re.M):
        assert (ROOT / src).exists(), src
    assert "pip install --no-cache-dir ." in text
