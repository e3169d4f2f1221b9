"""Everything the scheduler knows, fed by one door: :meth:`World.observe`.

A :class:`World` owns the three state machines and nothing else owns their data:

* the :class:`~.cache.SchedulerCache`: the cluster (nodes, placed pods, volumes,
  workloads) and our assumptions — the only writer of the engine's cluster state;
* the :class:`~.queueing.SchedulingQueue`: every pending pod, served or waiting for a
  policy;
* the :class:`~.policies.PolicyBook`: which policy serves which schedulerName.

``observe(event_type, raw)`` takes one object as a watch event or a LIST item reports
it, parses it once (:mod:`..kinds`), and routes it: a pod by :func:`.admission.admit`
(placed -> cache, pending -> queue, finished or deleted -> out of both), a node or
another kind into the cache, a SchedulingPolicy into the book (after which the queue is
reassessed: pods of a name now served start, pods whose policy is gone wait). It
returns an :class:`Outcome` saying what people should be told (a malformed object, pods
now waiting for a policy, policy verdicts); the operator reports it, ``simulate``
prints notes. Both use this same door, so which pods are taken and how every kind is
read is written once.

Unschedulable pods are moved back to the active queue (``queue.move_all``) by the
changes that could let them fit: a node added or changed, a placed pod deleted or
shrunk, a storage object changed, a policy changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..kinds import (
    NODE,
    PARSE_ERRORS,
    POD,
    SCHEDULING_POLICY,
    STORAGE_KINDS,
    Kind,
    PolicyObject,
    kind_of,
)
from ..names import DEFAULT_SCHEDULER_NAME
from ..objects import Node, Pod
from .admission import Admission, admit
from .cache import OBJECT_KINDS, SchedulerCache
from .policies import PolicyBook, Verdict
from .queueing import SchedulingQueue

DELETED = "DELETED"


@dataclass(slots=True)
class Outcome:
    """What one observed object changed that someone may need to hear about."""

    kind: Kind | None
    #: The parsed object (None for deletions, unknown kinds and malformed objects).
    obj: Any = None
    #: Why the object could not be read (a user's mistake, reported on the object).
    error: str | None = None
    #: A pod not taken, and why (gated, being deleted, another namespace).
    skipped: Admission | None = None
    #: Pending pods that wait because no accepted policy serves their schedulerName
    #: any more (their policy was deleted): they deserve a condition saying so.
    parked: list[Pod] = field(default_factory=list)
    #: Policies whose Accepted verdict changed.
    verdicts: list[Verdict] = field(default_factory=list)


class World:
    """The cache, the queue and the policy book behind one door (module docstring)."""

    def __init__(
        self,
        *,
        default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        namespaces: Collection[str] = (),
        cache: SchedulerCache | None = None,
        queue: SchedulingQueue | None = None,
        book: PolicyBook | None = None,
    ) -> None:
        self.cache = cache or SchedulerCache()
        self.queue = queue or SchedulingQueue()
        self.book = book or PolicyBook(default_scheduler_name)
        #: Namespaces whose pods are scheduled (all when empty); pods of every
        #: namespace are still accounted on their nodes.
        self.namespaces = frozenset(namespaces)

    # -- the door ------------------------------------------------------------------------

    def observe(
        self, event_type: str | None, raw: Mapping[str, Any], kind: Kind | None = None
    ) -> Outcome:
        """One object from a watch event (ADDED/MODIFIED/DELETED) or a LIST."""
        kind = kind or kind_of(raw)
        if kind is None:
            return Outcome(None)
        if event_type == DELETED:
            return self._deleted(kind, raw)
        try:
            obj = kind.parse(raw)
        except PARSE_ERRORS as exc:
            return Outcome(kind, error=str(exc))
        outcome = Outcome(kind, obj)
        if kind is POD:
            self._pod(obj, outcome)
        elif kind is NODE:
            self._node(obj)
        elif kind is SCHEDULING_POLICY:
            self._policy(obj, outcome)
        elif kind in OBJECT_KINDS:
            self.cache.set_object(kind, obj)
            if kind in STORAGE_KINDS:
                self.queue.move_all()  # a volume may now be bindable
        return outcome

    def _deleted(self, kind: Kind, raw: Mapping[str, Any]) -> Outcome:
        key = kind.identity(raw)
        outcome = Outcome(kind)
        if kind is POD:
            placed = self.cache.remove_pod(key)
            self.queue.delete(key)
            if placed is not None:
                self.queue.move_all()  # freed resources may help
        elif kind is NODE:
            self.cache.remove_node(key)
        elif kind is SCHEDULING_POLICY:
            outcome.verdicts = self.book.remove(key)
            outcome.parked = self._policies_changed()
        elif kind in OBJECT_KINDS:
            self.cache.remove_object(kind, key)
            if kind in STORAGE_KINDS:
                self.queue.move_all()
        return outcome

    # -- per kind ------------------------------------------------------------------------

    def _pod(self, pod: Pod, outcome: Outcome) -> None:
        cache, queue = self.cache, self.queue
        if cache.was_deleted(pod.uid):
            return  # a late replay of a pod we saw deleted
        admission = admit(pod, self.namespaces)
        if admission is Admission.FINISHED:
            cache.remove_pod(pod.uid, remember=False)
            queue.delete(pod.uid)
            return
        if admission is Admission.PLACED:
            before = cache.confirm(pod)
            queue.delete(pod.uid)
            if before is not None and before.node_request != pod.node_request:
                queue.move_all()  # a placed pod was resized: room may have appeared
            return
        if cache.is_placed(pod.uid):
            return  # an older copy, from before its binding: stale
        if admission is not Admission.PENDING:
            queue.delete(pod.uid)
            outcome.skipped = admission
            return
        served = self.book.serves(pod.scheduler_name)
        if queue.add(pod, served=served) and not served and self.book.orphaned(pod.scheduler_name):
            outcome.parked.append(pod)

    def _node(self, node: Node) -> None:
        self.cache.set_node(node)
        self.queue.move_all()

    def _policy(self, obj: PolicyObject, outcome: Outcome) -> None:
        applied = self.apply_policy(obj)
        outcome.verdicts, outcome.parked = applied.verdicts, applied.parked

    def apply_policy(self, obj: PolicyObject) -> Outcome:
        """A SchedulingPolicy, already parsed (``simulate`` orders them by file position)."""
        outcome = Outcome(None, obj)
        outcome.verdicts = self.book.apply(obj)
        outcome.parked = self._policies_changed()
        return outcome

    def _policies_changed(self) -> list[Pod]:
        parked = self.queue.reassess(self.book.serves)
        self.queue.move_all()
        return [pod for pod in parked if self.book.orphaned(pod.scheduler_name)]

    # -- reading -------------------------------------------------------------------------

    def waiting(self, scheduler_name: str, parts: Collection[str]) -> int:
        """Pending pods of ``scheduler_name`` in these parts of the queue."""
        where: Callable[[str], str | None] = self.queue.where
        return sum(1 for pod in self.queue.pods(scheduler_name) if where(pod.uid) in parts)
