"""The running scheduler: watch events in, decisions and bindings out.

:class:`SchedulerRuntime` owns the cache, the queue and the policy book, and is driven
from two sides:

* **Watch side** (Kopf handlers call ``on_*``): pods, nodes, the volume and workload
  kinds, and SchedulingPolicies update the cache; pending pods of a served
  schedulerName enter the queue; changes that could help unschedulable pods move them
  back (``queue.move_all``). These methods are synchronous and cheap.
* **Scheduling side** (:meth:`run`, only while leader): one loop pops one pod at a time
  and decides it with the engine (decisions must see earlier ones); a pod that fits is
  *assumed* in the cache at once and its binding is sent asynchronously, at most
  ``bind_workers`` at a time. A failed binding forgets the assumption and sends the
  pod back to the queue with backoff; a 409 (someone bound it, or it is already bound)
  and a 404 (deleted) are answers, handled quietly.

A pod is never bound twice by us: the cache marks it placed from the moment it is
assumed, the queue drops pods the cache holds placed, and bindings are sent only while
leader. A binding that raced with another scheduler gets 409 from the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..engine.algorithm import Decision, Scheduler
from ..engine.cluster import STORAGE_KINDS
from ..engine.compiler import CompiledPolicy, instrument
from ..objects import ObjectError, Pod, parse_node, parse_pod
from ..selectors import SelectorError
from ..state.cache import SchedulerCache
from ..state.policies import PolicyBook, Verdict
from ..state.queueing import QueuedPod, SchedulingQueue
from .kubeapi import Api
from .reporting import Reporter, now_rfc3339, policy_reference

logger = logging.getLogger(__name__)

NO_POLICY_REASON = "NoSchedulingPolicy"


class MetricsSink(Protocol):
    """What the runtime reports to metrics (see :class:`.metrics.Metrics`).

    The bodies do nothing, so :class:`NullMetrics` is this Protocol as a class.
    """

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        return None

    def e2e(self, result: str, profile: str, seconds: float) -> None:
        return None

    def pending(self, lengths: Mapping[str, int]) -> None:
        return None

    def phases(self, filter_s: float, score_s: float) -> None:
        return None

    def per_plugin(self, predicates: Mapping[str, float], priorities: Mapping[str, float]) -> None:
        return None

    def binding(self, result: str, seconds: float) -> None:
        return None

    def attempts_until_scheduled(self, attempts: int) -> None:
        return None

    def cache(self, nodes: int, pods: int, assumed: int) -> None:
        return None


class NullMetrics(MetricsSink):
    """Metrics off: every report is dropped."""


@dataclass(slots=True)
class PolicyStats:
    scheduled: int = 0
    unschedulable: int = 0
    last_decision: str = ""


class SchedulerRuntime:
    def __init__(
        self,
        api: Api,
        *,
        default_scheduler_name: str = "policy-scheduler",
        bind_workers: int = 16,
        reporter: Reporter | None = None,
        metrics: MetricsSink | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
        namespaces: Sequence[str] = (),
    ) -> None:
        self.api = api
        self.book = PolicyBook(default_scheduler_name)
        self.cache = SchedulerCache(clock=clock)
        self.queue = SchedulingQueue(clock=clock)
        self.reporter = reporter or Reporter(api, clock=clock)
        self.metrics: MetricsSink = metrics or NullMetrics()
        self._instrumented: dict[str, tuple[CompiledPolicy, CompiledPolicy]] = {}
        self._predicate_seconds: dict[str, float] = {}
        self._priority_seconds: dict[str, float] = {}
        self.is_leader = is_leader
        self.clock = clock
        #: Namespaces whose pods we schedule (all when empty); pods of every namespace
        #: are still accounted on their nodes.
        self.namespaces = frozenset(namespaces)
        self._schedulers: dict[str, Scheduler] = {}
        self._binding_slots = asyncio.Semaphore(bind_workers)
        self._bindings: set[asyncio.Task[None]] = set()
        #: Pods whose binding is in flight: their assumption belongs to that binding.
        self._binding_uids: set[str] = set()
        self._reports: set[asyncio.Task[None]] = set()
        #: Pending pods by schedulerName, whether served or not: a policy accepted later
        #: for their name takes them.
        self._pending: dict[str, dict[str, Pod]] = {}
        self.stats: dict[str, PolicyStats] = {}
        self._policy_uids: dict[str, str] = {}

    # -- watch side: pods ---------------------------------------------------------------

    def on_pod(self, raw: Mapping[str, Any]) -> None:
        try:
            pod = parse_pod(raw)
        except (ObjectError, SelectorError) as exc:
            # A pod we cannot read is reported, never dropped silently nor fatal.
            self._report_malformed_pod(raw, str(exc))
            return
        before = self.cache.cluster.pods.get(pod.uid)
        if self.cache.pod_seen(pod):
            self._drop_pending(pod)
            if before is not None and before.node_request != pod.node_request:
                self.queue.move_all()  # a placed pod was resized: room may have appeared
            return
        if pod.deleting or pod.gated or (self.namespaces and pod.namespace not in self.namespaces):
            self._drop_pending(pod)
            return
        self._pending.setdefault(pod.scheduler_name, {})[pod.uid] = pod
        if self.book.policy_for(pod.scheduler_name) is not None:
            if pod.uid in self.queue:
                self.queue.update(pod)
            else:
                self.queue.add(pod)
        elif self.book.orphaned(pod.scheduler_name):
            self._report(self._no_policy(pod))

    def on_pod_deleted(self, raw: Mapping[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        placed = self.cache.is_placed(uid)
        self.cache.pod_deleted(uid)
        self.queue.delete(uid)
        for pods in self._pending.values():
            pods.pop(uid, None)
        self.reporter.forget_pod(uid)
        if placed:
            self.queue.move_all()  # freed resources may help

    def _drop_pending(self, pod: Pod) -> None:
        pods = self._pending.get(pod.scheduler_name)
        if pods is not None:
            pods.pop(pod.uid, None)
        if pod.uid in self.queue:
            self.queue.delete(pod.uid)

    # -- watch side: the cluster --------------------------------------------------------

    def on_node(self, raw: Mapping[str, Any]) -> None:
        try:
            node = parse_node(raw)
        except (ObjectError, SelectorError) as exc:
            logger.warning("ignoring a node the scheduler cannot read: %s", exc)
            return
        self.cache.cluster.set_node(node)
        self.queue.move_all()

    def on_node_deleted(self, raw: Mapping[str, Any]) -> None:
        self.cache.cluster.remove_node(str((raw.get("metadata") or {}).get("name", "")))

    def on_object(self, raw: Mapping[str, Any], *, deleted: bool = False) -> None:
        """PVs, PVCs, StorageClasses, CSINodes, Services and controllers."""
        cluster = self.cache.cluster
        try:
            known = cluster.delete_object(raw) if deleted else cluster.apply_object(raw)
        except (ObjectError, SelectorError) as exc:
            logger.warning("ignoring an object the scheduler cannot read: %s", exc)
            return
        if known and raw.get("kind") in STORAGE_KINDS:
            self.queue.move_all()  # a volume may now be bindable

    # -- watch side: policies ------------------------------------------------------------

    def on_policy(self, raw: Mapping[str, Any]) -> list[Verdict]:
        meta = raw.get("metadata") or {}
        self._policy_uids[str(meta.get("name", ""))] = str(meta.get("uid", ""))
        verdicts = self.book.apply(raw)
        self._after_policy_change()
        return verdicts

    def on_policy_deleted(self, name: str) -> list[Verdict]:
        verdicts = self.book.remove(name)
        self._after_policy_change()
        return verdicts

    def _after_policy_change(self) -> None:
        """Queue the pods a policy now serves; park, with a condition, those none serves."""
        for scheduler_name, pods in self._pending.items():
            if self.book.policy_for(scheduler_name) is not None:
                for pod in pods.values():
                    if pod.uid not in self.queue:
                        self.queue.add(pod)
            elif self.book.orphaned(scheduler_name):
                for pod in pods.values():
                    if pod.uid in self.queue:
                        self.queue.delete(pod.uid)
                        self._report(self._no_policy(pod))
        self.queue.move_all()

    def pending_pods(self, scheduler_name: str) -> list[Pod]:
        return list(self._pending.get(scheduler_name, {}).values())

    def policy_reference(self, name: str) -> dict[str, Any]:
        return policy_reference(name, self._policy_uids.get(name, ""))

    # -- scheduling side -----------------------------------------------------------------

    def scheduler_for(self, policy: CompiledPolicy) -> Scheduler:
        # One rotation state per policy, as kube-scheduler keeps one per profile.
        scheduler = self._schedulers.get(policy.name)
        if scheduler is None:
            # No per-node score tables: the operator only needs the node and the message.
            scheduler = self._schedulers[policy.name] = Scheduler(explain=False)
        return scheduler

    def _timed(self, policy: CompiledPolicy) -> CompiledPolicy:
        """The policy with per-predicate/priority timing, built once per policy version."""
        known = self._instrumented.get(policy.name)
        if known is None or known[0] is not policy:
            known = (policy, instrument(policy, self._predicate_seconds, self._priority_seconds))
            self._instrumented[policy.name] = known
        return known[1]

    async def run(self) -> None:
        """Schedule until cancelled (run it only while leader)."""
        try:
            while True:
                queued = await self.queue.pop()
                try:
                    await self.schedule_one(queued)
                except Exception:
                    # A bug must not stop the scheduler nor lose the pod.
                    logger.exception("scheduling %s failed", queued.pod.key)
                    self.metrics.attempt("error", queued.pod.scheduler_name, 0.0)
                    if queued.pod.uid not in self._binding_uids:
                        # Not yet handed to a binding: undo the assumption and retry.
                        self.cache.forget(queued.pod.uid)
                        self.queue.error(queued)
        finally:
            await self.drain()

    async def schedule_one(self, queued: QueuedPod) -> Decision | None:
        pod = queued.pod
        if self.cache.is_placed(pod.uid) or self.cache.was_deleted(pod.uid):
            self.queue.done(pod.uid)
            return None
        policy = self.book.policy_for(pod.scheduler_name)
        if policy is None:
            self.queue.done(pod.uid)  # waits in _pending for a policy to serve it
            return None
        started = self.clock()
        decision = await self.scheduler_for(policy).schedule(
            pod, self.cache.cluster, self._timed(policy)
        )
        elapsed = self.clock() - started
        self.metrics.phases(decision.filter_seconds, decision.score_seconds)
        self.metrics.per_plugin(self._predicate_seconds, self._priority_seconds)
        self._predicate_seconds.clear()
        self._priority_seconds.clear()
        stats = self.stats.setdefault(policy.name, PolicyStats())
        stats.last_decision = now_rfc3339()
        profile = policy.scheduler_name
        if decision.node is None:
            stats.unschedulable += 1
            self.metrics.attempt("unschedulable", profile, elapsed)
            self.queue.unschedulable(queued)
            self._report(self.reporter.unschedulable(pod, decision.message, profile))
        else:
            stats.scheduled += 1
            self.metrics.attempt("scheduled", profile, elapsed)
            self.cache.assume(pod, decision.node)
            self.queue.done(pod.uid)
            await self._binding_slots.acquire()
            self._binding_uids.add(pod.uid)
            task = asyncio.create_task(self._bind(queued, decision.node, profile))
            self._bindings.add(task)
            task.add_done_callback(self._bindings.discard)
        self.metrics.pending(self.queue.lengths())
        return decision

    async def _bind(self, queued: QueuedPod, node: str, profile: str) -> None:
        pod = queued.pod
        started = self.clock()
        try:
            if not self.is_leader():
                # Lost leadership after deciding: another replica will decide again.
                self.cache.forget(pod.uid)
                return
            try:
                status = await self.api.bind(pod.namespace, pod.name, pod.uid, node)
            except Exception as exc:  # network trouble: retry with backoff
                logger.warning("binding %s to %s failed: %s", pod.key, node, exc)
                status = 0
            result = "success" if 200 <= status < 300 else "conflict" if status == 409 else "error"
            self.metrics.binding(result, self.clock() - started)
            if 200 <= status < 300:
                self.cache.binding_finished(pod.uid)
                self.metrics.e2e("scheduled", profile, self.clock() - queued.enqueued)
                self.metrics.attempts_until_scheduled(queued.attempts)
                self._report(self.reporter.scheduled(pod, node, profile))
                return
            self.cache.forget(pod.uid)
            if status == 404 or self.cache.was_deleted(pod.uid):
                return  # the pod is gone
            if status == 409:
                # Already bound (by another scheduler, or by us before a restart): the
                # watch will show where. Requeued with backoff in case it is not.
                logger.info("binding %s to %s: conflict, the pod is bound elsewhere", pod.key, node)
                self.queue.error(queued)
                return
            self.queue.error(queued)
            self._report(
                self.reporter.event(
                    namespace=pod.namespace,
                    involved={
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "namespace": pod.namespace,
                        "name": pod.name,
                        "uid": pod.uid,
                    },
                    event_type="Warning",
                    reason="FailedScheduling",
                    message=f"Binding rejected: HTTP {status or 'connection error'}",
                    action="Binding",
                    component=profile,
                )
            )
        finally:
            self._binding_uids.discard(pod.uid)
            self._binding_slots.release()

    async def drain(self) -> None:
        """Wait for bindings and reports in flight (at shutdown or leadership loss)."""
        pending = list(self._bindings) + list(self._reports)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    # -- helpers -------------------------------------------------------------------------

    def _report(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    async def _no_policy(self, pod: Pod) -> None:
        message = (
            f'no accepted SchedulingPolicy serves schedulerName "{pod.scheduler_name}"; '
            "the pod waits until one does"
        )
        await self.reporter.pod_condition(pod, message, reason=NO_POLICY_REASON)

    def _report_malformed_pod(self, raw: Mapping[str, Any], message: str) -> None:
        logger.warning("cannot schedule a malformed pod: %s", message)
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
            return
        scheduler_name = spec.get("schedulerName") or "default-scheduler"
        if spec.get("nodeName") or self.book.policy_for(str(scheduler_name)) is None:
            return
        namespace, name = meta.get("namespace"), meta.get("name")
        if not namespace or not name:
            return
        self._report(
            self.reporter.event(
                namespace=str(namespace),
                involved={
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": namespace,
                    "name": name,
                    "uid": meta.get("uid", ""),
                },
                event_type="Warning",
                reason="FailedScheduling",
                message=f"the scheduler cannot read this pod: {message}",
                action="Scheduling",
                component=str(scheduler_name),
            )
        )
