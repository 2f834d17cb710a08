# One image for the web server and the worker (docker-compose.yml picks the command).
# The front-end files the pages load (package.json), as package-lock.json pins them
FROM node:20-slim AS front
WORKDIR /front
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PERFWEB_VAR_DIR=/data
WORKDIR /app
# gcc and libc6-dev build the compiled loops (analysis/perfdata/_scan.c and the others that
# pyproject.toml lists)
RUN apt-get update && apt-get install -y --no-install-recommends libstdc++6 gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY analysis ./analysis
COPY perfweb ./perfweb
COPY templates ./templates
COPY static ./static
COPY manage.py ./
COPY --from=front /front/node_modules ./node_modules
RUN pip install --no-cache-dir . && useradd --create-home perfweb && mkdir -p /data \
    && chown perfweb /data
# the static files under hashed names with gzip and brotli copies, in the image (not on
# the /data volume, which would hide them); the key and folder are for this step only
ENV STATIC_ROOT=/app/staticfiles
RUN SECRET_KEY=collectstatic PERFWEB_VAR_DIR=/tmp/build python manage.py collectstatic \
    --noinput -v0 && rm -rf /tmp/build
USER perfweb
EXPOSE 8000
CMD ["gunicorn", "-c", "python:perfweb.gunicorn_conf", "perfweb.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
