"""docker-compose.yml and the Dockerfile stay consistent with the code (no Docker engine
runs here, so their structure is checked instead of a build)."""
import re
import subprocess
import sys

import yaml

from conftest import ROOT


S3_ENV = {"STORAGE_BACKEND": "s3", "AWS_STORAGE_BUCKET_NAME": "perfweb",
          "AWS_S3_ENDPOINT_URL": "http://minio:9000", "AWS_S3_ADDRESSING_STYLE": "path"}


def _compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_its_services_and_the_bucket_holds_the_files():
    """Web and worker keep every file in MinIO's bucket and share no volume, as workers
    on other hosts would (README, "Many hosts")."""
    doc = _compose()
    services = doc["services"]
    assert set(services) == {"web", "worker", "redis", "postgres", "minio"}
    web = services["web"]["command"]
    assert web.index("manage.py ensure_bucket") < web.index("manage.py migrate") < \
        web.index("gunicorn -c python:perfweb.gunicorn_conf perfweb.wsgi")
    assert services["worker"]["command"].startswith("celery -A perfweb worker --beat")
    assert services["worker"]["restart"] == services["web"]["restart"] == "unless-stopped"
    minio = services["minio"]
    assert re.fullmatch(r"minio/minio:RELEASE\.[0-9TZ-]+", minio["image"])  # pinned
    assert minio["command"].split()[:2] == ["server", "/data"]  # on :9000, its default
    assert "--address" not in minio["command"]
    assert minio["volumes"] == ["objects:/data"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert {k: env[k] for k in S3_ENV} == S3_ENV, name
        # MinIO's root credentials, from the same variables with the same defaults
        assert env["AWS_ACCESS_KEY_ID"] == minio["environment"]["MINIO_ROOT_USER"]
        assert env["AWS_SECRET_ACCESS_KEY"] == minio["environment"]["MINIO_ROOT_PASSWORD"]
        assert "MEDIA_ROOT" not in env
        assert set(services[name]["depends_on"]) == {"postgres", "redis", "minio"}
    web_volumes = {v.split(":")[0] for v in services["web"]["volumes"]}
    worker_volumes = {v.split(":")[0] for v in services["worker"]["volumes"]}
    assert web_volumes == {"web-data"} and worker_volumes == {"worker-data"}
    assert services["worker"]["environment"]["PERFWEB_CACHE_DIR"].startswith("/data/")
    assert set(doc["volumes"]) == {"web-data", "worker-data", "objects", "pgdata"}


def test_the_compose_environment_makes_the_bucket_the_default_storage(tmp_path):
    """perfweb/settings.py read with the worker's environment from docker-compose.yml:
    the default storage is the bucket on MinIO (nothing is asked of it)."""
    env = dict(_compose()["services"]["worker"]["environment"])
    env.update(PATH="/usr/bin:/bin", DJANGO_SETTINGS_MODULE="perfweb.settings",
               SECRET_KEY="deploy-test", PERFWEB_VAR_DIR=str(tmp_path),
               PERFWEB_CACHE_DIR=str(tmp_path / "cache"),
               AWS_ACCESS_KEY_ID="perfweb", AWS_SECRET_ACCESS_KEY="perfweb-change-me")
    code = ("import django; django.setup(); "
            "from django.core.files.storage import storages; s = storages['default']; "
            "print(type(s).__name__, s.bucket_name, s.endpoint_url, s.addressing_style, "
            "s.file_overwrite, s.max_memory_size)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["BucketStorage", "perfweb", "http://minio:9000", "path",
                                  "False", str(16 << 20)]


def test_the_image_and_compose_start_gunicorn_alike():
    """With perfweb/gunicorn_conf.py, whose logger scrubs tokens from gunicorn's logs
    (tests/web/test_token_logs.py runs the compose command's options)."""
    import json
    cmd = json.loads(re.search(r"^CMD (.*)$", (ROOT / "Dockerfile").read_text(), re.M)[1])
    web = _compose()["services"]["web"]["command"]
    assert " ".join(cmd) == web[web.index("gunicorn "):].rstrip('"')
    assert cmd[:4] == ["gunicorn", "-c", "python:perfweb.gunicorn_conf", "perfweb.wsgi"]


def test_dockerfile_copies_what_exists_and_installs_from_pyproject():
    text = (ROOT / "Dockerfile").read_text()
    for src in re.findall(r"^COPY (?!--from=)(\S+)", text, re.M):
        assert (ROOT / src).exists(), src
    assert "pip install --no-cache-dir ." in text
    # the front-end files from package-lock.json, built in a node stage, copied where
    # perfweb/static_storage.py finds them (beside manage.py) before collectstatic
    assert "COPY package.json package-lock.json ./" in text and "RUN npm ci " in text
    assert "COPY --from=front /front/node_modules ./node_modules" in text
    assert text.index("--from=front") < text.index("collectstatic")


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
