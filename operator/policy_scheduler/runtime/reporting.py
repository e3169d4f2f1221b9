"""What people see: pod conditions, events, and SchedulingPolicy status.

Builders (``build_*``) are pure functions returning API dicts; :class:`Reporter` sends
them through the :class:`~.kubeapi.Api`, never raising: a failed report is logged and
forgotten, a scheduling decision never waits on, nor fails because of, reporting.

Events are aggregated the way client-go's EventCorrelator does for kube-scheduler: an
event identical to one already sent for the same object (same type, reason, message,
source) is not created again: the existing one gets ``count + 1`` and a new
``lastTimestamp``. A pod retried 30 times for the same reason therefore has one
``FailedScheduling`` event with count 30, not 30 events. When the message changes (the
cluster changed), a new event starts. From the ``MAX_SIMILAR``-th distinct message for
one pod and reason within ``SIMILAR_WINDOW`` seconds, messages are combined into a
single event prefixed ``(combined from similar events): ``, as the aggregator does.
What was sent is remembered for the ``MAX_OBJECTS`` objects most recently reported on
(client-go's LRU of 4096 entries): a scheduler reports on every pod it places, and an
event about an object forgotten meanwhile simply starts a new one.

The ``PodScheduled=False`` condition is written with a strategic merge patch keyed by
condition type, so retries update the one condition instead of adding another, and
only when its message changes.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..objects import Pod
from .kubeapi import Api

logger = logging.getLogger(__name__)

MAX_SIMILAR = 10
#: Objects whose events are remembered for aggregation (client-go's maxLruCacheEntries).
MAX_OBJECTS = 4096
SIMILAR_WINDOW = 600.0
COMBINED_PREFIX = "(combined from similar events): "
CLUSTER_EVENTS_NAMESPACE = "default"
VOLUME_BINDING_FAILED = "VolumeBindingFailed"


def now_rfc3339(moment: datetime | None = None) -> str:
    if moment is not None:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    # Read after every decision: formatted once per second.
    second = int(time.time())
    if _now[0] != second:
        _now[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")]
    return str(_now[1])


_now: list[int | str] = [0, ""]


def build_unschedulable_condition(
    message: str, *, now: str, reason: str = "Unschedulable"
) -> dict[str, Any]:
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }


def build_condition_patch(condition: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"conditions": [condition]}}


def scheduled_message(pod: Pod, node: str) -> str:
    return f"Successfully assigned {pod.namespace}/{pod.name} to {node}"


def preempted_message(preemptor: Pod, node: str) -> str:
    """The ``Preempted`` event on a victim, in kube-scheduler's words."""
    return f"Preempted by {preemptor.namespace}/{preemptor.name} on node {node}"


_names = itertools.count()


def build_event(
    *,
    namespace: str,
    involved: dict[str, Any],
    event_type: str,
    reason: str,
    message: str,
    action: str,
    component: str,
    instance: str,
    now: str,
) -> dict[str, Any]:
    name = f"{involved['name']}.{time.time_ns():x}{next(_names):x}"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved,
        "type": event_type,
        "reason": reason,
        "message": message,
        "action": action,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": instance,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def pod_reference(pod: Pod) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
    ref["uid"] = pod.uid
    if pod.resource_version:
        ref["resourceVersion"] = pod.resource_version
    return ref


@dataclass(slots=True)
class _Sent:
    name: str
    namespace: str
    count: int
    first: float


@dataclass(slots=True)
class _Reported:
    """What was sent about one object."""

    #: (type, reason, message, component) -> the event already sent
    sent: dict[tuple[str, str, str, str], _Sent] = field(default_factory=dict)
    #: reason -> times of distinct messages, for the aggregator
    similar: dict[str, list[float]] = field(default_factory=dict)


class Reporter:
    """Sends conditions and events, aggregated as client-go does; never raises."""

    def __init__(
        self,
        api: Api,
        *,
        instance: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.api = api
        self.instance = instance or os.environ.get("POD_NAME") or os.uname().nodename
        self.clock = clock
        self.wall = wall
        #: object uid -> what was sent about it, least recently reported first
        self._reported: OrderedDict[str, _Reported] = OrderedDict()
        #: pod uid -> message of the PodScheduled condition last written
        self._conditions: dict[str, str] = {}

    # -- events --------------------------------------------------------------------------

    async def event(
        self,
        *,
        namespace: str,
        involved: dict[str, Any],
        event_type: str,
        reason: str,
        message: str,
        action: str,
        component: str,
    ) -> None:
        uid = str(involved.get("uid") or involved.get("name"))
        now = self.clock()
        reported = self._about(uid)
        similar = reported.similar.setdefault(reason, [])
        key = (event_type, reason, message, component)
        if key not in reported.sent:
            similar[:] = [t for t in similar if now - t < SIMILAR_WINDOW]
            similar.append(now)
            # client-go's EventAggregator: the 10th distinct message is already combined.
            if len(similar) >= MAX_SIMILAR:
                message = COMBINED_PREFIX + message
                key = (event_type, reason, COMBINED_PREFIX, component)
        sent = reported.sent.get(key)
        stamp = now_rfc3339(self.wall())
        try:
            if sent is not None:
                sent.count += 1
                patch = {"count": sent.count, "lastTimestamp": stamp}
                if message.startswith(COMBINED_PREFIX):
                    patch["message"] = message
                status = await self.api.patch_event(sent.namespace, sent.name, patch)
                if status < 300:
                    return
                # The event is gone (expired or deleted): start a new one.
                reported.sent.pop(key, None)
            body = build_event(
                namespace=namespace,
                involved=involved,
                event_type=event_type,
                reason=reason,
                message=message,
                action=action,
                component=component,
                instance=self.instance,
                now=stamp,
            )
            status = await self.api.create_event(namespace, body)
            if status < 300:
                reported.sent[key] = _Sent(body["metadata"]["name"], namespace, 1, now)
            else:
                logger.warning("could not record event %s for %s: HTTP %s", reason, uid, status)
        except Exception:  # reporting must never break scheduling
            logger.exception("could not record event %s for %s", reason, uid)

    async def preempted(self, victim: Pod, preemptor: Pod, node: str, component: str) -> None:
        """A Normal ``Preempted`` event on a pod deleted to make room for ``preemptor``."""
        await self.event(
            namespace=victim.namespace,
            involved=pod_reference(victim),
            event_type="Normal",
            reason="Preempted",
            message=preempted_message(preemptor, node),
            action="Preempting",
            component=component,
        )

    async def unschedulable(
        self,
        pod: Pod,
        message: str,
        component: str,
        *,
        reason: str = "Unschedulable",
        action: str = "Scheduling",
    ) -> None:
        """PodScheduled=False with ``reason`` plus a FailedScheduling Warning event (an
        attempt that found no node, or, ``reason`` SchedulerError, one that failed)."""
        await self.pod_condition(pod, message, reason=reason)
        await self.event(
            namespace=pod.namespace,
            involved=pod_reference(pod),
            event_type="Warning",
            reason="FailedScheduling",
            message=message,
            action=action,
            component=component,
        )

    async def volume_binding_failed(self, pod: Pod, message: str, component: str) -> None:
        """PodScheduled=False/VolumeBindingFailed plus a Warning event of that reason.

        kube-scheduler v1.17 wrote the condition with this reason and a FailedScheduling
        event; the event carries the reason too here, so that ``kubectl get events
        --field-selector reason=VolumeBindingFailed`` finds them apart from pods that
        fit nowhere.
        """
        await self.pod_condition(pod, message, reason=VOLUME_BINDING_FAILED)
        await self.event(
            namespace=pod.namespace,
            involved=pod_reference(pod),
            event_type="Warning",
            reason=VOLUME_BINDING_FAILED,
            message=message,
            action="Binding",
            component=component,
        )

    async def pod_condition(self, pod: Pod, message: str, *, reason: str) -> None:
        if self._conditions.get(pod.uid) == f"{reason}:{message}":
            return
        condition = build_unschedulable_condition(
            message, now=now_rfc3339(self.wall()), reason=reason
        )
        try:
            status = await self.api.patch_pod_status(
                pod.namespace, pod.name, build_condition_patch(condition)
            )
        except Exception:
            logger.exception("could not write the PodScheduled condition of %s", pod.key)
            return
        if status < 300:
            self._conditions[pod.uid] = f"{reason}:{message}"
        elif status != 404:
            logger.warning(
                "could not write the PodScheduled condition of %s: HTTP %s", pod.key, status
            )

    async def scheduled(self, pod: Pod, node: str, component: str) -> None:
        self._conditions.pop(pod.uid, None)
        await self.event(
            namespace=pod.namespace,
            involved=pod_reference(pod),
            event_type="Normal",
            reason="Scheduled",
            message=scheduled_message(pod, node),
            action="Binding",
            component=component,
        )

    def _about(self, uid: str) -> _Reported:
        """What was sent about ``uid``, now the most recently reported object."""
        reported = self._reported.get(uid)
        if reported is None:
            reported = self._reported[uid] = _Reported()
            if len(self._reported) > MAX_OBJECTS:
                self._reported.popitem(last=False)
        else:
            self._reported.move_to_end(uid)
        return reported

    def forget_pod(self, uid: str) -> None:
        """The pod is gone: drop what we remember of its events and condition."""
        self._conditions.pop(uid, None)
        self._reported.pop(uid, None)
