# The policy-scheduler operator image. The Helm chart (charts/policy-scheduler) runs it
# with `policy-scheduler run` options as container args; its image values point here.

# The base image by digest, so that every build starts from the same bytes. The digest
# also freezes Debian's and Python's security fixes: refresh it regularly, and for every
# release (docs/operations.md, "Dependencies and the image"). The current digest of the
# tag (the "Digest:" line, an index for every platform):
#   docker buildx imagetools inspect python:3.11-slim
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The build context is the repository, narrowed by .dockerignore to what pip needs.
# constraints.txt pins every runtime dependency, transitive ones too, to the versions
# tested (pyproject.toml only bounds them): the image does not change with what PyPI
# released on the day of the build.
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir -c constraints.txt . \
    && cd / && rm -rf /src

# A fixed numeric uid, so that the pod's runAsNonRoot can be verified by the kubelet
# (and matches the chart's runAsUser).
RUN groupadd --system --gid 10001 scheduler \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin scheduler
USER 10001:10001
WORKDIR /tmp

# Health (GET /healthz, /readyz) and metrics ports, the chart's defaults.
EXPOSE 8081 9090

ENTRYPOINT ["policy-scheduler", "run"]
