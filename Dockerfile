# syntax=docker/dockerfile:1
# The Phalanx operator image: `phalanx run` (configured by flags or PHALANX_* environment
# variables, as the Helm chart does), as a non-root numeric user, on a read-only root filesystem.
#   docker build -t ghcr.io/phalanx-sched/phalanx:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim

# 1. Wheels of phalanx and of every dependency (no compiler or network needed afterwards).
#    phalanx's wheel carries the scheduling core compiled by mypyc (PHALANX_MYPYC=1, setup.py):
#    about twice as fast a cycle as pure Python; gcc is needed here only, not at run time.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY tools/build_backend.py tools/
COPY operator/ operator/
RUN PHALANX_MYPYC=1 pip wheel --wheel-dir /wheels .

# 2. The runtime: the installed wheels only.
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="phalanx" \
      org.opencontainers.image.description="All-or-nothing, topology-aware, fair-share batch scheduling of GPU gangs on Kubernetes" \
      org.opencontainers.image.source="https://github.com/phalanx-sched/phalanx" \
      org.opencontainers.image.licenses="Apache-2.0"
# Bytecode is compiled at install time; nothing is written at run time (read-only root).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 HOME=/tmp
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels phalanx \
    && python -c "import phalanx.core.cycle as c; assert c.__file__.endswith('.so'), c.__file__"
USER 10001:10001
# Metrics (/metrics) and health (/healthz).
EXPOSE 8080 8081
ENTRYPOINT ["phalanx", "run"]
