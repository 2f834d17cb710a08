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


def test_the_image_collects_the_static_files_outside_the_data_volume():
    """Compressed, hashed static files (perfweb/static_storage.py) are written when the
    image is built, where the /data volume mounted over it at run time cannot hide them,
    with a key of that step's own (none of the image's is kept)."""
    text = re.sub(r"\s*\\\n\s*", " ", (ROOT / "Dockerfile").read_text())  # continued lines
    (root,) = re.findall(r"^ENV STATIC_ROOT=(\S+)$", text, re.M)
    volume = re.search(r"PERFWEB_VAR_DIR=(\S+)", text).group(1)
    assert not root.startswith(volume)
    (run,) = [line for line in text.splitlines() if "collectstatic" in line]
    assert run.startswith("RUN SECRET_KEY=") and "manage.py collectstatic --noinput" in run
    assert "PERFWEB_VAR_DIR=/tmp/" in run  # the secret key file is not left in /data
    assert text.index("ENV STATIC_ROOT=") < text.index("collectstatic") < \
        text.index("USER perfweb")
