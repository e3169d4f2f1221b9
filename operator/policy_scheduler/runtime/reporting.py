"""What people see: pod conditions, events, and SchedulingPolicy status.

Builders (``build_*``) are pure functions returning API dicts; :class:`Reporter` sends
them through the :class:`~.kubeapi.Api`, never raising: a failed report is logged and
forgotten, a scheduling decision never waits on, nor fails because of, reporting.

**Queued, best effort.** A report is queued and the call returns at once; at most
``workers`` writes are in flight (the operator gives the reporter the API client's
report lane, ``--report-concurrency``, so that reports never take a connection or a
token a binding needs: ``kubeapi.py``). Workers start when something is queued and end
when nothing is. Two queues, served in turn:

* **events**, at most ``MAX_QUEUED_EVENTS`` (1000, as client-go's event broadcaster):
  when full, the *oldest* is dropped and counted (``dropped``, ``on_dropped``: the
  ``scheduler_events_dropped_total`` metric). An event is queued once however often it
  recurs meanwhile: its count goes up in place, and one write says the latest;
* **PodScheduled conditions**, one per pod (bounded by the pending pods): a newer
  condition replaces the one not yet written, since only the latest matters; one that
  says what the pod already has is not written. A pod bound meanwhile has its
  unwritten condition dropped (written after the binding, it would be wrong).

A write that fails is not repeated by the reporter: the next occurrence of the event
writes its count again, the next attempt of the pod its condition. :meth:`Reporter.flush`
waits until the queues are empty (tests, and the runtime's ``drain``).

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
only when its message changes. Every message written to the API goes through
:func:`bounded_message` (here, in :meth:`Reporter._record` and
:meth:`Reporter.pod_condition`, and in ``policies.py`` for the policy's condition): an
event's at most ``EVENT_MESSAGE_LIMIT`` characters (kube-scheduler's
``truncateMessage``: the API's note length limit), a condition's at most
``CONDITION_MESSAGE_LIMIT`` (metav1.Condition's, the CRD's ``maxLength``); a longer
one keeps its first lines (one error a line) and says ``and N more``, so that a policy
with 2000 errors still gets its verdict written. Event names are made here (the object's name and a
unique suffix), so that a create whose answer was lost and is sent again gets 409, an
answer that it exists, not a second event.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Coroutine, Mapping
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
#: Events waiting to be written at most (client-go's event broadcaster queues 1000);
#: beyond it the oldest is dropped, and counted.
MAX_QUEUED_EVENTS = 1000
#: An event's message at most (kube-scheduler truncates to the API's NoteLengthLimit).
EVENT_MESSAGE_LIMIT = 1024
#: A condition's message at most (metav1.Condition's maxLength; the CRD says the same).
CONDITION_MESSAGE_LIMIT = 32768
#: Writes in flight at once (the report lane's concurrency, ``--report-concurrency``).
DEFAULT_WORKERS = 8


def now_rfc3339(moment: datetime | None = None) -> str:
    if moment is not None:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    # Read after every decision: formatted once per second.
    second = int(time.time())
    if _now[0] != second:
        _now[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")]
    return str(_now[1])


_now: list[int | str] = [0, ""]


def bounded_message(message: str, limit: int) -> str:
    """``message`` if it has at most ``limit`` characters; else its first lines (one
    error a line) that fit, then ``... and N more`` (the lines left out); a first line
    too long alone is cut and ends with ``...``."""
    if len(message) <= limit:
        return message
    lines = message.split("\n")
    # Room for the longest tail it could need.
    room = limit - len(f"\n... and {len(lines)} more")
    kept: list[str] = []
    used = 0
    for line in lines:
        needed = len(line) + (1 if kept else 0)
        if used + needed > room:
            break
        kept.append(line)
        used += needed
    if not kept:
        kept.append(lines[0][: max(room - 4, 0)] + " ...")
    left = len(lines) - len(kept)
    return "\n".join(kept) + (f"\n... and {left} more" if left else "")


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
    """The ``Preempted`` event on a victim, in kube-scheduler v1.30's words, for every
    policy: the preemptor's uid, not its namespace/name, which would tell the victim's
    tenant about another tenant's pod (kubernetes#114882)."""
    return f"Preempted by pod {preemptor.uid} on node {node}"


#: The condition a preemption victim carries from before its deletion (v1.26+).
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def preempting_message(scheduler_name: str) -> str:
    """The ``DisruptionTarget`` condition's message, in kube-scheduler's words."""
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


def build_disruption_target_condition(scheduler_name: str, *, now: str) -> dict[str, Any]:
    """``DisruptionTarget=True`` / ``PreemptionByScheduler``: what a Job's
    ``podFailurePolicy`` (``onPodConditions``) and the preemptors of v1.26+ read."""
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": preempting_message(scheduler_name),
        "lastTransitionTime": now,
    }


def build_disruption_patch(victim: Pod, scheduler_name: str, *, now: str) -> dict[str, Any]:
    """The victim's pods/status strategic merge patch: the condition (merged by type),
    and its uid as a precondition (a new pod of the same name refuses the patch, as
    client-go's ``PatchPodStatus`` has it)."""
    return {
        "metadata": {"uid": victim.uid},
        "status": {"conditions": [build_disruption_target_condition(scheduler_name, now=now)]},
    }


_names = itertools.count()


def event_name(involved: Mapping[str, Any]) -> str:
    """A new event's name: the object's, then a suffix unique in this process (as
    client-go's ``<name>.<unix nanoseconds in hex>``)."""
    return f"{involved['name']}.{time.time_ns():x}{next(_names):x}"


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
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(involved), "namespace": namespace},
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


@dataclass(slots=True, eq=False)
class _Event:
    """One Event object of the API: what it says, and how much of it was written."""

    key: tuple[str, str, str, str]
    #: The involved object's uid (what it is remembered under).
    uid: str
    namespace: str
    #: The body to create it with (name fixed when the event began).
    body: dict[str, Any]
    message: str
    #: Occurrences so far, and the time of the latest.
    count: int
    last: str
    #: The count the API has; 0: not created (yet).
    written: int = 0
    #: Waiting in the queue / being written by a worker / changed while being written.
    queued: bool = False
    busy: bool = False
    again: bool = False

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclass(slots=True)
class _Reported:
    """What was sent about one object."""

    #: (type, reason, message, component) -> the event about it
    sent: dict[tuple[str, str, str, str], _Event] = field(default_factory=dict)
    #: reason -> times of distinct messages, for the aggregator
    similar: dict[str, list[float]] = field(default_factory=dict)


#: A condition to write: the pod, "reason:message" (what is compared), the condition.
_Condition = tuple[Pod, str, dict[str, Any]]


class Reporter:
    """Sends conditions and events, aggregated as client-go does; never raises, never
    makes its caller wait for the API (module docstring)."""

    def __init__(
        self,
        api: Api,
        *,
        instance: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        workers: int = DEFAULT_WORKERS,
        max_queued_events: int = MAX_QUEUED_EVENTS,
        on_dropped: Callable[[], None] | None = None,
    ) -> None:
        self.api = api
        self.instance = instance or os.environ.get("POD_NAME") or os.uname().nodename
        self.clock = clock
        self.wall = wall
        #: Writes in flight at most (the report lane's concurrency).
        self.workers = max(1, workers)
        self.max_queued_events = max(1, max_queued_events)
        self._on_dropped = on_dropped
        #: Events dropped from a full queue so far.
        self.dropped = 0
        #: object uid -> what was sent about it, least recently reported first
        self._reported: OrderedDict[str, _Reported] = OrderedDict()
        #: pod uid -> "reason:message" of the PodScheduled condition last written
        self._conditions: dict[str, str] = {}
        #: Events to write, oldest first (each at most once: see _Event.queued).
        self._events: deque[_Event] = deque()
        #: pod uid -> the latest condition to write, in the order pods first asked.
        self._pending: OrderedDict[str, _Condition] = OrderedDict()
        #: pod uid -> the condition to write once the one in flight for it is done.
        self._writing: dict[str, _Condition | None] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._events_turn = False

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
        """Record an event (queued: returns at once); aggregated as the module says."""
        try:
            self._record(namespace, involved, event_type, reason, message, action, component)
        except Exception:  # reporting must never break scheduling
            logger.exception("could not record event %s", reason)

    def _record(
        self,
        namespace: str,
        involved: dict[str, Any],
        event_type: str,
        reason: str,
        message: str,
        action: str,
        component: str,
    ) -> None:
        uid = str(involved.get("uid") or involved.get("name"))
        message = bounded_message(message, EVENT_MESSAGE_LIMIT)
        now = self.clock()
        reported = self._about(uid)
        similar = reported.similar.setdefault(reason, [])
        key = (event_type, reason, message, component)
        if key not in reported.sent:
            similar[:] = [t for t in similar if now - t < SIMILAR_WINDOW]
            similar.append(now)
            # client-go's EventAggregator: the 10th distinct message is already combined.
            if len(similar) >= MAX_SIMILAR:
                message = bounded_message(COMBINED_PREFIX + message, EVENT_MESSAGE_LIMIT)
                key = (event_type, reason, COMBINED_PREFIX, component)
        stamp = now_rfc3339(self.wall())
        sent = reported.sent.get(key)
        if sent is None:
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
            sent = reported.sent[key] = _Event(key, uid, namespace, body, message, 1, stamp)
        else:
            sent.count += 1
            sent.last = stamp
            sent.message = message
        self._want(sent)

    def _want(self, sent: _Event) -> None:
        """Have ``sent`` written as it is now (once: a queued event is written once)."""
        if sent.busy:
            sent.again = True  # written again when the write in flight is done
            return
        if sent.queued:
            return
        if len(self._events) >= self.max_queued_events:
            self._drop(self._events.popleft())
        sent.queued = True
        self._events.append(sent)
        self._spawn()

    def _drop(self, sent: _Event) -> None:
        """The queue is full: the oldest event goes unwritten, and is counted."""
        sent.queued = False
        self.dropped += 1
        if self._on_dropped is not None:
            self._on_dropped()
        if not sent.written:
            # Never created: the next occurrence starts it anew.
            reported = self._reported.get(sent.uid)
            if reported is not None and reported.sent.get(sent.key) is sent:
                del reported.sent[sent.key]

    async def _write_event(self, sent: _Event) -> None:
        sent.busy = True
        try:
            if sent.written >= sent.count:
                return  # nothing new
            if sent.written and await self._patch_event(sent):
                return
            await self._create_event(sent)
        except Exception:  # reporting must never break scheduling
            logger.exception("could not record event %s for %s", sent.key[1], sent.uid)
        finally:
            sent.busy = False
            if sent.again:
                sent.again = False
                self._want(sent)

    async def _patch_event(self, sent: _Event) -> bool:
        """Count up an event already created; False when it is gone (then ``sent`` is
        made a new event, to be created)."""
        count = sent.count
        patch: dict[str, Any] = {"count": count, "lastTimestamp": sent.last}
        if sent.message.startswith(COMBINED_PREFIX):
            patch["message"] = sent.message
        status = await self.api.patch_event(sent.namespace, sent.name, patch)
        if status < 300:
            sent.written = max(sent.written, count)
            return True
        if status != 404:
            # Not counted this time (the next occurrence says the count again).
            logger.warning(
                "could not count event %s for %s: %s",
                sent.key[1],
                sent.uid,
                f"HTTP {status}" if status else "no answer",
            )
            return True
        # The event is gone (expired or deleted): start a new one, this occurrence its first.
        body = dict(sent.body)
        body["metadata"] = {**sent.body["metadata"], "name": event_name(body["involvedObject"])}
        body["firstTimestamp"] = sent.last
        sent.body, sent.count, sent.written = body, 1, 0
        return False

    async def _create_event(self, sent: _Event) -> None:
        count = sent.count
        body = {**sent.body, "message": sent.message, "count": count, "lastTimestamp": sent.last}
        status = await self.api.create_event(sent.namespace, body)
        if status < 300:
            sent.written = count
        elif status == 409:
            # It exists: an earlier create whose answer was lost did go through.
            sent.written = 1
            if count > 1:
                sent.again = True
        else:
            # Not created: the next occurrence creates it (with the count so far).
            logger.warning(
                "could not record event %s for %s: %s",
                sent.key[1],
                sent.uid,
                f"HTTP {status}" if status else "no answer",
            )

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

    # -- the PodScheduled condition --------------------------------------------------------

    async def pod_condition(self, pod: Pod, message: str, *, reason: str) -> None:
        """Have PodScheduled=False with ``reason`` and ``message`` written (queued, and
        replacing any not yet written for the pod: only the latest matters)."""
        message = bounded_message(message, CONDITION_MESSAGE_LIMIT)
        condition = build_unschedulable_condition(
            message, now=now_rfc3339(self.wall()), reason=reason
        )
        self._want_condition((pod, f"{reason}:{message}", condition))

    def _want_condition(self, wanted: _Condition) -> None:
        uid = wanted[0].uid
        if uid in self._writing:
            self._writing[uid] = wanted  # after the write in flight
            return
        if self._conditions.get(uid) == wanted[1]:
            self._pending.pop(uid, None)  # the pod says so already
            return
        self._pending[uid] = wanted
        self._spawn()

    async def _write_condition(self, wanted: _Condition) -> None:
        pod, said, condition = wanted
        self._writing[pod.uid] = None
        try:
            status = await self.api.patch_pod_status(
                pod.namespace, pod.name, build_condition_patch(condition)
            )
            if status < 300:
                self._conditions[pod.uid] = said
            elif status != 404:
                logger.warning(
                    "could not write the PodScheduled condition of %s: %s",
                    pod.key,
                    f"HTTP {status}" if status else "no answer",
                )
        except Exception:  # reporting must never break scheduling
            logger.exception("could not write the PodScheduled condition of %s", pod.key)
        finally:
            following = self._writing.pop(pod.uid, None)
            if following is not None:
                self._want_condition(following)

    async def scheduled(self, pod: Pod, node: str, component: str) -> None:
        """The ``Scheduled`` event; a condition not yet written for the pod is dropped
        (written after the binding, it would say the pod is unschedulable)."""
        self._forget_condition(pod.uid)
        await self.event(
            namespace=pod.namespace,
            involved=pod_reference(pod),
            event_type="Normal",
            reason="Scheduled",
            message=scheduled_message(pod, node),
            action="Binding",
            component=component,
        )

    # -- the workers ---------------------------------------------------------------------

    def _spawn(self) -> None:
        """Enough workers for what is queued, up to ``workers``; each ends when the
        queues are empty, so an idle reporter holds no task."""
        waiting = len(self._events) + len(self._pending)
        # A worker that found the queues empty has ended, though its done callback (which
        # drops it from the set) has not run yet: it is not counted.
        running = sum(1 for task in self._tasks if not task.done())
        while running < min(self.workers, waiting):
            task = asyncio.get_running_loop().create_task(self._work())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            running += 1

    def _next(self) -> Coroutine[Any, Any, None] | None:
        """The next write: conditions and events in turn, each queue oldest first."""
        self._events_turn = not self._events_turn
        if self._events and (self._events_turn or not self._pending):
            sent = self._events.popleft()
            sent.queued = False
            return self._write_event(sent)
        if self._pending:
            _, wanted = self._pending.popitem(last=False)
            return self._write_condition(wanted)
        return None

    async def _work(self) -> None:
        while (write := self._next()) is not None:
            await write

    async def flush(self) -> None:
        """Wait until everything queued was written (or dropped)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def queued(self) -> int:
        """Writes waiting (events and conditions)."""
        return len(self._events) + len(self._pending)

    # -- memory ----------------------------------------------------------------------------

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

    def _forget_condition(self, uid: str) -> None:
        self._conditions.pop(uid, None)
        self._pending.pop(uid, None)
        if uid in self._writing:
            self._writing[uid] = None

    def forget_pod(self, uid: str) -> None:
        """The pod is gone: drop what we remember of its events and condition, and the
        condition not yet written (its events still go out)."""
        self._forget_condition(uid)
        self._reported.pop(uid, None)
