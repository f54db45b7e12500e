# reefgate container image. Build from the repository root:
#   docker build -t reefgate:0.1.0 .
#
# The base image is pinned to an exact Python patch release on an exact Debian
# release, so a rebuild does not move to another Python. To pin it by digest as
# well (recommended for production; the digest could not be looked up on the
# machine this file was written on, which has no container runtime or registry
# access), resolve it and pass it in:
#   docker buildx imagetools inspect python:3.11.14-slim-bookworm   # prints "Digest: sha256:..."
#   docker build --build-arg PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:<digest> -t reefgate .
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- build: a virtualenv with reefgate and its pinned dependencies ---
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml setup.py README.md constraints.txt ./
COPY gateway ./gateway
# A C compiler for the compiled modules: the hand-written C ones and those
# mypyc builds from the typed Python (setup.py); only this stage needs it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
# Dependencies at the exact versions in constraints.txt, so an image built
# later runs what was tested.
RUN python -m venv /opt/reefgate \
    && /opt/reefgate/bin/pip install --no-cache-dir -c constraints.txt '.[fast]'

# --- runtime: the virtualenv, the shipped config, a non-root user ---
FROM ${PYTHON_IMAGE}
ENV PATH=/opt/reefgate/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric UID, so Kubernetes' runAsNonRoot can verify it without a passwd lookup.
RUN groupadd --system --gid 10001 reefgate \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home \
       --shell /usr/sbin/nologin reefgate
COPY --from=build /opt/reefgate /opt/reefgate
WORKDIR /app
# The shipped config is the default; mount an operator's config directory over
# /app/config (gateway.yaml, teams/*.yaml) to replace it.
COPY config ./config
# State, relative to the working directory /app: the audit log
# (var/audit.jsonl) and its fingerprint key, the review store
# (var/reviews.sqlite3) and the forward proxy's CA (var/ca). /app/ca-public is
# where a sidecar's init step copies the public ca.pem for the agent (see
# deploy/); both belong to the gateway's user so fresh named volumes do too.
RUN mkdir -p /app/var /app/ca-public \
    && chown 10001:10001 /app/var /app/ca-public \
    && chmod 0750 /app/var
VOLUME ["/app/config", "/app/var"]
USER 10001:10001
# 8787: agents (reverse proxy: /<upstream>/..., /healthz, /readyz, /metrics)
# 8788: forward proxy for HTTPS_PROXY (forward_proxy.enabled)
# 8789: reviewers' admin listener (opens once a token is configured)
# Only the agents' port follows --host; the other two listen on
# forward_proxy.listen.host and admin.listen.host from the config (127.0.0.1 by
# default), so set those to 0.0.0.0 to publish them from the container.
EXPOSE 8787 8788 8789
# No curl in the slim image: the standard library asks /healthz, ignoring any
# proxy variables set for the gateway's own outbound traffic.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:8787/healthz', timeout=4)"]
ENTRYPOINT ["reefgate", "serve"]
# Listen on all interfaces inside the container; publish the port to the agents only.
CMD ["--config", "/app/config", "--host", "0.0.0.0"]
