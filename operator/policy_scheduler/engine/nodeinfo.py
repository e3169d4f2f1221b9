"""Per-node aggregates, kept up to date incrementally.

A :class:`NodeInfo` is kube-scheduler's ``schedulernodeinfo.NodeInfo``: a node plus the
pods placed on it (bound or assumed) and the sums the predicates and priorities read —
requested resources, the priorities' non-zero requests, used host ports, the pods that
carry affinity terms. Adding or removing a pod updates the sums in O(containers), so no
decision ever re-sums a node's pods, whatever their number.

``zone_key`` is the node's region/zone key (``utilnode.GetZoneKey``), computed when the
node is set rather than by every spreading priority for every scored node.

``allocatable`` is the node's (one attribute less to walk per node); ``free_cpu``,
``free_memory``, ``free_ephemeral`` and ``free_pods`` are what it leaves once the placed
pods' requests are counted (negative when overcommitted), kept up to date with the sums
so that a resource check over many nodes is a comparison per resource; ``flagged`` says
whether the node is cordoned, tainted or reports a condition other than ``Ready=True``
and every other ``False``: the node health and taint predicates can only refuse a
flagged node, so the fast path's screens skip the others. ``image_sizes`` (name ->
size of the first image the node lists under it) is built on first use by
ImageLocality.

``init_excess`` is what kube-scheduler v1.28+ counts beyond those sums (init containers
and sidecars, :class:`~..objects.InitDemands`): None while no pod here has any, which is
the usual case; the in-tree plugins add it to the legacy sums, the legacy priorities
and predicates never read it.

``generation`` increases on every change; a cache of results keyed by
(node, generation) can never serve a stale answer.

``scores`` and ``node_scores`` hold node-local priority scores already computed here,
keyed by what of the pod they read (its non-zero requests, its images' spread): the
first is replaced by an empty dict on every change of the node or its pods, the second
on every change of the node itself. Replaced, not cleared: a :meth:`~NodeInfo.copy`
shares them while both sides are the same, and keeps them when the other side changes.
Pods of one template ask the same, and a node is scored again and again between two
changes (each pod scores a tenth of a big cluster): most lookups hit. A dict that
reaches :data:`MEMO_LIMIT` entries starts over (pods of many distinct requests or
images); the keys are :func:`memo_key`'s.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Final

from ..objects import REGION_LABELS, ZONE_LABELS, HostPort, InitDemands, Node, Pod

_generations = count(1)

#: How many scores ``scores`` and ``node_scores`` keep before they start over.
MEMO_LIMIT: Final = 64

#: Distinct values handed a key by :func:`memo_key` before the table starts over.
_KEY_LIMIT: Final = 4096
_keys: dict[Hashable, object] = {}


def memo_key(value: Hashable) -> object:
    """The key ``scores`` and ``node_scores`` keep results for ``value`` under: one plain
    object per distinct value, hashed and compared by identity. A node's dict is looked up
    once per scored node, and hashing a tuple each time (then comparing it item by item)
    cost as much as the arithmetic it saves. When the table starts over, new values get
    new objects: an old one is never handed out again for another value."""
    key = _keys.get(value)
    if key is None:
        if len(_keys) >= _KEY_LIMIT:
            _keys.clear()
        key = _keys[value] = object()
    return key


#: The condition statuses of a node nothing is wrong with (any other type: "False").
_QUIET_CONDITIONS = {"Ready": "True"}


def is_flagged(node: Node) -> bool:
    """Cordoned, tainted, or a condition other than Ready=True and the rest False."""
    if node.unschedulable or node.taints:
        return True
    for ctype, status in node.conditions.items():
        if status != _QUIET_CONDITIONS.get(ctype, "False"):
            return True
    return False


def zone_key(node: Node) -> str:
    """Region and zone of a node (utilnode.GetZoneKey); "" for a node without both."""
    labels = node.labels
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    if not region and not zone:
        return ""
    # Interned: every node of a zone shares one string instead of holding its own.
    return sys.intern(f"{region}:\x00:{zone}")


@dataclass(frozen=True, slots=True)
class InitExcess:
    """What today's node sums add to the legacy ones (see :class:`~..objects.InitDemands`):
    ``Requested`` minus ``requested_*``, ``NonZeroRequested`` minus ``nonzero_*``.
    Replaced, never changed: a :meth:`NodeInfo.copy` may share it."""

    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    scalar: Mapping[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0

    def plus(self, init: InitDemands, sign: int) -> InitExcess | None:
        """This with one pod's excess added (sign 1) or taken away (-1); None when nothing
        is left."""
        excess = init.excess
        scalar = dict(self.scalar)
        for name, amount in excess.scalar.items():
            total = scalar.get(name, 0) + sign * amount
            if total:
                scalar[name] = total
            else:
                scalar.pop(name, None)
        made = InitExcess(
            self.cpu + sign * excess.milli_cpu,
            self.memory + sign * excess.memory,
            self.ephemeral + sign * excess.ephemeral_storage,
            scalar,
            self.nonzero_cpu + sign * init.excess_nonzero_cpu,
            self.nonzero_memory + sign * init.excess_nonzero_memory,
        )
        if not (
            made.cpu
            or made.memory
            or made.ephemeral
            or scalar
            or made.nonzero_cpu
            or made.nonzero_memory
        ):
            return None
        return made


_NO_EXCESS: Final = InitExcess()


class NodeInfo:
    """A node, the pods placed on it and their incremental sums (module docstring)."""

    __slots__ = (
        "allocatable",
        "flagged",
        "free_cpu",
        "free_ephemeral",
        "free_memory",
        "free_pods",
        "generation",
        "image_sizes",
        "init_excess",
        "name",
        "node",
        "node_scores",
        "nonzero_cpu",
        "nonzero_memory",
        "pods",
        "pods_with_affinity",
        "requested_cpu",
        "requested_ephemeral",
        "requested_memory",
        "requested_scalar",
        "scores",
        "used_ports",
        "zone_key",
    )

    def __init__(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.zone_key = zone_key(node)
        self.allocatable = node.allocatable
        self.flagged = is_flagged(node)
        self.image_sizes: dict[str, int] | None = None
        self.pods: dict[str, Pod] = {}
        self.requested_cpu = 0
        self.requested_memory = 0
        self.requested_ephemeral = 0
        self.requested_scalar: dict[str, int] = {}
        self.nonzero_cpu = 0
        self.nonzero_memory = 0
        self.used_ports: Counter[HostPort] = Counter()
        self.pods_with_affinity: dict[str, Pod] = {}
        self.init_excess: InitExcess | None = None
        self.scores: dict[object, Any] = {}
        self.node_scores: dict[object, Any] = {}
        self._free()
        self.generation = next(_generations)

    def _free(self) -> None:
        allocatable = self.allocatable
        self.free_cpu = allocatable.milli_cpu - self.requested_cpu
        self.free_memory = allocatable.memory - self.requested_memory
        self.free_ephemeral = allocatable.ephemeral_storage - self.requested_ephemeral
        self.free_pods = allocatable.allowed_pods - len(self.pods)

    def copy(self) -> NodeInfo:
        """A copy sharing the pods and the sums, for a what-if check that replaces its node
        (``set_node`` on the copy leaves this one alone); never add or remove pods on it."""
        twin = NodeInfo.__new__(NodeInfo)
        for slot in NodeInfo.__slots__:
            setattr(twin, slot, getattr(self, slot))
        return twin

    def set_node(self, node: Node) -> None:
        self.node = node
        self.zone_key = zone_key(node)
        self.allocatable = node.allocatable
        self.flagged = is_flagged(node)
        self.image_sizes = None
        self.scores = {}
        self.node_scores = {}
        self._free()
        self.generation = next(_generations)

    def index_images(self) -> dict[str, int]:
        """``image_sizes``, built now if it was not: each name's first listed size."""
        sizes = self.image_sizes
        if sizes is None:
            sizes = {}
            for state in self.node.images:
                for name in state.names:
                    sizes.setdefault(name, state.size)
            self.image_sizes = sizes
        return sizes

    def add_pod(self, pod: Pod) -> None:
        if pod.uid in self.pods:
            self.remove_pod(self.pods[pod.uid])
        self.pods[pod.uid] = pod
        self._account(pod, 1)
        if pod.has_pod_affinity:
            self.pods_with_affinity[pod.uid] = pod

    def remove_pod(self, pod: Pod) -> None:
        known = self.pods.pop(pod.uid, None)
        if known is None:
            return
        self._account(known, -1)
        self.pods_with_affinity.pop(pod.uid, None)

    def _account(self, pod: Pod, sign: int) -> None:
        req = pod.node_request
        self.requested_cpu += sign * req.milli_cpu
        self.requested_memory += sign * req.memory
        self.requested_ephemeral += sign * req.ephemeral_storage
        for name, amount in req.scalar.items():
            total = self.requested_scalar.get(name, 0) + sign * amount
            if total:
                self.requested_scalar[name] = total
            else:
                self.requested_scalar.pop(name, None)
        self.nonzero_cpu += sign * pod.nonzero_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        init = pod.init
        if init is not None and init.adds:
            self.init_excess = (self.init_excess or _NO_EXCESS).plus(init, sign)
        for port in pod.host_ports:
            self.used_ports[port] += sign
            if self.used_ports[port] <= 0:
                del self.used_ports[port]
        self.scores = {}
        self._free()
        self.generation = next(_generations)

    def ports_conflict(self, wanted: tuple[HostPort, ...]) -> bool:
        """HostPortInfo.CheckConflict: 0.0.0.0 clashes with any IP on the same protocol/port."""
        used = self.used_ports
        if not used:
            return False
        for want in wanted:
            if want.ip == "0.0.0.0":
                for have in used:
                    if have.port == want.port and have.protocol == want.protocol:
                        return True
            elif (
                HostPort("0.0.0.0", want.protocol, want.port) in used
                or HostPort(want.ip, want.protocol, want.port) in used
            ):
                return True
        return False

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"
