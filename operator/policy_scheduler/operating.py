"""Start everything: API client, runtime, metrics, leadership, Kopf; stop it all cleanly.

``operate(options)`` runs until cancelled or ``stop_flag`` is set. Kopf watches every
kind on all replicas, so a standby's cache is warm when it takes over; only the leader
runs the scheduling loop. On becoming leader the replica first LISTs the cluster into
its cache (so the first decision never sees a half-known cluster), then schedules.
When leadership is lost the loop is cancelled at once; bindings already sent finish,
pods not yet bound are forgotten and will be decided by the new leader.

Pods are watched cluster-wide even when ``--namespace`` limits which pods are
scheduled: pods of every namespace use node resources, and a scheduler that did not
count them would overcommit nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import kopf
from kubernetes_asyncio import client, config

from . import handlers
from .options import Options
from .runtime.kubeapi import KubeApi, RateLimiter
from .runtime.leadership import LeaderElector
from .runtime.listing import list_cluster
from .runtime.metrics import Metrics
from .runtime.scheduling import SchedulerRuntime

logger = logging.getLogger(__name__)

__all__ = ["Operator", "Options", "load_client", "operate", "untrust_env"]


async def load_client(burst: int, *, proxy_env: bool = True) -> client.ApiClient:
    """In-cluster credentials when running in a pod, else KUBECONFIG / ~/.kube/config.

    Outside a cluster, proxy variables and ~/.netrc are honoured unless ``proxy_env``
    is False.
    """
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await config.load_kube_config(client_configuration=configuration)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, burst)
    api_client = client.ApiClient(configuration)
    if os.environ.get("KUBERNETES_SERVICE_HOST") or not proxy_env:
        untrust_env(api_client)
    return api_client


def untrust_env(api_client: client.ApiClient) -> None:
    """Skip aiohttp's per-request look-up of proxy variables and ~/.netrc.

    kubernetes-asyncio opens its session with ``trust_env=True``, so every request makes
    a round trip through a thread pool to read ``~/.netrc``: two per scheduled pod
    (binding, event). In a cluster the API server is reached directly, never through a
    proxy from the environment, so the look-up is pure overhead there.
    """
    session = getattr(api_client.rest_client, "pool_manager", None)
    if session is not None and hasattr(session, "_trust_env"):
        session._trust_env = False


class Operator:
    """The parts of a running scheduler, wired; tests build one against the emulator."""

    def __init__(self, options: Options, api_client: client.ApiClient) -> None:
        self.options = options
        self.api_client = api_client
        self.api = KubeApi(api_client, RateLimiter(options.qps, options.burst))
        self.metrics = Metrics()
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(
                self.api,
                namespace=options.lease_namespace,
                name=options.lease_name,
                identity=options.identity,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
            )
        self.runtime = SchedulerRuntime(
            self.api,
            default_scheduler_name=options.scheduler_name,
            bind_workers=options.bind_workers,
            volume_binding_timeout=options.volume_binding_timeout,
            metrics=self.metrics,
            is_leader=self.is_leader,
            namespaces=options.namespaces,
        )
        self._loop_task: asyncio.Task[None] | None = None
        self._background: list[asyncio.Task[Any]] = []
        self._stop_metrics: Callable[[], Awaitable[None]] | None = None

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    async def prime(self) -> None:
        """Everything LISTed, through the same door as the watch events."""
        for obj in await list_cluster(self.api_client):
            self.runtime.handle(None, obj)

    async def start_scheduling(self) -> None:
        await self.prime()
        self.metrics.leader(self.options.identity, True)
        self._loop_task = asyncio.create_task(self.runtime.run(), name="scheduling-loop")
        logger.info("scheduling pods as %s", self.options.identity)

    async def stop_scheduling(self) -> None:
        self.metrics.leader(self.options.identity, False)
        task, self._loop_task = self._loop_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            logger.info("stopped scheduling")

    async def start(self) -> None:
        """Metrics, housekeeping, and leader election (or scheduling at once)."""
        if self.options.metrics_port:
            self._stop_metrics = await self.metrics.serve(
                self.options.host, self.options.metrics_port
            )
        self._background = [
            asyncio.create_task(self.runtime.policy_status.run_refresher(), name="policy-status"),
            asyncio.create_task(self._housekeeping(), name="housekeeping"),
        ]
        if self.elector is not None:
            self._background.append(
                asyncio.create_task(
                    self.elector.run(self.start_scheduling, self.stop_scheduling),
                    name="leader-election",
                )
            )
        else:
            await self.start_scheduling()

    async def stop(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        await self.stop_scheduling()
        if self._stop_metrics is not None:
            await self._stop_metrics()
            self._stop_metrics = None

    def memo(self) -> kopf.Memo:
        """What the handlers find in Kopf's ``memo``."""
        return kopf.Memo(runtime=self.runtime)

    async def run(
        self,
        *,
        stop_flag: asyncio.Event | threading.Event | None = None,
        ready_flag: asyncio.Event | threading.Event | None = None,
        registry: kopf.OperatorRegistry | None = None,
    ) -> None:
        await self.start()
        liveness = (
            f"http://{self.options.host}:{self.options.health_port}/healthz"
            if self.options.health_port
            else None
        )
        try:
            await kopf.operator(
                registry=registry or handlers.registry,
                clusterwide=True,
                standalone=True,
                memo=self.memo(),
                liveness_endpoint=liveness,
                stop_flag=stop_flag,
                ready_flag=ready_flag,
            )
        finally:
            await self.stop()

    async def _housekeeping(self, interval: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval)
            self.runtime.cache.expire()
            cluster = self.runtime.cache.cluster
            self.metrics.cache(
                len(cluster.nodes), len(cluster.pods), self.runtime.cache.assumed_count
            )
            self.metrics.pending(self.runtime.queue.lengths())


def configure_logging(level: str, fmt: str) -> None:
    if fmt == "json":
        handler = logging.StreamHandler()
        handler.setFormatter(_JsonFormatter())
        logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    else:
        logging.basicConfig(
            level=level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            force=True,
        )


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


async def operate(options: Options) -> None:
    configure_logging(options.log_level, options.log_format)
    api_client = await load_client(options.burst)
    try:
        await Operator(options, api_client).run()
    finally:
        await api_client.close()
