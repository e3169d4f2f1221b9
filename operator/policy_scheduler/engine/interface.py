"""The scheduling framework's plugin interface: statuses, views, the handle, the points.

This is what a plugin is written against (re-exported, with nothing else, by the public
module :mod:`policy_scheduler.framework`; ``docs/plugins.md`` walks through it). It
follows kube-scheduler's ``pkg/scheduler/framework/interface.go`` (v1.27-v1.30) in
Python's terms:

* one :class:`Status` for every extension point: a :class:`Code` and reasons, the plugin
  that returned it filled in by the framework. ``None`` returned where a status is
  expected means Success (Go's nil status);
* a plugin is a class deriving from :class:`Plugin` and from the point classes it
  implements (:class:`FilterPlugin`, :class:`ScorePlugin`, ...); it is made once per
  policy version with its validated arguments (an instance of its ``Args`` pydantic
  model, or None) and the :class:`Handle`;
* the scheduling cycle's points are synchronous (Filter and Score run once per node on
  the hot path), except PostFilter, which may take long (preemption evaluates every
  node) and is ``async`` so that it can yield; the binding cycle's points (PreBind,
  Bind, PostBind) are ``async`` and run off the scheduling loop, one pod each, with a
  deadline; Permit is synchronous and returns Wait with a timeout, the framework waits;
* plugins read the cluster through read-only views: :class:`NodeInfoView` (a node and
  the pods placed on it, with their sums) and :class:`Snapshot` (every node and placed
  pod as the current cycle sees them, the pods still waiting for a node, and the
  objects of the other kinds the scheduler watches, such as PodGroups). Pods, nodes and
  those objects are the frozen objects of :mod:`policy_scheduler.objects`.

The :class:`CycleState` is the engine's own (:mod:`.functions`): one per scheduling
cycle, handed on to the pod's binding cycle.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from ..objects import Node, Pod, Resources
from ..selectors import set_selector
from .cluster import ClusterState
from .functions import CycleState

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "BindPlugin",
    "Code",
    "CycleState",
    "EventRecorder",
    "FilterPlugin",
    "Gang",
    "GangPlugin",
    "Handle",
    "NodeInfoView",
    "NodeScore",
    "PermitPlugin",
    "Plugin",
    "PluginApi",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "ReservePlugin",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "WaitingPod",
]


class Code(enum.IntEnum):
    """What a plugin says (kube-scheduler's status codes, same numbers)."""

    #: Go on.
    SUCCESS = 0
    #: A bug or a failure of the plugin itself, not "does not fit": the attempt fails
    #: and the pod is retried with backoff.
    ERROR = 1
    #: Does not fit; preemption (PostFilter) may help.
    UNSCHEDULABLE = 2
    #: Does not fit and removing pods would not help: no preemption on its account.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    #: Permit only: hold the pod, assumed on its node, until allowed, rejected or timed out.
    WAIT = 4
    #: PreFilter / PreScore: nothing to do for this pod, do not call my Filter / Score.
    #: Bind: not mine to bind, let the next Bind plugin do it.
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's verdict: a code, the reasons (kube-scheduler's ``Reasons``), the plugin.

    Build one with the class methods: ``Status.unschedulable("node(s) lack a rack
    label")``, ``Status.wait(30)``, ``Status.error("cannot reach the inventory")``.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    #: The plugin that returned it; the framework fills it in.
    plugin: str = ""
    #: Permit's Wait: how long to hold the pod, in seconds (capped at 15 minutes).
    timeout: float | None = None
    #: What went wrong, as an object (kube-scheduler's ``Status.Err()``): the scheduler's
    #: own plugins tell the binding cycle what happened through it (an HTTP answer, a
    #: volume binder's error); it never changes what the status means.
    cause: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def success(cls) -> Status:
        return SUCCESS

    @classmethod
    def error(cls, message: str | BaseException) -> Status:
        if isinstance(message, str):
            return cls(Code.ERROR, (message,))
        return cls(Code.ERROR, (f"{type(message).__name__}: {message}",), cause=message)

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        """UnschedulableAndUnresolvable: no eviction can make the pod fit there."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @classmethod
    def wait(cls, timeout: float, *reasons: str) -> Status:
        return cls(Code.WAIT, reasons, timeout=timeout)

    @classmethod
    def skip(cls) -> Status:
        return SKIP

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    @property
    def is_rejected(self) -> bool:
        """Unschedulable or UnschedulableAndUnresolvable."""
        return self.code in _REJECTED

    @property
    def message(self) -> str:
        """The reasons joined as kube-scheduler's ``Status.Message()`` joins them."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return (
            self
            if self.plugin == plugin
            else Status(self.code, self.reasons, plugin, self.timeout, self.cause)
        )


SUCCESS = Status()
SKIP = Status(Code.SKIP)
_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE})


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """PreFilter's answer when only some nodes can fit: their names (the framework
    filters only those, and the sets of several plugins intersect)."""

    node_names: frozenset[str]


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """PostFilter's answer when it made room: the node the pod is nominated to and the
    pods to evict there (the framework deletes them, off the scheduling loop)."""

    nominated_node: str
    victims: tuple[Pod, ...] = ()


@dataclass(slots=True)
class NodeScore:
    """One node's score in NormalizeScore's list (kube-scheduler's ``NodeScore``)."""

    name: str
    score: int


@dataclass(frozen=True, slots=True)
class QueuedPodInfo:
    """A pending pod as QueueSort compares it."""

    pod: Pod
    #: When it entered the queue or last came back to it (monotonic seconds).
    timestamp: float
    #: When it first entered the queue.
    initial_timestamp: float
    attempts: int = 0


class NodeInfoView(Protocol):
    """A node and the pods placed on it (bound or assumed), read-only.

    Sums are kept incrementally by the framework: requests of the placed pods
    (``requested_*``; extended resources in ``requested_scalar``), their requests with
    kube-scheduler's defaults for pods that request nothing (``nonzero_*``: 100m CPU,
    200Mi memory), and the host ports in use. ``generation`` changes whenever the node
    or its pods change.
    """

    @property
    def name(self) -> str: ...
    @property
    def node(self) -> Node: ...
    @property
    def pods(self) -> Mapping[str, Pod]: ...
    @property
    def allocatable(self) -> Resources: ...
    @property
    def requested_cpu(self) -> int: ...
    @property
    def requested_memory(self) -> int: ...
    @property
    def requested_ephemeral(self) -> int: ...
    @property
    def requested_scalar(self) -> Mapping[str, int]: ...
    @property
    def nonzero_cpu(self) -> int: ...
    @property
    def nonzero_memory(self) -> int: ...
    @property
    def generation(self) -> int: ...


#: Pending pods of one namespace (None: all), for :class:`Snapshot`.
PendingPods = Callable[[str | None], Iterable[Pod]]


def _no_pending(namespace: str | None) -> Iterable[Pod]:
    return ()


#: The kinds :meth:`Snapshot.objects` serves: kind -> the cluster state's table of them.
_OBJECT_TABLES: Final[dict[str, Callable[[ClusterState], Mapping[str, Any]]]] = {
    "PodGroup": lambda cluster: cluster.pod_groups,
    "PodDisruptionBudget": lambda cluster: cluster.pdbs,
    "Namespace": lambda cluster: cluster.namespaces,
    "PersistentVolume": lambda cluster: cluster.persistent_volumes,
    "PersistentVolumeClaim": lambda cluster: cluster.claims,
    "StorageClass": lambda cluster: cluster.storage_classes,
    "CSINode": lambda cluster: cluster.csi_nodes,
    "DeviceClass": lambda cluster: cluster.device_classes,
    "ResourceSlice": lambda cluster: cluster.resource_slices,
    "ResourceClaim": lambda cluster: cluster.resource_claims,
    "ResourceClaimTemplate": lambda cluster: cluster.claim_templates,
}


class Snapshot:
    """The cluster as the current scheduling cycle sees it, read-only.

    Every node (in kube-scheduler's NodeTree order: zones taking turns), every placed
    pod (bound, or assumed by this scheduler), the pods still waiting for a node, and
    the objects of the other kinds the scheduler watches (:meth:`objects`). It is the
    live state held still for the cycle: a plugin must neither change it nor keep it
    past the call it was given in.
    """

    __slots__ = ("_cluster", "_pending")

    def __init__(self, cluster: ClusterState, pending: PendingPods = _no_pending) -> None:
        self._cluster = cluster
        self._pending = pending

    def nodes(self) -> Sequence[NodeInfoView]:
        return self._cluster.ordered_nodes()

    def get(self, name: str) -> NodeInfoView | None:
        return self._cluster.nodes.get(name)

    def __len__(self) -> int:
        return len(self._cluster.nodes)

    def pods(
        self, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> Iterator[Pod]:
        """Placed pods, of one namespace or all; with ``labels``, only the pods that
        carry every one of these labels with these values (answered from the cluster's
        label index: cheap however many pods there are)."""
        cluster = self._cluster
        if not labels:
            return cluster.pods_in(None if namespace is None else (namespace,))
        selector = set_selector(labels)
        found = cluster.candidates(None if namespace is None else (namespace,), [selector])
        nodes, matches = cluster.nodes, selector.matches
        return (pod for pod in found if pod.node_name in nodes and matches(pod.labels))

    def pending_pods(
        self, namespace: str | None = None, *, labels: Mapping[str, str] | None = None
    ) -> Iterator[Pod]:
        """Pods waiting for a node, of one namespace or all (optionally only those with
        these labels): every pod in the scheduler's queue, whatever part of it (backing
        off, unschedulable, waiting for a policy to serve its schedulerName), and those
        in a scheduling cycle right now; never a placed one. None offline without a
        queue (``validate``)."""
        placed = self._cluster.pods
        for pod in self._pending(namespace):
            if pod.uid in placed:
                continue
            if labels and any(pod.labels.get(k) != v for k, v in labels.items()):
                continue
            yield pod

    def pod(self, uid: str) -> Pod | None:
        return self._cluster.pods.get(uid)

    def node_of(self, uid: str) -> str | None:
        """Where a placed pod is (bound or assumed); None if it is not placed."""
        pod = self._cluster.pods.get(uid)
        return pod.node_name if pod is not None else None

    def objects(self, kind: str) -> Mapping[str, Any]:
        """The objects of another kind the scheduler watches, read-only, by key:
        ``"namespace/name"`` for a namespaced kind, the name otherwise.

        ``kind`` is the API kind: ``PodGroup`` (:class:`~policy_scheduler.objects.PodGroup`,
        scheduler-plugins' gangs), ``PodDisruptionBudget``, ``Namespace``,
        ``PersistentVolume``, ``PersistentVolumeClaim``, ``StorageClass``, ``CSINode``.
        Values are the frozen objects of :mod:`policy_scheduler.objects`; the framework
        re-exports those it keeps stable (``PodGroup``). Any other kind: KeyError.
        """
        table = _OBJECT_TABLES.get(kind)
        if table is None:
            known = ", ".join(sorted(_OBJECT_TABLES))
            raise KeyError(f"the snapshot holds no {kind!r} objects (it holds {known})")
        return MappingProxyType(table(self._cluster))

    @property
    def cluster(self) -> ClusterState:
        """The engine's state itself, for built-in plugins; third parties use the above."""
        return self._cluster


class WaitingPod(Protocol):
    """A pod a Permit plugin holds: assumed on its node, not yet bound."""

    @property
    def pod(self) -> Pod: ...
    @property
    def node_name(self) -> str: ...
    def pending_plugins(self) -> list[str]:
        """The Permit plugins that have not allowed it yet."""
        ...

    def allow(self, plugin: str) -> None:
        """``plugin`` allows it; bound once every waiting plugin has."""
        ...

    def reject(self, plugin: str, message: str) -> None:
        """Give it up: unreserved and back to the queue, FailedScheduling with ``message``."""
        ...


class EventRecorder(Protocol):
    """Best-effort Kubernetes events about a pod (never awaited: they may be dropped)."""

    def event(
        self, pod: Pod, *, type: str, reason: str, message: str, action: str = ""
    ) -> None: ...


class PluginApi(Protocol):
    """The Kubernetes API as plugins reach it: one JSON request, with a deadline.

    ``path`` is the API path (``/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/g``);
    the answer is the HTTP status and the decoded JSON body (None when there is none).
    Status 0 means no answer within the deadline. Never raises for an HTTP status.
    """

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> tuple[int, Any]: ...


class Handle(Protocol):
    """What the framework gives a plugin (kube-scheduler's ``framework.Handle``)."""

    def snapshot(self) -> Snapshot:
        """The cluster as the cycle in progress sees it (the latest state between cycles)."""
        ...

    @property
    def api(self) -> PluginApi | None:
        """The Kubernetes API; None offline (``simulate``, ``explain``)."""
        ...

    @property
    def events(self) -> EventRecorder: ...

    @property
    def offline(self) -> bool:
        """True in ``simulate``: nothing is written, time does not pass by itself."""
        ...

    def now(self) -> float:
        """Monotonic seconds (the simulation's clock offline)."""
        ...

    def waiting_pods(self) -> Iterator[WaitingPod]: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def reject_waiting_pod(self, uid: str, plugin: str, message: str) -> bool:
        """Reject a waiting pod; False if no pod of that uid waits."""
        ...


# -- the plugins ---------------------------------------------------------------------


class Plugin:
    """A plugin: a class deriving from this and from the points it implements.

    ``name`` is the name policies use (an installed package registers the class under
    that name in the ``policy_scheduler.plugins`` entry-point group); ``Args`` its
    arguments' pydantic model, or None when it takes none. The framework validates a
    policy's ``pluginConfig`` args with ``Args`` before the plugin is made (a policy with
    bad args is not accepted: no running plugin ever sees them) and passes the model
    instance (defaults filled in; ``Args()`` when the policy gives none).
    """

    name: str = ""
    Args: ClassVar[type[BaseModel] | None] = None
    #: Deadline of this plugin's async calls (PostFilter, PreBind, Bind, PostBind), in seconds.
    timeout_seconds: ClassVar[float] = 30.0

    def __init__(self, args: Any, handle: Handle) -> None:
        self.args = args
        self.handle = handle


class PreEnqueuePlugin(Plugin):
    """Before a pod enters the active queue: Success lets it in; anything else keeps it
    out (gated, not attempted) until the pod or the cluster changes."""

    def pre_enqueue(self, pod: Pod) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    """The order of the queue: exactly one per policy (PrioritySort by default)."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    """Once per cycle before Filter: compute what Filter reads (``state.write``), rule
    the pod out (Unschedulable: the other PreFilters still run; UnschedulableAndUnresolvable:
    at once, and no preemption), narrow the nodes (:class:`PreFilterResult`), or Skip
    (this plugin's Filter is not called this cycle)."""

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        raise NotImplementedError


class FilterPlugin(Plugin):
    """Once per node: Success, or why the pod cannot run there. Runs on the hot path
    (thousands of calls per pod): keep it cheap, compute per-pod work in PreFilter."""

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        raise NotImplementedError


class PostFilterPlugin(Plugin):
    """When no node fits: try to make the pod schedulable (preemption). The first
    Success ends the point. Return a :class:`PostFilterResult` to nominate the pod and
    have victims evicted; Unschedulable when nothing helps."""

    async def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> PostFilterResult | Status | None:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    """Once per cycle before Score, with the feasible nodes; Skip: no Score this cycle."""

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    """Once per feasible node: an integer score; then, optionally, ``normalize_score``
    over all of them. After normalisation every score must be within 0..100
    (kube-scheduler's MaxNodeScore); the policy's weight multiplies it. Return a
    Status (Error) instead of a score to fail the attempt."""

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        raise NotImplementedError

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        """Override to rescale the scores in place (kube-scheduler's ScoreExtensions);
        not overridden, the scores are used as they are."""
        return None


def normalizes(plugin: ScorePlugin) -> bool:
    """Whether a Score plugin overrides ``normalize_score``."""
    return type(plugin).normalize_score is not ScorePlugin.normalize_score


class ReservePlugin(Plugin):
    """The pod is assumed on ``node_name``: reserve what you track. A failure (any
    non-Success) unreserves every reserve plugin, in reverse order, and the pod is
    retried. ``unreserve`` must be idempotent and must not fail."""

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    """Last word of the scheduling cycle: Success, a rejection, or Wait (``Status.wait(
    timeout)``): the pod stays assumed on its node until every waiting plugin allowed it
    (through the :class:`Handle`'s waiting pods), one rejects it, or a timeout passes."""

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class PreBindPlugin(Plugin):
    """Before the binding, off the scheduling loop (volumes are bound here)."""

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    """The binding itself: Skip to leave it to the next Bind plugin; the first other
    answer is final (DefaultBinder, through pods/binding, is last)."""

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        raise NotImplementedError


class PostBindPlugin(Plugin):
    """After a successful binding: informational (cleanup), errors are only logged."""

    async def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Gang:
    """A group of pods placed all or nothing (:class:`GangPlugin`).

    ``key`` names the group (unique in the cluster, e.g. ``namespace/podgroup``);
    ``min_member`` pods of it must be placed together; ``placed``: how many of its
    members are placed already (bound or assumed), which count towards it.
    """

    key: str
    min_member: int
    placed: int = 0


class GangPlugin(Plugin):
    """Not an extension point: a plugin that groups pods into gangs.

    When the first pending member of a gang is popped, the framework plans the gang's
    pending members together, on the cluster as it is, one after the other (each sees
    the ones before it assumed): if fewer than ``min_member`` (with those ``placed``
    already) fit, none of them is kept — every assumption and reservation is undone at
    once and each member is refused with the group's reason — so that two gangs never
    each hold part of the cluster waiting for the rest. The members' Permit (Coscheduling's)
    then lets them bind together. Return None for a pod that is in no gang.
    """

    def gang_of(self, pod: Pod) -> Gang | None:
        raise NotImplementedError

    def members_of(self, pod: Pod, gang: Gang) -> int | None:
        """How many pods ``gang`` (``pod``'s) has, placed or pending, counted up to its
        ``min_member``; None if the plugin does not say. Asked only when the group is
        refused: one short of pods is told it waits for members, not that they would
        not fit."""
        return None


#: The point classes, by the ``spec.plugins`` name of their point.
POINT_CLASSES: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def points_of(cls: type[Plugin]) -> tuple[str, ...]:
    """The extension points a plugin class implements, in pipeline order."""
    return tuple(point for point, base in POINT_CLASSES.items() if issubclass(cls, base))
