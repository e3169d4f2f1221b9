"""Start everything: API client, runtime, metrics, health, leadership, Kopf; stop it all.

``operate(options)`` runs until cancelled or ``stop_flag`` is set. Kopf watches every
kind on all replicas, so a standby's cache is warm when it takes over; only the leader
runs the scheduling loop. On becoming leader the replica first LISTs the cluster into
its cache (so the first decision never sees a half-known cluster), then schedules.
When leadership is lost the loop is cancelled at once (at the loop's next turn, if a
cycle holds it; the binding path checks the elector's thread-safe ``is_leader`` before
each binding, so nothing decided meanwhile is bound); bindings already sent finish,
pods not yet bound are forgotten and will be decided by the new leader.

Surviving a real API server:

* every API call has a deadline (``--api-timeout``) and repeatable ones are retried
  (``runtime/kubeapi.py``); the LIST before the first decision is retried with backoff
  until it goes through (``/readyz`` says so meanwhile), never fatal;
* the leader reconciles its cache with a fresh LIST every ``--resync-period`` seconds
  and right after a watch had to start over (Kopf re-lists after a 410 or a watch
  error, and sends no DELETED for what went away meanwhile): objects the LIST lacks
  are deleted from the cache (``World.reconcile``);
* leader election runs on a thread of its own, with its own event loop and API client
  (``runtime/leadership.py``, :class:`ElectionThread`), as the health endpoints do: a
  scheduling cycle that holds the loop (a slow synchronous plugin) cannot cost the Lease;
* background tasks (leader election, policy status, housekeeping, resync) are
  supervised: one that dies is logged and turns ``/healthz`` to 503, as does a stuck
  scheduling attempt (``runtime/health.py``);
* shutdown (SIGTERM, or the stop flag) finishes within ``--shutdown-timeout`` seconds,
  below the chart's ``terminationGracePeriodSeconds``: bindings still in flight then are
  abandoned (their pods are bound, or decided again by the next leader).

The event loop is uvloop's when it is installed (it is a dependency on Linux and macOS),
as ``kopf run`` chooses it too: the operator's work per pod is mostly the loop's
(watch streams, two HTTP writes), and uvloop does that work in C (docs/performance.md,
"End to end": about a quarter less CPU per scheduled pod). Without it, asyncio's own.

Pods are watched cluster-wide even when ``--namespace`` limits which pods are
scheduled: pods of every namespace use node resources, and a scheduler that did not
count them would overcommit nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import netrc
import os
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import kopf
from kubernetes_asyncio import client, config

from . import handlers
from .engine.plugins import load_named, named_in
from .extending import HttpExtenderClient
from .kinds import KINDS, SCHEDULING_POLICY, Kind
from .options import Options
from .runtime.access import check_access
from .runtime.health import DEFAULT_STUCK_AFTER, Health
from .runtime.kubeapi import (
    CRITICAL,
    REPORTS,
    ApiError,
    KubeApi,
    Lane,
    backoff,
    critical_connections,
    pool_size,
)
from .runtime.leadership import ElectionThread, LeaderElector
from .runtime.metrics import Metrics
from .runtime.reporting import Reporter
from .runtime.scheduling import SchedulerRuntime

logger = logging.getLogger(__name__)

__all__ = ["Operator", "Options", "load_client", "operate", "run_loop", "untrust_env"]

_T = TypeVar("_T")

#: After a watch started over, wait this long for its LIST to finish before reconciling.
RELIST_SETTLE = 2.0


async def load_client(connections: int, *, proxy_env: bool = True) -> client.ApiClient:
    """In-cluster credentials when running in a pod, else KUBECONFIG / ~/.kube/config;
    a pool of at least ``connections`` connections (:func:`.runtime.kubeapi.pool_size`).

    Outside a cluster, proxy variables and ~/.netrc are honoured unless ``proxy_env``
    is False: they are read once here, and aiohttp's look-up on every request is kept
    only when they say something about the API server (:func:`env_concerns`).
    """
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await config.load_kube_config(client_configuration=configuration)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, connections)
    api_client = client.ApiClient(configuration)
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if in_cluster or not proxy_env or not env_concerns(configuration.host or ""):
        untrust_env(api_client)
    return api_client


def env_concerns(url: str) -> bool:
    """Whether proxy variables or a netrc file say anything about the server at ``url``.

    What aiohttp looks up on every request of a session that trusts the environment
    (a proxy for the URL's scheme, unless ``no_proxy`` bypasses the host; credentials
    for the host in ``$NETRC`` or ``~/.netrc``). Usually neither applies, and the
    look-ups, each a round trip through a thread pool, are a third of the client's cost.
    """
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(host):
        return True
    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        return netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


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

    def __init__(
        self,
        options: Options,
        api_client: client.ApiClient,
        *,
        freeze_after_listing: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        #: Whether the first LIST's cluster goes to the collector's permanent generation
        #: (:func:`freeze_heap`): for the operator's own process, not a test's.
        self._freeze_after_listing = freeze_after_listing
        self.api_client = api_client
        # Two lanes (runtime/kubeapi.py): bindings never wait behind events.
        self.api = KubeApi(
            api_client,
            Lane(CRITICAL, options.qps, options.burst, critical_connections(options.burst)),
            reports=Lane(
                REPORTS,
                options.qps if options.report_qps is None else options.report_qps,
                options.burst if options.report_burst is None else options.report_burst,
                options.report_concurrency,
            ),
            timeout=options.api_timeout,
        )
        self.metrics = Metrics()
        self.reporter = Reporter(
            self.api.reports,
            clock=clock,
            workers=options.report_concurrency,
            on_dropped=self.metrics.event_dropped,
        )
        self.health = Health(stuck_after=max(DEFAULT_STUCK_AFTER, 4 * options.api_timeout))
        #: The policies' HTTP extenders, one connection pool each; closed by stop().
        self.extenders = HttpExtenderClient(observe=self.metrics.extender)
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            # The elector runs on a thread of its own, with its own client (lease_api);
            # self.api is only its placeholder until that client is made.
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
            pod_initial_backoff=options.pod_initial_backoff,
            pod_max_backoff=options.pod_max_backoff,
            allow_default_scheduler=options.allow_default_scheduler,
            reporter=self.reporter,
            clock=clock,
            metrics=self.metrics,
            is_leader=self.is_leader,
            leader_term=self.leader_term,
            namespaces=options.namespaces,
            health=self.health,
            extenders=self.extenders,
        )
        self._relisted = asyncio.Event()
        self.runtime.on_relist = self._relisted.set
        self._loop_task: asyncio.Task[None] | None = None
        self._stoppers: list[Callable[[], Awaitable[None]]] = []

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def leader_term(self) -> int:
        """The Lease's leadership term (1 without leader election)."""
        return 1 if self.elector is None else self.elector.term

    async def lease_api(self) -> tuple[KubeApi, Callable[[], Awaitable[None]]]:
        """The leader election's own API client, made in (and for) its thread's loop
        (:class:`~.runtime.leadership.ElectionThread`): the same server and credentials,
        a lane of its own (its few calls never wait behind bindings), and a deadline of
        at most ``--renew-deadline`` on every call."""
        api_client = client.ApiClient(self.api_client.configuration)
        session = getattr(self.api_client.rest_client, "pool_manager", None)
        if not getattr(session, "_trust_env", True):
            untrust_env(api_client)
        timeout = min(self.options.api_timeout, self.options.renew_deadline)
        api = KubeApi(api_client, Lane("leader-election", concurrency=2), timeout=timeout)
        return api, api_client.close

    # -- the cluster as the API lists it ---------------------------------------------------

    async def resync(self) -> int:
        """LIST every kind; file what is there, delete from the cache what is not.

        Raises :class:`ApiError` when a LIST keeps failing. Returns how many objects the
        LIST showed gone.
        """
        gone = 0
        for kind in KINDS:
            gone += await self._relist(kind)
        if gone:
            logger.info("resync: %d object(s) were gone from the API", gone)
        return gone

    async def _relist(self, kind: Kind) -> int:
        """One kind's LIST filed; how many objects it showed gone. Raises :class:`ApiError`."""
        since = self.runtime.world.clock()
        # Filed page by page: at 10 000 pods, holding the whole LIST's decoded JSON at
        # once was the operator's peak (and CPython keeps a peak mapped).
        present: set[str] = set()
        async for page in self.api.list_pages(kind):
            if kind is SCHEDULING_POLICY:
                # A plugin's import runs off the loop, within its deadline.
                await load_named(set().union(*map(named_in, page)))
            present |= self.runtime.file_listed(kind, page, since)
        return self.runtime.forget_unlisted(kind, present, since)

    async def prime(self) -> None:
        """The first LIST, retried until it goes through (a busy API is no reason to exit).

        Kind by kind, each retried on its own with backoff, as client-go's reflectors
        each list their kind: a failure lists again only the kind that failed, not the
        ones filed already (with twenty kinds and a flaky API, starting the whole LIST
        over each time could take minutes)."""
        self.health.listing = True
        try:
            for kind in KINDS:
                attempt = 0
                while True:
                    try:
                        await self._relist(kind)
                        break
                    except ApiError as exc:
                        attempt += 1
                        delay = backoff(attempt, base=1.0, cap=30.0)
                        logger.warning(
                            "listing the cluster failed (%s); again in %.1f s", exc, delay
                        )
                        await asyncio.sleep(delay)
        finally:
            self.health.listing = False
        self.runtime.primed = True
        if self._freeze_after_listing:
            self._freeze_after_listing = False
            freeze_heap()

    async def _resyncing(self) -> None:
        period = self.options.resync_period or None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._relisted.wait(), timeout=period)
            if self._relisted.is_set():
                await asyncio.sleep(RELIST_SETTLE)  # let the watch's own LIST finish
                self._relisted.clear()
            if self._loop_task is None:
                continue  # only the leader reconciles; a new leader starts with a LIST
            try:
                await self.resync()
            except ApiError as exc:
                logger.warning("resync failed (%s); trying again at the next one", exc)

    # -- leading -----------------------------------------------------------------------------

    async def start_scheduling(self) -> None:
        await self.prime()
        self.metrics.leader(self.options.identity, True)
        self._loop_task = asyncio.create_task(self.runtime.run(), name="scheduling-loop")
        self.health.loop_started(self._loop_task)
        logger.info("scheduling pods as %s", self.options.identity)

    async def stop_scheduling(self) -> None:
        self.metrics.leader(self.options.identity, False)
        self.health.loop_started(None)
        task, self._loop_task = self._loop_task, None
        if task is not None:
            task.cancel()
            # Waited for, not awaited: a CancelledError here is then ours alone (the
            # shutdown's deadline), and passing it on lets stop() end in time and say so.
            await asyncio.wait([task])
            if not task.cancelled() and task.exception() is not None:
                logger.error("the scheduling loop failed: %r", task.exception())
            logger.info("stopped scheduling")

    async def _lead_always(self) -> None:
        """Without leader election: list, then schedule, until cancelled."""
        try:
            await self.start_scheduling()
            await asyncio.Event().wait()
        finally:
            await self.stop_scheduling()

    # -- start and stop -------------------------------------------------------------------------

    async def start(self) -> None:
        """Metrics, health, housekeeping, resync, and leader election (or leading at once)."""
        if self.options.metrics_port:
            self._stoppers.append(
                await self.metrics.serve(self.options.host, self.options.metrics_port)
            )
        if self.options.health_port:
            self._stoppers.append(
                await self.health.serve(self.options.host, self.options.health_port)
            )
        supervise = self.health.supervise
        supervise("policy status", self.runtime.policy_status.run_refresher())
        supervise("housekeeping", self._housekeeping())
        supervise("resync", self._resyncing())
        if self.elector is not None:
            election = ElectionThread(self.elector, self.lease_api)
            supervise("leader election", election.run(self.start_scheduling, self.stop_scheduling))
        else:
            supervise("scheduling", self._lead_always())

    async def stop(self) -> None:
        """Everything stopped within ``shutdown_timeout`` seconds, whatever hangs."""
        try:
            async with asyncio.timeout(self.options.shutdown_timeout):
                await self._stop()
        except TimeoutError:
            logger.warning(
                "shutdown took more than %.0f s; abandoning what is left",
                self.options.shutdown_timeout,
            )

    async def _stop(self) -> None:
        tasks = list(self.health.tasks())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.stop_scheduling()
        await self.runtime.drain()
        await self.extenders.aclose()
        for stop in self._stoppers:
            await stop()
        self._stoppers = []

    def memo(self) -> kopf.Memo:
        """What the handlers find in Kopf's ``memo``."""
        return kopf.Memo(runtime=self.runtime, operator=self)

    async def run(
        self,
        *,
        stop_flag: asyncio.Event | threading.Event | None = None,
        ready_flag: asyncio.Event | threading.Event | None = None,
        registry: kopf.OperatorRegistry | None = None,
    ) -> None:
        await self.start()
        try:
            await kopf.operator(
                registry=registry or handlers.registry,
                clusterwide=True,
                standalone=True,
                memo=self.memo(),
                stop_flag=stop_flag,
                ready_flag=ready_flag,
            )
        finally:
            await self.stop()

    async def _housekeeping(self, interval: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval)
            self.runtime.requeue_expired()
            cluster = self.runtime.cache.cluster
            self.metrics.cache(
                len(cluster.nodes), len(cluster.pods), self.runtime.cache.assumed_count
            )
            self.metrics.pending(self.runtime.pending_lengths())


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
    """One JSON object per log line, for clusters' log collectors."""

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


def freeze_heap() -> None:
    """Leave what the process holds now out of the collector's full passes.

    Once the first LIST is filed, the cluster (over 100 000 tracked objects at 500 nodes,
    ten times that at 5000; nearly all living as long as the process) is most of the heap,
    and CPython's full collection walks all of it each time the objects that survived
    since the last one reach a quarter of it: every few seconds of scheduling, 200 ms a
    pass at that size (docs/performance.md, "End to end"). ``gc.freeze()`` moves every
    tracked object to the permanent generation, which no pass walks; objects are still
    freed when their last reference goes, and only a reference cycle among objects
    frozen here would never be collected (a bound: the heap of this moment). The
    young generations are collected first, so their garbage cycles are not kept.
    Called once per process; later objects are collected as usual.
    """
    gc.collect(1)
    gc.freeze()


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed, else None (asyncio's default loop)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run(main)`` on the loop of :func:`loop_factory`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


async def operate(options: Options) -> None:
    configure_logging(options.log_level, options.log_format)
    api_client = await load_client(pool_size(options.burst, options.report_concurrency))
    try:
        # Wrong address or credentials: one line and exit 1, not a LIST retried forever.
        await check_access(KubeApi(api_client, timeout=options.api_timeout))
        await Operator(options, api_client, freeze_after_listing=True).run()
    finally:
        await api_client.close()
