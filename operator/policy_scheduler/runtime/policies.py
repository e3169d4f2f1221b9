"""SchedulingPolicy status and events: what ``kubectl describe schedpol`` shows.

For every policy the :class:`~..state.policies.PolicyBook` has judged, the status holds
an ``Accepted`` condition (True, or False with the reason and a message naming the
field), ``observedGeneration``, the schedulerName it serves, the count of pods it
placed that were bound (``podsScheduled``: a decision whose binding, or whose volumes'
binding, failed is not counted), the pods of its name waiting now for another attempt
(``podsUnschedulable``: unschedulable or in backoff; not a running total), and the time
of its last decision. The CRD's descriptions say the same (``crd.py``).

A Shadow policy's status also has ``shadow``: its window's counts and latest
differences (``state/shadows.py``); the key is removed when it is promoted.

``plugins`` shows the pipeline of the version in service (the last accepted one, which
may be older than the spec when the spec is refused): per extension point, the plugins
that run, in order, with their weights at Score (``Pipeline.listing``). A Shadow policy
runs its PreFilter, Filter, PreScore and Score plugins only, so only those are listed;
a policy with no version in service has none.

Writes happen only when something people can see changed (our own status writes come
back as watch events; comparing first stops the loop). A verdict is written at once;
counts are rewritten by the refresher, every ``interval`` (15 s), except a shadow's,
which changes with every pod it compares: :meth:`PolicyStatusWriter.touch` marks it and
the refresher writes it at most once per :data:`SHADOW_STATUS_INTERVAL` (5 s). A
rejection also gets a Warning event on the policy, once per generation. Both messages
are bounded (``reporting.bounded_message``): a policy with thousands of errors shows the
first ones and ``... and N more``, within the CRD's 32768 characters (the event's 1024).

Every replica writes verdicts (they judge the same objects the same way), but only the
leader decides: a standby keeps the counts the leader wrote instead of writing its own
zeros over them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..kinds import PolicyObject
from ..names import CRD_API_VERSION, CRD_KIND
from ..state.policies import CONFLICT, Verdict
from ..state.shadows import ShadowRunner, ShadowWindow
from ..state.world import World
from .kubeapi import Api
from .reporting import (
    CLUSTER_EVENTS_NAMESPACE,
    CONDITION_MESSAGE_LIMIT,
    Reporter,
    bounded_message,
    now_rfc3339,
)

logger = logging.getLogger(__name__)

#: Seconds between two writes of a shadow's counts while it compares pods.
SHADOW_STATUS_INTERVAL = 5.0
#: The parts of a status only the leader knows (the others: every replica's verdict).
COUNTS = ("podsScheduled", "podsUnschedulable", "lastDecisionTime", "shadow")
#: The points a Shadow policy runs (it never reserves, permits, binds nor preempts).
SHADOW_POINTS = ("preFilter", "filter", "preScore", "score")


@dataclass(slots=True)
class PolicyStats:
    """What one policy decided so far, for its status."""

    scheduled: int = 0
    unschedulable: int = 0
    last_decision: str = ""


def policy_reference(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": CRD_API_VERSION, "kind": CRD_KIND, "name": name, "uid": uid}


def build_policy_status(
    verdict: Verdict,
    *,
    previous: Mapping[str, Any] | None,
    scheduled: int,
    unschedulable: int,
    last_decision: str,
    now: str,
    shadow: Mapping[str, Any] | None = None,
    plugins: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole status; ``shadow`` None (an Active policy) removes ``status.shadow``,
    ``plugins`` None (no version in service) ``status.plugins``."""
    condition: dict[str, Any] = {
        "type": "Accepted",
        "status": "True" if verdict.accepted else "False",
        "reason": verdict.reason,
        "message": bounded_message(verdict.message, CONDITION_MESSAGE_LIMIT),
        "observedGeneration": verdict.generation,
        "lastTransitionTime": now,
    }
    for old in (previous or {}).get("conditions") or []:
        if old.get("type") == "Accepted" and old.get("status") == condition["status"]:
            condition["lastTransitionTime"] = old.get("lastTransitionTime") or now
    status: dict[str, Any] = {
        "observedGeneration": verdict.generation,
        "conditions": [condition],
        "servingSchedulerName": verdict.serving,
        "podsScheduled": scheduled,
        "podsUnschedulable": unschedulable,
        "shadow": dict(shadow) if shadow is not None else None,
        "plugins": dict(plugins) if plugins is not None else None,
    }
    if last_decision:
        status["lastDecisionTime"] = last_decision
    return status


def _visible(status: Mapping[str, Any] | None) -> Any:
    """The parts of a status worth a write when they change (not timestamps). A null is
    no value: the merge patch removes the key, and the watch then shows none."""
    if not status:
        return None
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions") or []
    ]
    rest = {
        k: v
        for k, v in status.items()
        if k not in ("conditions", "lastDecisionTime") and v is not None
    }
    return conditions, rest


class PolicyStatusWriter:
    """Writes each policy's status (and a Warning event when it is refused)."""

    def __init__(
        self,
        api: Api,
        reporter: Reporter,
        world: World,
        stats: Callable[[str], PolicyStats],
        *,
        shadows: ShadowRunner | None = None,
        clock: Callable[[], float] = time.monotonic,
        shadow_interval: float = SHADOW_STATUS_INTERVAL,
        is_leader: Callable[[], bool] = lambda: True,
    ) -> None:
        self.api = api
        self.reporter = reporter
        self.world = world
        self.stats = stats
        #: The shadows' windows (``status.shadow``); None: no policy has one.
        self.shadows = shadows
        self.clock = clock
        self.shadow_interval = shadow_interval
        #: Only the leader decides, so only its counts mean anything.
        self.is_leader = is_leader
        #: Policies whose counts changed since their last write (see :meth:`touch`).
        self._touched: set[str] = set()
        self._written_at: dict[str, float] = {}
        self._statuses: dict[str, Mapping[str, Any]] = {}
        self._uids: dict[str, str] = {}
        self._warned: set[tuple[str, int]] = set()
        # One write at a time: two watch events for one policy must not race.
        self._lock = asyncio.Lock()

    def observe(self, obj: PolicyObject) -> None:
        """Remember the status a policy has now, as the watch reports it."""
        self._statuses[obj.name] = obj.status
        self._uids[obj.name] = obj.uid

    def _waiting(self, scheduler_name: str | None) -> int:
        """Pods of this schedulerName that could not be placed and wait for a retry."""
        if scheduler_name is None:
            return 0
        return self.world.waiting(scheduler_name, ("unschedulable", "backoff"))

    async def write(self, verdicts: Iterable[Verdict]) -> None:
        async with self._lock:
            for verdict in verdicts:
                await self._write_one(verdict)

    async def refresh(self) -> None:
        """Rewrite every policy's counts (called periodically)."""
        async with self._lock:
            self._touched.clear()
            for name in list(self._statuses):
                verdict = self.world.book.verdict(name)
                if verdict is not None:
                    await self._write_one(verdict)

    def touch(self, name: str) -> None:
        """Policy ``name``'s counts changed (a shadow compared a pod): write them soon."""
        self._touched.add(name)

    async def flush(self) -> None:
        """Write the touched policies last written at least ``shadow_interval`` ago."""
        async with self._lock:
            now = self.clock()
            for name in sorted(self._touched):
                if now - self._written_at.get(name, float("-inf")) < self.shadow_interval:
                    continue  # written lately: its turn comes at a later flush
                self._touched.discard(name)
                verdict = self.world.book.verdict(name)
                if verdict is not None:
                    await self._write_one(verdict)

    def _shadow_status(self, verdict: Verdict) -> dict[str, Any] | None:
        """``status.shadow`` of a policy whose version in service is a shadow."""
        if verdict.shadowing is None:
            return None
        policy = next(
            (p for p in self.world.book.shadows_of(verdict.shadowing) if p.name == verdict.name),
            None,
        )
        if policy is None or self.shadows is None:
            return ShadowWindow().to_status()
        return self.shadows.window(policy).to_status()

    def _plugins_status(self, verdict: Verdict) -> dict[str, Any] | None:
        """``status.plugins`` of the version in service (see the module docstring)."""
        book = self.world.book
        if verdict.serving is not None:
            policy = book.policy_for(verdict.serving)
            if policy is not None and policy.name == verdict.name:
                return policy.pipeline.listing()
        if verdict.shadowing is not None:
            for policy in book.shadows_of(verdict.shadowing):
                if policy.name == verdict.name:
                    listing = policy.pipeline.listing()
                    return {point: listing[point] for point in SHADOW_POINTS if point in listing}
        return None

    async def _write_one(self, verdict: Verdict) -> None:
        stats = self.stats(verdict.name)
        previous = self._statuses.get(verdict.name)
        status = build_policy_status(
            verdict,
            previous=previous,
            scheduled=stats.scheduled,
            unschedulable=self._waiting(verdict.serving),
            last_decision=stats.last_decision,
            now=now_rfc3339(),
            shadow=self._shadow_status(verdict),
            plugins=self._plugins_status(verdict),
        )
        if not self.is_leader() and previous:
            # A standby decides nothing: its counts are zeros. It writes verdicts (every
            # replica judges the same) but keeps the counts the leader wrote.
            for key in COUNTS:
                status[key] = previous.get(key)
        if _visible(status) != _visible(previous):
            code = await self.api.patch_policy_status(verdict.name, status)
            if code < 300:
                self._statuses[verdict.name] = status
                self._written_at[verdict.name] = self.clock()
            elif code != 404:
                logger.warning(
                    "could not write the status of policy %s: HTTP %s", verdict.name, code
                )
        if not verdict.accepted and (verdict.name, verdict.generation) not in self._warned:
            self._warned.add((verdict.name, verdict.generation))
            await self.reporter.event(
                namespace=CLUSTER_EVENTS_NAMESPACE,
                involved=policy_reference(verdict.name, self._uids.get(verdict.name, "")),
                event_type="Warning",
                reason=CONFLICT if verdict.reason == CONFLICT else "PolicyRejected",
                message=verdict.message,
                action="Validate",
                component=self.world.book.default_scheduler_name,
            )

    async def run_refresher(self, interval: float = 15.0, tick: float = 1.0) -> None:
        """Every ``interval`` s rewrite all counts; every ``tick`` s the touched ones."""
        last = self.clock()
        while True:
            await asyncio.sleep(tick)
            with contextlib.suppress(Exception):
                if self.clock() - last >= interval:
                    last = self.clock()
                    await self.refresh()
                else:
                    await self.flush()
