"""Preemption's writes to the API: the nomination, the victims' eviction, the
nominations it overrides cleared.

The decision (``deciding.py``) asks the scheduler's ports to carry out a preemption once
the attempt's outcome stands (:meth:`~..engine.handles.Ports.preempt`): offline
(``simulate``) the cache's ports take the victims out of the cluster; in the operator,
:class:`PreemptionWrites` sends the writes, in a task of their own so that the
scheduling loop never waits for them:

* the preemptor's ``nominatedNodeName`` (if it fails, nothing else is done and the
  nomination is taken back in the cache);
* each victim: under v1.30's preemption, a victim held at Permit is rejected (back to the
  queue) instead of deleted, and the others first get ``DisruptionTarget=True``
  (:meth:`PreemptionWrites._mark_victim`); then the DELETE, with the victim's uid as
  precondition, and a Normal ``Preempted`` event;
* the nominations the preemption overrides, cleared (``nominatedNodeName: null``, once at
  a time per pod; the watch side clears stale nominations the same way).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ..engine.intree.defaultpreemption import NAME as PREEMPTION_PLUGIN
from ..engine.preemption import Preemption
from ..objects import Pod
from ..state.world import World
from .kubeapi import Api
from .metrics import MetricsSink
from .reporting import Reporter, build_disruption_patch, now_rfc3339

logger = logging.getLogger(__name__)


def nomination_patch(node: str | None) -> dict[str, Any]:
    """The pods/status patch setting (or, with None, removing) ``nominatedNodeName``."""
    return {"status": {"nominatedNodeName": node}}


async def api_call(call: Coroutine[Any, Any, int], what: str) -> int:
    """An API write's status; 0 when it raised (no answer, timeout)."""
    try:
        return await call
    except Exception as exc:
        logger.warning("%s failed: %r", what, exc)
        return 0


class PreemptionWrites:
    """A preemption carried out through the API (module docstring)."""

    def __init__(
        self,
        api: Api,
        world: World,
        *,
        reporter: Reporter,
        report: Callable[[Coroutine[Any, Any, None]], None],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        metrics: MetricsSink,
        is_leader: Callable[[], bool],
    ) -> None:
        self.api = api
        self.world = world
        self.reporter = reporter
        self._report = report
        self._spawn = spawn
        self.metrics = metrics
        self.is_leader = is_leader
        #: Pods whose preemption's writes are under way (one at a time per pod).
        self._preempting: set[str] = set()
        #: Pods whose nominatedNodeName is being cleared.
        self._clearing: set[str] = set()

    def carry_out(self, pod: Pod, result: Preemption, profile: str) -> None:
        """Send ``result``'s writes for ``pod``, off the loop (module docstring)."""
        if result.node is None and not result.clear:
            return
        if pod.uid in self._preempting:
            return  # the previous attempt's writes are still on their way
        self._preempting.add(pod.uid)
        self._spawn(self._carry_out(pod, result, profile))

    async def _carry_out(self, pod: Pod, result: Preemption, profile: str) -> None:
        try:
            if result.node is not None and not await self._evict(pod, result, profile):
                return
            for other in result.clear:
                self.clear_nomination(other)
        finally:
            self._preempting.discard(pod.uid)

    async def _evict(self, pod: Pod, result: Preemption, profile: str) -> bool:
        """Nominate ``pod`` and delete the victims; False when upstream would stop there."""
        node = result.node
        assert node is not None
        cache = self.world.cache
        if cache.was_deleted(pod.uid) or cache.is_placed(pod.uid):
            return False  # gone, or placed by someone, since it was decided
        status = await api_call(
            self.api.patch_pod_status(pod.namespace, pod.name, nomination_patch(node)),
            f"nominating {pod.key} to {node}",
        )
        if not 200 <= status < 300:
            logger.warning("could not nominate %s to %s: HTTP %s", pod.key, node, status)
            if cache.nominated_node(pod.uid) == node:
                cache.unnominate(pod.uid)
            return False
        for victim in result.victims:
            waiting = self.world.handle.waiting.get(victim.uid)
            if result.marks_victims and waiting is not None and not waiting.done:
                # v1.30's prepareCandidate: a victim held at Permit (assumed, not bound)
                # is rejected, back to the queue, not deleted (v1.17 deleted it too).
                waiting.reject(PREEMPTION_PLUGIN, "preempted")
                logger.info("preempted %s (waiting on permit) for %s", victim.key, pod.key)
                self._report(self.reporter.preempted(victim, pod, node, profile))
                continue
            if result.marks_victims and not await self._mark_victim(victim, pod):
                return False
            status = await api_call(
                self.api.delete_pod(victim.namespace, victim.name, victim.uid),
                f"deleting {victim.key}, preempted by {pod.key}",
            )
            if status in (404, 409):
                continue  # gone already, or a new pod of the same name: not our victim
            if not 200 <= status < 300:
                logger.warning("could not preempt %s: HTTP %s", victim.key, status)
                return False
            logger.info("preempted %s on %s for %s", victim.key, node, pod.key)
            self._report(self.reporter.preempted(victim, pod, node, profile))
        self.metrics.preemption_victims(len(result.victims))
        return True

    async def _mark_victim(self, victim: Pod, pod: Pod) -> bool:
        """v1.26+'s preemption: ``DisruptionTarget=True`` (``PreemptionByScheduler``) on
        the victim's status before its deletion, so that a Job's ``podFailurePolicy``
        can tell the preemption from a failure and ``pod`` waits for this victim rather
        than preempting again (``defaultpreemption.eligible``). False when the
        preemption stops here, as upstream's does when the patch fails; a victim gone
        (404), or replaced by a pod of the same name (the uid precondition: 409 or
        422), is left to its delete, which says the same with its own precondition."""
        if victim.disrupted_by_scheduler:
            return True  # marked and terminating already: the condition says so
        patch = build_disruption_patch(victim, pod.scheduler_name, now=now_rfc3339())
        status = await api_call(
            self.api.patch_pod_status(victim.namespace, victim.name, patch),
            f"marking {victim.key} preempted by {pod.key}",
        )
        if 200 <= status < 300 or status in (404, 409, 422):
            return True
        logger.warning("could not mark %s as preempted: HTTP %s", victim.key, status)
        return False

    def clear_nomination(self, pod: Pod) -> None:
        """Write ``nominatedNodeName: null`` on a pod whose nomination is over, through
        the pod-critical API lane; once at a time per pod; only while leader."""
        if not self.is_leader() or pod.uid in self._clearing:
            return
        self._clearing.add(pod.uid)
        self._report(self._clear(pod))

    async def _clear(self, pod: Pod) -> None:
        try:
            status = await api_call(
                self.api.patch_pod_status(pod.namespace, pod.name, nomination_patch(None)),
                f"clearing the nominated node of {pod.key}",
            )
            if not 200 <= status < 300 and status != 404:
                logger.warning("could not clear the nominated node of %s: HTTP %s", pod.key, status)
        finally:
            self._clearing.discard(pod.uid)
