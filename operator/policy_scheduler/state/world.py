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

Queueing hints: unschedulable pods go back to the active queue only on a change that
could let them fit (kube-scheduler's legacy event handlers):

==============================================  =========================================
change                                          which unschedulable pods are moved
==============================================  =========================================
node added                                      all
node changed: allocatable, labels, taints,      all
unschedulable, condition statuses
node changed otherwise (a heartbeat, images)    none
node deleted                                    none
pod placed on a node (bound, or relabelled)     those with a required pod affinity term
                                                the pod matches
placed pod deleted, finished, or shrunk         all
PV, PVC, StorageClass, CSINode, Service         all
added, changed or deleted
CSIDriver, CSIStorageCapacity added or changed  all (kube-scheduler v1.30's VolumeBinding
                                                registers Add and Update, not Delete)
CSIDriver, CSIStorageCapacity deleted           none
DeviceClass, ResourceSlice, ResourceClaim,      all (and gated pods are asked again)
ResourceClaimTemplate added, changed, deleted
ReplicationController, ReplicaSet, StatefulSet  none (they only weigh in priorities)
PodDisruptionBudget, PriorityClass              none (preemption reads them)
PodGroup added or changed                       its members (scheduler-plugins' Coscheduling
                                                registers PodGroup Add and Update)
pending pod added with the label                the other members of its PodGroup (a gang
``scheduling.x-k8s.io/pod-group``               short of members may now have enough)
Namespace added, changed or deleted             none (kube-scheduler v1.30's InterPodAffinity
                                                registers no namespace event)
a policy accepted, changed or deleted           all (a SchedulingPolicy event that changes no
                                                compiled policy, such as our own status
                                                write coming back, wakes none)
==============================================  =========================================

(``tests/state/test_queueing_hints.py`` has one case per row.)

QueueingHints (kube-scheduler v1.34) narrow the table: node changes, additions and
deletions, placed pods' arrivals, relabellings, deletions and shrinks, and every change
of a PV, PVC, StorageClass, CSINode, CSIDriver, CSIStorageCapacity (not their deletion,
as above) and DRA object are raised as cluster events (``engine/events.py``: Node
Add/Delete/UpdateNodeAllocatable/UpdateNodeLabel/UpdateNodeTaint/UpdateNodeCondition,
AssignedPod Add/UpdatePodLabel/Delete/UpdatePodScaleDown, ``<Kind>`` Add/Update/Delete
with the object's old and new copies) and the queue moves a pod only if a plugin that
rejected it registered the event and its hint says Queue (:meth:`SchedulingQueue.on_event`;
the plugins' registrations come from :meth:`World._registrations`). A pod rejected by a
plugin that registers nothing, by a legacy predicate, or for no known plugin (an error)
still moves as the table says (``legacy``). Services, PodGroups and policies move pods
as the table says, whatever plugins say. (``tests/state/test_queueing_plugin_hints.py``,
``tests/state/test_queueing_hints_v134.py``.)

Reconciliation (:meth:`World.reconcile`): watches can miss deletions (a watch down
across a deletion and a re-list sends no DELETED for the gap). Given a fresh LIST of a
kind, every object the world holds that the LIST lacks, and that no watch event has
mentioned since the LIST began, is deleted, as an informer's re-list would.

Two things the API server and kube-scheduler's queue did are done here, at the door:

* **Priority**: PriorityClasses are kept (by name); a pod without ``spec.priority`` gets
  its class's value (:meth:`World.resolve_priority`), as the Priority admission plugin
  writes it on a real cluster (where this changes nothing) — for ``simulate``'s files
  and emulated clusters. PriorityClasses come before pods in every LIST.
* **Nominations**: the ``status.nominatedNodeName`` of every pending pod, whoever its
  scheduler, goes into the cache's nominations (the filter's first pass counts them);
  a placed, finished, deleted or deleting pod has none.

  A nomination that is over stays in the pod's status until someone clears it; for the
  pods this scheduler serves, the world says when (``Outcome.stale_nomination``; the
  runtime writes ``nominatedNodeName: null`` through the API's pod-critical lane):

  * the watch shows the pod **bound** (to any node) while its status still names a
    nominated node;
  * the pod is **no longer a preemptor**: the scheduler withdrew its nomination
    (:meth:`World.withdraw_nomination`: preemption found no node that would help it,
    or a more important pod took the node), yet the watch still shows it. Such a copy
    does not nominate the pod again in the cache (its room is free for others), and
    the clear is asked again, until a copy without it (or with another node) comes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..engine import events as ev
from ..engine.interface import QueueSortPlugin
from ..engine.pipeline import run_pre_enqueue
from ..engine.predicates.interpod import pod_matches_term
from ..kinds import (
    CAPACITY_KINDS,
    DRA_KINDS,
    NODE,
    PARSE_ERRORS,
    POD,
    POD_GROUP,
    PRIORITY_CLASS,
    SCHEDULING_POLICY,
    SERVICE,
    STORAGE_KINDS,
    Kind,
    PolicyObject,
    kind_of,
)
from ..names import DEFAULT_SCHEDULER_NAME
from ..objects import (
    POD_GROUP_LABEL,
    SYSTEM_PRIORITY_CLASSES,
    Node,
    ObjectError,
    Pod,
    PodGroup,
    PriorityClass,
)
from .admission import Admission, admit
from .cache import OBJECT_KINDS, PodState, SchedulerCache
from .handles import SchedulerHandle
from .policies import PolicyBook, Verdict
from .queueing import Registrations, SchedulingQueue

DELETED = "DELETED"

#: Kinds whose every change may let an unschedulable pod fit (volumes, service affinity,
#: DRA's classes, slices and claims: v1.34's DynamicResources registers their events), or
#: let in a pod a PreEnqueue plugin keeps out (a claim made for it).
WAKING_KINDS = STORAGE_KINDS | {SERVICE} | set(DRA_KINDS)
#: Kinds whose addition or change (never deletion) may let such a pod fit: storage room.
WAKING_ON_CHANGE_KINDS = CAPACITY_KINDS
#: Of those, the kinds raised as cluster events (QueueingHints): the storage and device
#: plugins' hints decide whom they wake; a Service still wakes everyone.
HINTED_KINDS = (STORAGE_KINDS | CAPACITY_KINDS | set(DRA_KINDS)) - {SERVICE}

logger = logging.getLogger(__name__)


def scheduling_relevant(old: Node, new: Node) -> bool:
    """Whether a node update can change where pods fit (not a heartbeat, not images)."""
    return (
        old.allocatable != new.allocatable
        or old.labels != new.labels
        or old.taints != new.taints
        or old.unschedulable != new.unschedulable
        or old.conditions != new.conditions
    )


def node_update(old: Node, new: Node) -> ev.ActionType:
    """What a node update changed that scheduling cares about (0: a heartbeat)."""
    action = ev.ActionType(0)
    if old.allocatable != new.allocatable:
        action |= ev.ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ev.ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= ev.ActionType.UPDATE_NODE_TAINT
    if old.conditions != new.conditions:
        action |= ev.ActionType.UPDATE_NODE_CONDITION
    return action


def pod_group_members(namespace: str, name: str) -> Callable[[Pod], bool]:
    """The pods of the PodGroup ``namespace/name`` (labelled with its name)."""

    def member(pod: Pod) -> bool:
        return pod.namespace == namespace and pod.labels.get(POD_GROUP_LABEL) == name

    return member


def wanted_by_affinity(placed: Pod) -> Callable[[Pod], bool]:
    """Pods with a required pod affinity term that ``placed`` satisfies the selector of."""

    def wants(pod: Pod) -> bool:
        return any(pod_matches_term(term, placed) for term in pod.affinity_required)

    return wants


@dataclass(slots=True)
class Outcome:
    """What one observed object changed that someone may need to hear about."""

    kind: Kind | None
    #: The parsed object (None for deletions, unknown kinds and malformed objects).
    obj: Any = None
    #: The key the object is filed under (:meth:`..kinds.Kind.identity`).
    key: str = ""
    #: Why the object could not be read (a user's mistake, reported on the object).
    error: str | None = None
    #: A pod not taken, and why (gated, being deleted, another namespace).
    skipped: Admission | None = None
    #: Pending pods that wait because no accepted policy serves their schedulerName
    #: any more (their policy was deleted): they deserve a condition saying so.
    parked: list[Pod] = field(default_factory=list)
    #: Policies whose Accepted verdict changed.
    verdicts: list[Verdict] = field(default_factory=list)
    #: A pod of ours whose ``status.nominatedNodeName`` should be cleared (module
    #: docstring, "Nominations").
    stale_nomination: Pod | None = None


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
        handle: SchedulerHandle | None = None,
        allow_default_scheduler: bool = True,
    ) -> None:
        self.cache = cache or SchedulerCache()
        self.queue = queue or SchedulingQueue()
        #: What the policies' plugins are given (made before any policy is compiled).
        self.handle = handle or SchedulerHandle(self.cache)
        self.book = book or PolicyBook(
            default_scheduler_name,
            handle=self.handle,
            allow_default_scheduler=allow_default_scheduler,
        )
        # The queue asks the pod's policy for its order and its PreEnqueue verdict.
        self.queue.sorter_of = self._sorter_of
        self.queue.pre_enqueue = self._pre_enqueue
        self.queue.registrations = self._registrations
        # Plugins see the pending pods through the handle's snapshot.
        self.handle.pending = self.pending_pods
        #: Namespaces whose pods are scheduled (all when empty); pods of every
        #: namespace are still accounted on their nodes.
        self.namespaces = frozenset(namespaces)
        self.clock = self.cache.clock
        #: Per kind: object key -> when a watch event or a LIST last mentioned it.
        self._seen: dict[Kind, dict[str, float]] = {}
        self._nodes: dict[str, Node] = {}  # the last copy of each node, for its changes
        #: PriorityClasses by name, for pods that name one without ``spec.priority``.
        self.priority_classes: dict[str, PriorityClass] = {}
        #: Pending pod uid -> the ``status.nominatedNodeName`` last seen for it.
        self._seen_nominations: dict[str, str] = {}
        #: Pod uid -> the nomination the scheduler withdrew, until the status drops it.
        self._withdrawn: dict[str, str] = {}
        #: The last copy of each storage and DRA object, for their events' old copies.
        self._objects: dict[Kind, dict[str, Any]] = {}
        #: id(compiled policy) -> its plugins' registrations (emptied as policies change).
        self._registered: dict[int, Registrations] = {}

    # -- the door ------------------------------------------------------------------------

    def observe(
        self,
        event_type: str | None,
        raw: Mapping[str, Any],
        kind: Kind | None = None,
        *,
        listed_since: float | None = None,
    ) -> Outcome:
        """One object from a watch event (ADDED/MODIFIED/DELETED) or a LIST.

        ``listed_since``: the object comes from a LIST begun at that time; a watch event
        about it since then is newer than this copy, which is then ignored.
        """
        kind = kind or kind_of(raw)
        if kind is None:
            return Outcome(None)
        key = kind.identity(raw)
        if event_type == DELETED:
            return self._deleted(kind, key)
        seen = self._seen.setdefault(kind, {})
        if listed_since is not None and seen.get(key, float("-inf")) >= listed_since:
            return Outcome(kind, key=key)
        seen[key] = self.clock()
        held = self._unchanged(kind, key, raw)
        if held is not None:
            return Outcome(kind, held, key)
        try:
            obj = kind.parse(raw)
            if kind is POD:
                obj = self.resolve_priority(obj)
        except PARSE_ERRORS as exc:
            return Outcome(kind, key=key, error=str(exc))
        except Exception as exc:  # a parser bug must not take the watch down with it
            logger.exception("could not read %s %s", kind.kind, key)
            return Outcome(kind, key=key, error=f"{kind.kind} {key}: cannot be read: {exc!r}")
        outcome = Outcome(kind, obj, key)
        if kind is POD:
            self._pod(obj, outcome)
        elif kind is NODE:
            self._node(obj)
        elif kind is SCHEDULING_POLICY:
            self._policy(obj, outcome)
        elif kind is PRIORITY_CLASS:
            self.priority_classes[obj.name] = obj
        elif kind in OBJECT_KINDS:
            self.cache.set_object(kind, obj)
            if kind in HINTED_KINDS:
                # A volume may now be bindable, a device free: as the plugins' hints say.
                held = self._objects.setdefault(kind, {})
                old = held.get(key)
                held[key] = obj
                action = ev.ActionType.ADD if old is None else ev.ActionType.UPDATE
                self.queue.on_event(ev.ClusterEvent(kind.kind, action), old, obj)
            elif kind in WAKING_KINDS or kind in WAKING_ON_CHANGE_KINDS:
                self.queue.move_all()  # a service changed
            elif kind is POD_GROUP:
                group: PodGroup = obj
                self.queue.move(pod_group_members(group.namespace, group.name))
        return outcome

    def _unchanged(self, kind: Kind, key: str, raw: Mapping[str, Any]) -> Any:
        """The pod or node already filed from this very version of it, if any.

        Every object comes again, unchanged, in the LISTs: the operator's own and Kopf's
        at startup, each resync, each watch restart. The API server gives a new
        ``resourceVersion`` to every change, so a copy with the version already held is
        filed already and is not parsed again. (A pod we assumed is held at the version
        it had while pending, which is parsed again: it may be stale.)
        """
        meta = raw.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        if not version:
            return None  # files, emulators: nothing tells two copies apart
        held: Pod | Node | None
        if kind is POD:
            if self.cache.state_of(key) is PodState.ADDED:
                held = self.cache.placed_pod(key)
            else:
                held = self.queue.get(key)
        elif kind is NODE:
            held = self._nodes.get(key)
        else:
            return None
        return held if held is not None and held.resource_version == version else None

    def _deleted(self, kind: Kind, key: str) -> Outcome:
        self._seen.get(kind, {}).pop(key, None)
        outcome = Outcome(kind, key=key)
        if kind is POD:
            placed = self.cache.remove_pod(key)
            self.queue.delete(key)
            self._forget_nomination(key)
            if placed is not None:  # freed resources may help
                self.queue.on_event(_ASSIGNED_POD_DELETE, placed, None)
        elif kind is PRIORITY_CLASS:
            self.priority_classes.pop(key, None)
        elif kind is NODE:
            gone = self._nodes.pop(key, None)
            self.cache.remove_node(key)
            if gone is not None:
                # Only plugins that register it (PodTopologySpread) wake pods for it.
                self.queue.on_event(_NODE_DELETE, gone, None, legacy=_nobody)
        elif kind is SCHEDULING_POLICY:
            outcome.verdicts = self.book.remove(key)
            outcome.parked = self._policies_changed()
        elif kind in OBJECT_KINDS:
            self.cache.remove_object(kind, key)
            if kind in HINTED_KINDS:
                old = self._objects.get(kind, {}).pop(key, None)
                if kind not in WAKING_ON_CHANGE_KINDS:
                    delete = ev.ClusterEvent(kind.kind, ev.ActionType.DELETE)
                    self.queue.on_event(delete, old, None)
            elif kind in WAKING_KINDS:
                self.queue.move_all()
        return outcome

    def reconcile(self, kind: Kind, present: Collection[str], since: float) -> list[Outcome]:
        """Delete what a LIST of ``kind`` begun at ``since`` shows is gone: the objects
        whose identity (:meth:`Kind.identity`) is not in ``present``.

        The listed objects themselves are not observed here (the caller feeds them
        through :meth:`observe` first); only the absent ones are handled, and only
        those no watch event mentioned after the LIST began.
        """
        seen = self._seen.get(kind, {})
        gone = [key for key, when in seen.items() if key not in present and when < since]
        return [self._deleted(kind, key) for key in gone]

    # -- per kind ------------------------------------------------------------------------

    def _pod(self, pod: Pod, outcome: Outcome) -> None:
        cache, queue = self.cache, self.queue
        if cache.was_deleted(pod.uid):
            return  # a late replay of a pod we saw deleted
        admission = admit(pod, self.namespaces)
        if admission is Admission.FINISHED:
            placed = cache.remove_pod(pod.uid, remember=False)
            queue.delete(pod.uid)
            self._forget_nomination(pod.uid)
            if placed is not None:
                # Its node has room again: as a deletion (kube-scheduler's pod informer
                # leaves finished pods out, so it saw a finished pod as deleted).
                queue.on_event(_ASSIGNED_POD_DELETE, placed, None)
            return
        if admission is Admission.PLACED:
            was_confirmed = cache.state_of(pod.uid) is PodState.ADDED
            before = cache.confirm(pod)
            queue.delete(pod.uid)
            self._forget_nomination(pod.uid)
            if pod.nominated_node_name and self._ours(pod):
                outcome.stale_nomination = pod  # bound: the nomination is over
            if before is not None and _shrank(before, pod):
                # A placed pod was resized: room may have appeared.
                queue.on_event(_ASSIGNED_POD_SCALE_DOWN, before, pod)
            elif not was_confirmed or before is None:
                # Newly bound: pods whose affinity it satisfies may fit (and those
                # whose plugins' hints say so: InterPodAffinity, PodTopologySpread).
                queue.on_event(_ASSIGNED_POD_ADD, None, pod, legacy=wanted_by_affinity(pod))
            elif before.labels != pod.labels:
                queue.on_event(_ASSIGNED_POD_LABEL, before, pod, legacy=wanted_by_affinity(pod))
            return
        if cache.is_placed(pod.uid):
            return  # an older copy, from before its binding: stale
        if self._nomination(pod, admission) and self._ours(pod):
            outcome.stale_nomination = pod
        if admission is not Admission.PENDING:
            queue.delete(pod.uid)
            outcome.skipped = admission
            return
        served = self.book.serves(pod.scheduler_name)
        if not queue.add(pod, served=served):
            return
        if not served and self.book.orphaned(pod.scheduler_name):
            outcome.parked.append(pod)
        group = pod.labels.get(POD_GROUP_LABEL)
        if group:
            # A new member: a gang that was short of members may have enough now.
            queue.move(pod_group_members(pod.namespace, group))

    def _nomination(self, pod: Pod, admission: Admission) -> bool:
        """Keep the cache's nominations as the pending pods' status says; True when the
        status still shows a nomination the scheduler withdrew (it is not taken back).

        Any scheduler's nominations count (kube-scheduler's preemptors included), for
        pods of any namespace. A copy without ``nominatedNodeName`` after one without
        either keeps a nomination we made ourselves and have not seen come back yet
        (kube-scheduler's ``nominatedPodMap.update``); one that drops it clears it.
        """
        uid, node = pod.uid, pod.nominated_node_name
        if admission in (Admission.DELETING, Admission.GATED):
            self._forget_nomination(uid)
            return False
        withdrawn = self._withdrawn.get(uid)
        if withdrawn is not None:
            if node == withdrawn and self.cache.nominated_node(uid) != node:
                return True  # our withdrawal has not reached the API yet
            del self._withdrawn[uid]  # cleared, or nominated anew
        seen = self._seen_nominations.get(uid, "")
        if node:
            self.cache.nominate(pod, node)
            self._seen_nominations[uid] = node
        elif seen:
            self._forget_nomination(uid)
        return False

    def _forget_nomination(self, uid: str) -> None:
        self._seen_nominations.pop(uid, None)
        self._withdrawn.pop(uid, None)
        self.cache.unnominate(uid)

    def withdraw_nomination(self, pod: Pod) -> None:
        """The scheduler ends ``pod``'s nomination (preemption's ``clear``): out of the
        cache now; copies of the pod that still show it do not bring it back, and say
        it is stale (module docstring), until the status drops it."""
        node = self.cache.nominated_node(pod.uid) or pod.nominated_node_name
        self.cache.unnominate(pod.uid)
        if node:
            self._withdrawn[pod.uid] = node

    def _ours(self, pod: Pod) -> bool:
        """A pod this scheduler schedules (its name served, its namespace taken)."""
        if self.namespaces and pod.namespace not in self.namespaces:
            return False
        return self.book.serves(pod.scheduler_name)

    def resolve_priority(self, pod: Pod) -> Pod:
        """What the Priority admission plugin writes: ``spec.priority`` from the pod's
        ``priorityClassName`` (the lowest-valued ``globalDefault`` class when it names
        none, else 0), and the class's ``preemptionPolicy`` if the pod has none.

        Raises ObjectError for a class that does not exist (the API server would have
        refused the pod). A pod with ``spec.priority`` is returned as it is.
        """
        if pod.priority_set:
            return pod
        name = pod.priority_class_name
        found: PriorityClass | None
        if name:
            found = self.priority_classes.get(name) or next(
                (c for c in SYSTEM_PRIORITY_CLASSES if c.name == name), None
            )
            if found is None:
                raise ObjectError(
                    "Pod", pod.key, "spec.priorityClassName", f"no PriorityClass {name!r} found"
                )
        else:
            defaults = [c for c in self.priority_classes.values() if c.global_default]
            found = min(defaults, key=lambda c: c.value, default=None)
        if found is None:
            return replace(pod, priority=0, priority_set=True)
        return replace(
            pod,
            priority=found.value,
            priority_set=True,
            preemption_policy=pod.preemption_policy or found.preemption_policy,
        )

    def _node(self, node: Node) -> None:
        old = self._nodes.get(node.name)
        self._nodes[node.name] = node
        self.cache.set_node(node)
        if old is None:
            self.queue.on_event(_NODE_ADD, None, node)
        elif action := node_update(old, node):
            self.queue.on_event(ev.ClusterEvent(ev.NODE, action), old, node)

    def _policy(self, obj: PolicyObject, outcome: Outcome) -> None:
        applied = self.apply_policy(obj)
        outcome.verdicts, outcome.parked = applied.verdicts, applied.parked

    def apply_policy(self, obj: PolicyObject) -> Outcome:
        """A SchedulingPolicy, already parsed (``simulate`` orders them by file position)."""
        outcome = Outcome(None, obj)
        before = self.book.versions()
        outcome.verdicts = self.book.apply(obj)
        after = self.book.versions()
        if len(after) != len(before) or any(a is not b for a, b in zip(after, before, strict=True)):
            outcome.parked = self._policies_changed()
        # Else nothing that schedules changed (our own status write came back): the
        # unschedulable pods sleep on (QueueingHints; a policy's change wakes them all).
        return outcome

    def _policies_changed(self) -> list[Pod]:
        self._registered.clear()
        parked = self.queue.reassess(self.book.serves)
        self.queue.move_all()
        return [pod for pod in parked if self.book.orphaned(pod.scheduler_name)]

    def _sorter_of(self, pod: Pod) -> QueueSortPlugin | None:
        policy = self.book.policy_for(pod.scheduler_name)
        sort = policy.pipeline.queue_sort if policy is not None else None
        plugin = sort.plugin if sort is not None else None
        return plugin if isinstance(plugin, QueueSortPlugin) else None

    def _registrations(self, pod: Pod) -> Registrations:
        """The events the plugins of the pod's policy register (None for a plugin
        that registers nothing: any change may help the pods it rejected)."""
        policy = self.book.policy_for(pod.scheduler_name)
        if policy is None:
            return {}
        found = self._registered.get(id(policy))
        if found is None:
            found = {}
            pipeline = policy.pipeline
            for entries in (
                policy.filter_plugins,
                pipeline.pre_enqueue,
                pipeline.pre_filter,
                pipeline.post_filter,
                pipeline.reserve,
                pipeline.permit,
                pipeline.pre_bind,
            ):
                for entry in entries:
                    found[entry.name] = _events_of(entry.plugin)
            self._registered[id(policy)] = found
        return found

    def _pre_enqueue(self, pod: Pod) -> str | None:
        policy = self.book.policy_for(pod.scheduler_name)
        if policy is None or not policy.pipeline.pre_enqueue:
            return None
        status = run_pre_enqueue(policy.pipeline, pod)
        if status is None:
            return None
        return f"{status.plugin}: {status.message}" if status.plugin else status.message

    # -- reading -------------------------------------------------------------------------

    def pending_pods(self, namespace: str | None = None) -> Iterator[Pod]:
        """Pods waiting for a node (being scheduled, then queued), of one namespace or all."""
        for pod in self.queue.pending():
            if namespace is None or pod.namespace == namespace:
                yield pod

    def waiting(self, scheduler_name: str, parts: Collection[str]) -> int:
        """Pending pods of ``scheduler_name`` in these parts of the queue."""
        where: Callable[[str], str | None] = self.queue.where
        return sum(1 for pod in self.queue.pods(scheduler_name) if where(pod.uid) in parts)


_NODE_ADD = ev.ClusterEvent(ev.NODE, ev.ActionType.ADD)
_NODE_DELETE = ev.ClusterEvent(ev.NODE, ev.ActionType.DELETE)
_ASSIGNED_POD_ADD = ev.ClusterEvent(ev.ASSIGNED_POD, ev.ActionType.ADD)
_ASSIGNED_POD_LABEL = ev.ClusterEvent(ev.ASSIGNED_POD, ev.ActionType.UPDATE_POD_LABEL)


def _nobody(pod: Pod) -> bool:
    """Pods without hints are not woken by this change (the table above)."""
    return False


_ASSIGNED_POD_DELETE = ev.ClusterEvent(ev.ASSIGNED_POD, ev.ActionType.DELETE)
_ASSIGNED_POD_SCALE_DOWN = ev.ClusterEvent(ev.ASSIGNED_POD, ev.ActionType.UPDATE_POD_SCALE_DOWN)


def _events_of(plugin: object) -> list[ev.ClusterEventWithHint] | None:
    """A plugin's ``events_to_register()``; None if it has none, or it fails."""
    method = getattr(plugin, "events_to_register", None)
    if method is None:
        return None
    try:
        found = method()
    except Exception:
        logger.exception("events_to_register of %s raised", type(plugin).__name__)
        return None
    if found is None:
        return None
    return [each for each in found if isinstance(each, ev.ClusterEventWithHint)]


def _shrank(before: Pod, after: Pod) -> bool:
    """A placed pod now asks for less of something (an in-place resize): room appeared."""
    old, new = before.node_request, after.node_request
    return (
        new.milli_cpu < old.milli_cpu
        or new.memory < old.memory
        or new.ephemeral_storage < old.ephemeral_storage
        or any(new.scalar.get(name, 0) < amount for name, amount in old.scalar.items())
        or set(after.host_ports) < set(before.host_ports)
    )
