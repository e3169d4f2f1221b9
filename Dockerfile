# The policy-scheduler operator image. The Helm chart (charts/policy-scheduler) runs it
# with `policy-scheduler run` options as container args; its image values point here.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The build context is the repository, narrowed by .dockerignore to what pip needs.
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir . \
    && cd / && rm -rf /src

# A fixed numeric uid, so that the pod's runAsNonRoot can be verified by the kubelet
# (and matches the chart's runAsUser).
RUN groupadd --system --gid 10001 scheduler \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin scheduler
USER 10001:10001
WORKDIR /tmp

# Health (GET /healthz) and metrics ports, the chart's defaults.
EXPOSE 8081 9090

ENTRYPOINT ["policy-scheduler", "run"]
