"""The cluster state the engine decides against.

:class:`ClusterState` holds one :class:`NodeInfo` per node, the placed pods (bound or
assumed) by uid, and the other kinds the predicates read (PVs, PVCs, StorageClasses,
CSINodes, Services and controllers), the PodDisruptionBudgets preemption reads, the
Namespaces (for their labels, which a pod affinity term's namespaceSelector reads), the
PodGroups (scheduler-plugins' gangs, which the Coscheduling plugin reads), and the
*nominated* pods: pending pods a preemption set a node aside for, which the filter's
first pass counts (``fitting.py``). It is written only by the scheduler cache
(``state.cache``), which ``simulate`` and the operator both feed; every ``set_*`` /
``remove_*`` call is idempotent, so a duplicate ADDED event changes nothing. The one
exception is a :class:`Trial` (:meth:`ClusterState.trial`): the engine takes pods off a
node or puts pods on it to ask "would the pod fit then?", and undoes it exactly before
anyone else can look.

Nodes are listed the way kube-scheduler's NodeTree lists them: zones in the order they
were first seen, one node from each zone in turn. With ``percentageOfNodesToScore``
below 100, the sample a pod sees is then spread over zones.

A pod whose node is not (yet) known is kept and accounted for as soon as the node
appears, as the scheduler cache does.

Indexes for the fast paths
--------------------------
Predicates and priorities that look at *other* pods (inter-pod affinity, spreading)
would otherwise walk every placed pod once per decision. ``add_pod`` / ``remove_pod``
keep, incrementally, what lets them visit only the pods that can matter:

* ``affinity_pods``: the placed pods carrying any pod (anti-)affinity term;
* ``required_anti_affinity_terms``, ``required_affinity_terms``,
  ``preferred_affinity_terms``, ``preferred_anti_affinity_terms``: each distinct term of
  the placed pods on known nodes (terms are frozen values, so the replicas of one
  workload share one entry) -> topology value (the term's topologyKey on the carrying
  pod's node) -> how many placed pods carry it there. A decision visits each distinct
  term once and, when the term selects the incoming pod, takes its topology domains as
  they are. These depend on node labels, so ``set_node`` (a relabelled node),
  ``remove_node`` and a node's arrival recount the terms of the pods on that node;
* placed pods by namespace, and by (namespace, label key, label value):
  :meth:`candidates` answers "which placed pods can match these selectors in these
  namespaces" from the smallest bucket of an ``In`` requirement (matchLabels become
  ``In``), or from the namespaces' pods when no requirement is an ``In``. A bucket of
  one pod is the pod itself, not a dict, so a unique label value costs one dict entry;
* ``node_label_values``: label key -> value -> nodes carrying it (topology domains
  without a walk over the nodes);
* workloads (Services, controllers) by namespace (:meth:`workloads_in`): the spreading
  priorities look for those selecting a pod without a walk over every namespace's;
* ``pod_journal``: every placed pod indexed (+1) or unindexed (-1), in order, and
  ``node_generation``, bumped when a node arrives, changes or leaves. A reader that
  counted placed pods (PodTopologySpread's counts per domain, kept in ``shared_counts``
  for the next pod asking the same) catches up by reading the pods changed since,
  as long as no node changed meanwhile.

The namespace and label indexes hold every placed pod, including pods whose node is not
known yet; readers skip those by looking the node up in ``nodes``, which is also where
they read the node's current labels. Each index entry is a dict entry: no per-pod
object beyond the pod itself, except a dict for a label value shared by several pods.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, TypeVar

from ..devices import Allocation, DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from ..objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PodDisruptionBudget,
    PodGroup,
    StorageClass,
    WeightedPodAffinityTerm,
    Workload,
)
from ..selectors import IN, Selector
from .nodeinfo import NodeInfo, zone_key

__all__ = ["Candidates", "ClusterState", "Trial", "zone_key"]

#: Placed pods sharing a label value: the pod itself when it is alone, else uid -> pod.
Bucket = Pod | dict[str, Pod]
#: Term (or weighted term) -> topology value -> placed pods in that domain carrying it.
TermIndex = dict[PodAffinityTerm, dict[str, int]]
WeightedTermIndex = dict[WeightedPodAffinityTerm, dict[str, int]]
_Term = TypeVar("_Term", PodAffinityTerm, WeightedPodAffinityTerm)


class Candidates:
    """Placed pods that may match a query, from :meth:`ClusterState.candidates`.

    Always a superset of the matching pods within the queried namespaces; ``exact``
    says every pod yielded matches (no need to test the selectors again). ``size`` is
    the number of pods it yields, known before iterating.
    """

    __slots__ = ("buckets", "exact", "size")

    def __init__(self, buckets: Sequence[Bucket], size: int, exact: bool) -> None:
        self.buckets = buckets
        self.size = size
        self.exact = exact

    def __iter__(self) -> Iterator[Pod]:
        for bucket in self.buckets:
            if isinstance(bucket, dict):
                yield from bucket.values()
            else:
                yield bucket


NO_CANDIDATES = Candidates((), 0, True)


def _bucket_size(bucket: Bucket) -> int:
    return len(bucket) if isinstance(bucket, dict) else 1


def _bucket_add(values: dict[str, Bucket], value: str, pod: Pod) -> None:
    bucket = values.get(value)
    if bucket is None or (not isinstance(bucket, dict) and bucket.uid == pod.uid):
        values[value] = pod
    elif isinstance(bucket, dict):
        bucket[pod.uid] = pod
    else:
        values[value] = {bucket.uid: bucket, pod.uid: pod}


def _bucket_remove(values: dict[str, Bucket], value: str, pod: Pod) -> None:
    bucket = values.get(value)
    if bucket is None:
        return
    if isinstance(bucket, dict):
        bucket.pop(pod.uid, None)
        if len(bucket) == 1:
            values[value] = next(iter(bucket.values()))
        elif not bucket:
            del values[value]
    elif bucket.uid == pod.uid:
        del values[value]


def _topology_key(term: PodAffinityTerm | WeightedPodAffinityTerm) -> str:
    return (
        term.term.topology_key if isinstance(term, WeightedPodAffinityTerm) else term.topology_key
    )


def _count_terms(
    index: dict[_Term, dict[str, int]],
    terms: tuple[_Term, ...],
    labels: Mapping[str, str],
    sign: int,
) -> None:
    for term in terms:
        value = labels.get(_topology_key(term))
        if value is None:
            continue  # a node without the key shares no domain with anyone
        _bump(index, term, value, sign)


def _count_labels(index: dict[str, dict[str, int]], labels: Mapping[str, str], sign: int) -> None:
    for key, value in labels.items():
        _bump(index, key, value, sign)


def _changed_keys(old: Mapping[str, str], new: Mapping[str, str]) -> set[str]:
    return {k for k, v in old.items() if new.get(k) != v} | {
        k for k, v in new.items() if old.get(k) != v
    }


def _count_changed_labels(
    index: dict[str, dict[str, int]], old: Mapping[str, str], new: Mapping[str, str]
) -> None:
    """Recount a node whose labels went from ``old`` to ``new``: changed pairs only."""
    for key in _changed_keys(old, new):
        if key in old:
            _bump(index, key, old[key], -1)
        if key in new:
            _bump(index, key, new[key], 1)


def _bump(index: dict[Any, dict[str, int]], outer: Any, inner: str, sign: int) -> None:
    """Add ``sign`` to ``index[outer][inner]``, dropping counts and maps that reach zero."""
    values = index.setdefault(outer, {})
    total = values.get(inner, 0) + sign
    if total > 0:
        values[inner] = total
    else:
        values.pop(inner, None)
        if not values:
            del index[outer]


def _copy_index(index: dict[_Term, dict[str, int]]) -> dict[_Term, dict[str, int]]:
    return {term: dict(domains) for term, domains in index.items()}


class NodeJournal:
    """Which nodes changed, in order: one name per change of a node (its pods, its object,
    its arrival or removal), for caches that keep a result per node and revisit only the
    nodes that changed since they last looked (the filter's equivalence tables).

    A reader remembers :attr:`position` and later asks :meth:`since` for the names
    recorded after it. The oldest half is dropped past ``limit`` names; a reader that
    fell behind that gets None and looks at every node again.
    """

    __slots__ = ("_dropped", "_names", "limit")

    def __init__(self, limit: int = 65536) -> None:
        self._names: list[str] = []
        self._dropped = 0
        self.limit = limit

    @property
    def position(self) -> int:
        """How many changes were ever recorded."""
        return self._dropped + len(self._names)

    def record(self, name: str) -> None:
        names = self._names
        names.append(name)
        if len(names) > self.limit:
            half = len(names) // 2
            del names[:half]
            self._dropped += half

    def since(self, position: int) -> list[str] | None:
        """Names of the nodes changed after ``position`` (repeats kept); None if forgotten."""
        first = position - self._dropped
        if first < 0:
            return None
        return self._names[first:]


class PodJournal:
    """Every placed pod indexed (+1) or unindexed (-1), in order (see :class:`NodeJournal`:
    the same positions, the oldest half dropped past ``limit`` entries). It holds the
    pods it names, removed ones too: ``limit`` is small to bound what it keeps alive."""

    __slots__ = ("_dropped", "_entries", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self._entries: list[tuple[int, Pod]] = []
        self._dropped = 0
        self.limit = limit

    @property
    def position(self) -> int:
        return self._dropped + len(self._entries)

    def record(self, sign: int, pod: Pod) -> None:
        entries = self._entries
        entries.append((sign, pod))
        if len(entries) > self.limit:
            half = len(entries) // 2
            del entries[:half]
            self._dropped += half

    def since(self, position: int) -> list[tuple[int, Pod]] | None:
        """The entries recorded after ``position``; None if forgotten."""
        first = position - self._dropped
        if first < 0:
            return None
        return self._entries[first:]


#: How many (question, counts) pairs :attr:`ClusterState.shared_counts` keeps.
SHARED_LIMIT: Final = 256


class ClusterState:
    """The nodes with their placed pods, the other objects the predicates read, and the
    indexes of the fast paths (see the module docstring). Written only by the cache."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.pods: dict[str, Pod] = {}  # placed pods by uid
        self.persistent_volumes: dict[str, PersistentVolume] = {}
        self.claims: dict[str, PersistentVolumeClaim] = {}  # "ns/name"
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        #: CSIDrivers and CSIStorageCapacities ("ns/name"): the storage capacity check
        #: of kube-scheduler v1.24+'s volume binding reads them (the legacy one does not).
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.storage_capacities: dict[str, CSIStorageCapacity] = {}
        self.workloads: dict[str, Workload] = {}  # "Kind/ns/name"
        self._workloads_by_namespace: dict[str, dict[str, Workload]] = {}
        self.image_nodes: dict[str, int] = {}  # image name -> nodes that have it
        self.pdbs: dict[str, PodDisruptionBudget] = {}  # "ns/name"
        #: Namespaces by name, for their labels (namespaceSelector in pod affinity terms).
        self.namespaces: dict[str, Namespace] = {}
        #: PodGroups by "ns/name" (no predicate reads them: changing one bumps nothing).
        self.pod_groups: dict[str, PodGroup] = {}
        #: DRA (resource.k8s.io/v1): DeviceClasses and ResourceSlices by name, claims and
        #: claim templates by "ns/name".
        self.device_classes: dict[str, DeviceClass] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        #: The slices of one node (``nodeName``) by node, and the others (a node selector
        #: or all nodes): a node's Filter reads its own and the shared ones only.
        self.node_slices: dict[str, dict[str, ResourceSlice]] = {}
        self.shared_slices: dict[str, ResourceSlice] = {}
        self.resource_claims: dict[str, ResourceClaim] = {}
        self.claim_templates: dict[str, ResourceClaimTemplate] = {}
        #: Allocations this scheduler chose and the API does not show yet (in flight from
        #: Reserve until the claim's watch event, or Unreserve): claim "ns/name" -> it.
        self.allocations_in_flight: dict[str, Allocation] = {}
        #: Pending pods a preemption set a node aside for (``status.nominatedNodeName``),
        #: as placed copies (``node_name`` is the nominated node): node -> uid -> pod.
        self.nominated: dict[str, dict[str, Pod]] = {}
        self._nominations: dict[str, str] = {}  # uid -> nominated node
        self._zones: dict[str, list[str]] = {}  # zone key -> node names, in arrival order
        # Indexes (see the module docstring). Placed pods, known node or not:
        self.affinity_pods: dict[str, Pod] = {}
        self._by_namespace: dict[str, dict[str, Pod]] = {}
        self._by_label: dict[str, dict[str, dict[str, Bucket]]] = {}  # ns -> key -> value
        # Terms of the placed pods on known nodes, by topology domain:
        self.required_anti_affinity_terms: TermIndex = {}
        self.required_affinity_terms: TermIndex = {}
        self.preferred_affinity_terms: WeightedTermIndex = {}
        self.preferred_anti_affinity_terms: WeightedTermIndex = {}
        self.node_label_values: dict[str, dict[str, int]] = {}
        self._ordered: list[NodeInfo] | None = None
        #: Bumped on every change; lets per-cycle caches know the world moved.
        self.generation = 0
        #: Every change of a node, in order (what-if copies get their own).
        self.journal = NodeJournal()
        #: Every placed pod indexed or unindexed, in order; and the nodes' changes'
        #: count: together what a count over the placed pods must catch up with.
        self.pod_journal = PodJournal()
        self.node_generation = 0
        #: Counts over the placed pods that readers share between decisions, each with
        #: the ``pod_journal`` position and ``node_generation`` it holds for.
        self.shared_counts: dict[object, Any] = {}

    # -- nodes ---------------------------------------------------------------------

    def set_node(self, node: Node) -> None:
        info = self.nodes.get(node.name)
        if info is None:
            info = NodeInfo(node)
            self.nodes[node.name] = info
            self._zones.setdefault(info.zone_key, []).append(node.name)
            self._ordered = None
            for pod in self.pods.values():
                if pod.node_name == node.name:
                    info.add_pod(pod)
            for pod in info.pods_with_affinity.values():
                self._count_pod_terms(pod, node.labels, 1)
            self._count_images(node, 1)
            _count_labels(self.node_label_values, node.labels, 1)
        else:
            # Only what changed is recounted: a status update (the usual case) touches no
            # index, and with_node knows which parts of the indexes it must copy.
            old = info.node
            old_zone = info.zone_key
            if old.images != node.images:
                self._count_images(old, -1)
                self._count_images(node, 1)
            if old.labels != node.labels:
                _count_changed_labels(self.node_label_values, old.labels, node.labels)
                for pod in info.pods_with_affinity.values():
                    self._count_pod_terms(pod, old.labels, -1)
                    self._count_pod_terms(pod, node.labels, 1)
            info.set_node(node)
            if old_zone != info.zone_key:
                self._zones[old_zone].remove(node.name)
                self._zones.setdefault(info.zone_key, []).append(node.name)
                self._ordered = None
        self.journal.record(node.name)
        self.node_generation += 1
        self.generation += 1

    def with_node(self, node: Node) -> ClusterState:
        """A what-if copy in which the known node ``node.name`` is replaced by ``node``.

        This state is left untouched. The copy shares the pods, PVs, claims, classes and
        workloads; it owns a new node map (the node's entry a copy of its NodeInfo,
        holding the same pods) and copies of exactly the index entries that
        :meth:`set_node` then changes for this node: the label values of the changed
        labels; the images if they changed; the affinity term counts if the labels
        changed under pods with terms; the zones if the zone changed. O(nodes) for the
        node map, the rest in what changed: for checking what a node change would do
        (fit hints).
        """
        info = self.nodes[node.name]
        old = info.node
        view = self._shallow_copy()
        view.nodes = {**self.nodes, node.name: info.copy()}
        view._ordered = None  # it would list the original NodeInfo
        if old.images != node.images:
            view.image_nodes = dict(self.image_nodes)
        if old.labels != node.labels:
            values = dict(self.node_label_values)
            for key in _changed_keys(old.labels, node.labels):
                if key in values:
                    values[key] = dict(values[key])
            view.node_label_values = values
            if info.pods_with_affinity:
                view.required_anti_affinity_terms = _copy_index(self.required_anti_affinity_terms)
                view.required_affinity_terms = _copy_index(self.required_affinity_terms)
                view.preferred_affinity_terms = _copy_index(self.preferred_affinity_terms)
                view.preferred_anti_affinity_terms = _copy_index(self.preferred_anti_affinity_terms)
        if zone_key(node) != info.zone_key:
            view._zones = {zone: list(names) for zone, names in self._zones.items()}
        view.set_node(node)
        return view

    def remove_node(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is None:
            return
        self._count_images(info.node, -1)
        _count_labels(self.node_label_values, info.node.labels, -1)
        for pod in info.pods_with_affinity.values():
            self._count_pod_terms(pod, info.node.labels, -1)
        zone = self._zones[info.zone_key]
        zone.remove(name)
        if not zone:
            del self._zones[info.zone_key]
        self._ordered = None
        self.journal.record(name)
        self.node_generation += 1
        self.generation += 1

    def shared_since(self, key: object) -> tuple[Any, list[tuple[int, Pod]]] | None:
        """What the last pod asking ``key`` left in :attr:`shared_counts`, with the placed
        pods added (+1) and removed (-1) since; None when nothing usable is there (none
        left, a node changed since, or the journal no longer reaches back)."""
        shared = self.shared_counts.get(key)
        if shared is None:
            return None
        position, generation, value = shared
        if generation != self.node_generation:
            return None
        changes = self.pod_journal.since(position)
        return None if changes is None else (value, changes)

    def share(self, key: object, value: Any) -> None:
        """Leave ``value`` under ``key`` for the next pod asking the same, as of now."""
        if key not in self.shared_counts and len(self.shared_counts) >= SHARED_LIMIT:
            self.shared_counts.clear()
        self.shared_counts[key] = (self.pod_journal.position, self.node_generation, value)

    def _shallow_copy(self) -> ClusterState:
        """A copy sharing every container with this state: the caller replaces those the
        copy must own before changing anything."""
        view = ClusterState.__new__(ClusterState)
        view.__dict__.update(self.__dict__)
        # Its nodes may differ from this state's: nothing learnt from this journal holds.
        view.journal = NodeJournal()
        view.pod_journal = PodJournal()
        view.shared_counts = {}
        return view

    def _count_images(self, node: Node, sign: int) -> None:
        # A node counts once per image name, however often it lists the name.
        for name in {name for image in node.images for name in image.names}:
            total = self.image_nodes.get(name, 0) + sign
            if total > 0:
                self.image_nodes[name] = total
            else:
                self.image_nodes.pop(name, None)

    def ordered_nodes(self) -> list[NodeInfo]:
        """Nodes interleaved across zones, as NodeTree.Next() hands them out."""
        if self._ordered is None:
            zones = [names for names in self._zones.values() if names]
            ordered: list[NodeInfo] = []
            depth = 0
            while True:
                added = False
                for names in zones:
                    if depth < len(names):
                        ordered.append(self.nodes[names[depth]])
                        added = True
                if not added:
                    break
                depth += 1
            self._ordered = ordered
        return self._ordered

    # -- pods ----------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        """Place a pod (bound or assumed) on ``pod.node_name``; replaces a known copy."""
        if not pod.node_name:
            raise ValueError(f"pod {pod.key} has no node to be placed on")
        old = self.pods.get(pod.uid)
        if old is not None:
            self._unindex(old)
            if old.node_name != pod.node_name:
                self._unplace(old)
        self.pods[pod.uid] = pod
        self._index(pod)
        info = self.nodes.get(pod.node_name)
        if info is not None:
            info.add_pod(pod)
            self.journal.record(info.name)
        self.generation += 1

    def remove_pod(self, uid: str) -> Pod | None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            self._unindex(pod)
            self._unplace(pod)
            self.generation += 1
        return pod

    def _index(self, pod: Pod) -> None:
        self.pod_journal.record(1, pod)
        self._by_namespace.setdefault(pod.namespace, {})[pod.uid] = pod
        if pod.labels:
            keys = self._by_label.setdefault(pod.namespace, {})
            for key, value in pod.labels.items():
                _bucket_add(keys.setdefault(key, {}), value, pod)
        if pod.has_pod_affinity:
            self.affinity_pods[pod.uid] = pod
            info = self.nodes.get(pod.node_name)
            if info is not None:
                self._count_pod_terms(pod, info.node.labels, 1)

    def _unindex(self, pod: Pod) -> None:
        self.pod_journal.record(-1, pod)
        in_namespace = self._by_namespace.get(pod.namespace)
        if in_namespace is not None:
            in_namespace.pop(pod.uid, None)
            if not in_namespace:
                del self._by_namespace[pod.namespace]
        keys = self._by_label.get(pod.namespace)
        if keys is not None:
            for key, value in pod.labels.items():
                values = keys.get(key)
                if values is not None:
                    _bucket_remove(values, value, pod)
                    if not values:
                        del keys[key]
            if not keys:
                del self._by_label[pod.namespace]
        if self.affinity_pods.pop(pod.uid, None) is not None:
            info = self.nodes.get(pod.node_name)
            if info is not None:
                self._count_pod_terms(pod, info.node.labels, -1)

    def _count_pod_terms(self, pod: Pod, labels: Mapping[str, str], sign: int) -> None:
        """Count a placed pod's terms in the domains of its node (labels: the node's)."""
        _count_terms(self.required_anti_affinity_terms, pod.anti_affinity_required, labels, sign)
        _count_terms(self.required_affinity_terms, pod.affinity_required, labels, sign)
        _count_terms(self.preferred_affinity_terms, pod.affinity_preferred, labels, sign)
        _count_terms(self.preferred_anti_affinity_terms, pod.anti_affinity_preferred, labels, sign)

    def candidates(
        self, namespaces: Collection[str] | None, selectors: Sequence[Selector]
    ) -> Candidates:
        """Placed pods of ``namespaces`` (distinct; None: all) that may match every selector.

        Served from the smallest (namespace, key, value) buckets of one ``In``
        requirement of the selectors, else from the namespaces' pods. The result may hold
        pods that do not match (unless ``exact``) and pods on unknown nodes; it never
        misses a matching pod.
        """
        for selector in selectors:
            if selector.nothing:
                return NO_CANDIDATES
        if namespaces is None:
            spaces = list(self._by_label.values())
        else:
            spaces = [keys for ns in namespaces if (keys := self._by_label.get(ns)) is not None]
        best: list[Bucket] | None = None
        best_size = 0
        for selector in selectors:
            for requirement in selector.requirements:
                if requirement.operator != IN:
                    continue
                buckets: list[Bucket] = []
                size = 0
                for keys in spaces:
                    values = keys.get(requirement.key)
                    if values is None:
                        continue
                    for value in requirement.values:
                        bucket = values.get(value)
                        if bucket is not None:
                            buckets.append(bucket)
                            size += _bucket_size(bucket)
                if size == 0:
                    return NO_CANDIDATES
                if best is None or size < best_size:
                    best, best_size = buckets, size
        if best is not None:
            exact = len(selectors) == 1 and len(selectors[0].requirements) == 1
            return Candidates(best, best_size, exact)
        # No In requirement to narrow by: the namespaces' pods.
        exact = all(selector.empty for selector in selectors)
        if namespaces is None:
            return Candidates((self.pods,), len(self.pods), exact)
        pools: list[dict[str, Pod]] = [
            pods for ns in namespaces if (pods := self._by_namespace.get(ns)) is not None
        ]
        return Candidates(pools, sum(len(pods) for pods in pools), exact)

    def _unplace(self, pod: Pod) -> None:
        info = self.nodes.get(pod.node_name)
        if info is not None:
            info.remove_pod(pod)
            self.journal.record(info.name)

    def pods_in(self, namespaces: Iterable[str] | None = None) -> Iterator[Pod]:
        """Placed pods on known nodes, optionally limited to some namespaces."""
        wanted = None if namespaces is None else set(namespaces)
        for info in self.nodes.values():
            for pod in info.pods.values():
                if wanted is None or pod.namespace in wanted:
                    yield pod

    # -- other kinds ---------------------------------------------------------------

    def with_persistent_volumes(self, pvs: Iterable[PersistentVolume]) -> ClusterState:
        """A what-if copy in which these PVs replace (or join) this state's, which is left
        untouched; everything else is shared (for checking what a volume change would do)."""
        view = self._shallow_copy()
        view.persistent_volumes = {**self.persistent_volumes, **{pv.name: pv for pv in pvs}}
        view.generation += 1
        return view

    def set_persistent_volume(self, pv: PersistentVolume) -> None:
        self.persistent_volumes[pv.name] = pv
        self.generation += 1

    def remove_persistent_volume(self, name: str) -> None:
        if self.persistent_volumes.pop(name, None) is not None:
            self.generation += 1

    def set_claim(self, pvc: PersistentVolumeClaim) -> None:
        self.claims[pvc.key] = pvc
        self.generation += 1

    def remove_claim(self, key: str) -> None:
        if self.claims.pop(key, None) is not None:
            self.generation += 1

    def set_storage_class(self, sc: StorageClass) -> None:
        self.storage_classes[sc.name] = sc
        self.generation += 1

    def remove_storage_class(self, name: str) -> None:
        if self.storage_classes.pop(name, None) is not None:
            self.generation += 1

    def set_csi_node(self, csi: CSINode) -> None:
        self.csi_nodes[csi.name] = csi
        self.generation += 1

    def remove_csi_node(self, name: str) -> None:
        if self.csi_nodes.pop(name, None) is not None:
            self.generation += 1

    def set_csi_driver(self, driver: CSIDriver) -> None:
        self.csi_drivers[driver.name] = driver
        self.generation += 1

    def remove_csi_driver(self, name: str) -> None:
        if self.csi_drivers.pop(name, None) is not None:
            self.generation += 1

    def set_storage_capacity(self, capacity: CSIStorageCapacity) -> None:
        self.storage_capacities[capacity.key] = capacity
        self.generation += 1

    def remove_storage_capacity(self, key: str) -> None:
        if self.storage_capacities.pop(key, None) is not None:
            self.generation += 1

    def set_workload(self, workload: Workload) -> None:
        self.workloads[workload.key] = workload
        self._workloads_by_namespace.setdefault(workload.namespace, {})[workload.key] = workload
        self.generation += 1

    def remove_workload(self, key: str) -> None:
        workload = self.workloads.pop(key, None)
        if workload is not None:
            in_namespace = self._workloads_by_namespace[workload.namespace]
            del in_namespace[key]
            if not in_namespace:
                del self._workloads_by_namespace[workload.namespace]
            self.generation += 1

    def workloads_in(self, namespace: str) -> Iterable[Workload]:
        """The workloads of one namespace, in the order of ``workloads``."""
        return self._workloads_by_namespace.get(namespace, {}).values()

    def set_pdb(self, pdb: PodDisruptionBudget) -> None:
        self.pdbs[pdb.key] = pdb
        self.generation += 1

    def remove_pdb(self, key: str) -> None:
        if self.pdbs.pop(key, None) is not None:
            self.generation += 1

    def set_namespace(self, namespace: Namespace) -> None:
        self.namespaces[namespace.name] = namespace
        self.generation += 1

    def remove_namespace(self, name: str) -> None:
        if self.namespaces.pop(name, None) is not None:
            self.generation += 1

    def set_pod_group(self, group: PodGroup) -> None:
        self.pod_groups[group.key] = group

    def remove_pod_group(self, key: str) -> None:
        self.pod_groups.pop(key, None)

    # -- DRA -------------------------------------------------------------------------------

    def set_device_class(self, device_class: DeviceClass) -> None:
        self.device_classes[device_class.name] = device_class
        self.generation += 1

    def remove_device_class(self, name: str) -> None:
        if self.device_classes.pop(name, None) is not None:
            self.generation += 1

    def set_resource_slice(self, resource_slice: ResourceSlice) -> None:
        self.remove_resource_slice(resource_slice.name)
        self.resource_slices[resource_slice.name] = resource_slice
        if resource_slice.node_name:
            self.node_slices.setdefault(resource_slice.node_name, {})[resource_slice.name] = (
                resource_slice
            )
        else:
            self.shared_slices[resource_slice.name] = resource_slice
        self.generation += 1

    def remove_resource_slice(self, name: str) -> None:
        held = self.resource_slices.pop(name, None)
        if held is None:
            return
        if held.node_name:
            local = self.node_slices.get(held.node_name, {})
            local.pop(name, None)
            if not local:
                self.node_slices.pop(held.node_name, None)
        else:
            self.shared_slices.pop(name, None)
        self.generation += 1

    def set_resource_claim(self, claim: ResourceClaim) -> None:
        self.resource_claims[claim.key] = claim
        if claim.allocation is not None:
            # The API shows it allocated now: no longer ours to keep in flight.
            self.allocations_in_flight.pop(claim.key, None)
        self.generation += 1

    def remove_resource_claim(self, key: str) -> None:
        self.allocations_in_flight.pop(key, None)
        if self.resource_claims.pop(key, None) is not None:
            self.generation += 1

    def set_claim_template(self, template: ResourceClaimTemplate) -> None:
        self.claim_templates[f"{template.namespace}/{template.name}"] = template

    def remove_claim_template(self, key: str) -> None:
        self.claim_templates.pop(key, None)

    def assume_allocation(self, claim_key: str, allocation: Allocation) -> None:
        """A claim allocated by this scheduler, in flight until the API shows it."""
        self.allocations_in_flight[claim_key] = allocation
        self.generation += 1

    def forget_allocation(self, claim_key: str) -> None:
        if self.allocations_in_flight.pop(claim_key, None) is not None:
            self.generation += 1

    def deallocate_claim(self, key: str) -> bool:
        """The claim without allocation nor reservation (its devices free again); False
        when there was nothing to clear."""
        claim = self.resource_claims.get(key)
        if claim is None or (claim.allocation is None and not claim.reserved_for):
            return False
        self.resource_claims[key] = dataclasses.replace(claim, allocation=None, reserved_for=())
        self.generation += 1
        return True

    def allocation_of(self, claim: ResourceClaim) -> Allocation | None:
        """The claim's allocation: the API's, else the one in flight, else None."""
        if claim.allocation is not None:
            return claim.allocation
        return self.allocations_in_flight.get(claim.key)

    def devices_in_use(self) -> set[tuple[str, str, str]]:
        """(driver, pool, device) of every device allocated to a claim or in flight
        (admin access does not take a device)."""
        used: set[tuple[str, str, str]] = set()
        for claim in self.resource_claims.values():
            allocation = claim.allocation
            if allocation is not None:
                used.update(r.device_id for r in allocation.results if not r.admin_access)
        for allocation in self.allocations_in_flight.values():
            used.update(r.device_id for r in allocation.results if not r.admin_access)
        return used

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """A namespace's labels; None when the namespace is not known."""
        namespace = self.namespaces.get(name)
        return None if namespace is None else namespace.labels

    def namespaces_selected(self, selector: Selector) -> list[str]:
        """The known namespaces ``selector`` selects by their labels, in arrival order
        (kube-scheduler's namespace lister, ``mergeAffinityTermNamespacesIfNotEmpty``)."""
        return [name for name, ns in self.namespaces.items() if selector.matches(ns.labels)]

    # -- nominated pods --------------------------------------------------------------

    def set_nominated(self, pod: Pod, node: str) -> None:
        """``pod`` (pending) is nominated to ``node``; replaces an earlier nomination.

        A nomination changes no NodeInfo: predicates see nominated pods only in the
        first of the two passes (:mod:`.fitting`), so cached results stay valid.
        """
        self.remove_nominated(pod.uid)
        placed = pod if pod.node_name == node else replace(pod, node_name=node)
        self.nominated.setdefault(node, {})[pod.uid] = placed
        self._nominations[pod.uid] = node
        self.generation += 1

    def remove_nominated(self, uid: str) -> None:
        node = self._nominations.pop(uid, None)
        if node is None:
            return
        pods = self.nominated[node]
        del pods[uid]
        if not pods:
            del self.nominated[node]
        self.generation += 1

    def nomination_of(self, uid: str) -> str | None:
        """The node ``uid`` is nominated to, if any."""
        return self._nominations.get(uid)

    # -- what-if changes -----------------------------------------------------------------

    @contextlib.contextmanager
    def trial(self, node: str) -> Iterator[Trial]:
        """Pods put on or taken off ``node`` for the block's duration, then undone exactly.

        See :class:`Trial`. The block must not yield to the event loop.
        """
        attempt = Trial(self, self.nodes[node])
        try:
            yield attempt
        finally:
            attempt.undo()


class Trial:
    """Pods put on or taken off one node to ask "would the pod fit then?", undone exactly.

    Preemption asks it for victims (pods taken off) and the two-pass check for nominated
    pods (pods put on). The change is made to the :class:`ClusterState` itself, through
    :meth:`ClusterState.add_pod` / :meth:`ClusterState.remove_pod`: the NodeInfo's sums
    and every cluster-wide index (inter-pod affinity terms, label buckets, namespaces)
    follow, so every predicate, run with a fresh ``CycleState``, sees the what-if
    cluster with no copy of anything. :meth:`undo` puts back what was there: the same
    Pod objects, the node's pods (and pods with affinity) in their original order, and
    the NodeInfo's and the cluster's ``generation`` as they were, so caches keyed by
    generation stay valid (the what-if generations were fresh numbers nobody keeps).
    Only the iteration order of the cluster-wide dicts may differ; nothing reads a
    result from it.

    Nobody else may see the what-if state: a trial is undone before its caller yields
    to the event loop (decisions run inside ``cache.snapshot()``, which holds every other
    write meanwhile, and the engine yields only between chunks).
    """

    __slots__ = (
        "_added",
        "_affinity_order",
        "_cluster",
        "_generation",
        "_info",
        "_info_generation",
        "_order",
        "_removed",
    )

    def __init__(self, cluster: ClusterState, info: NodeInfo) -> None:
        self._cluster = cluster
        self._info = info
        self._order = list(info.pods)
        self._affinity_order = list(info.pods_with_affinity)
        self._generation = cluster.generation
        self._info_generation = info.generation
        self._removed: dict[str, Pod] = {}  # pods of the node taken off
        self._added: dict[str, Pod] = {}  # pods put on that were not there

    @property
    def node(self) -> NodeInfo:
        return self._info

    def remove(self, uid: str) -> None:
        """Take a pod off the node: one of its pods, or one added in this trial."""
        if self._added.pop(uid, None) is not None:
            self._cluster.remove_pod(uid)
            return
        pod = self._info.pods.get(uid)
        if pod is None:
            raise KeyError(f"pod {uid} is not on node {self._info.name}")
        self._cluster.remove_pod(uid)
        self._removed[uid] = pod

    def add(self, pod: Pod) -> None:
        """Put a pod on the node: one taken off in this trial, or a pending one.

        A pod already placed anywhere (a stale nomination of a pod since bound) is
        left where it is.
        """
        uid = pod.uid
        original = self._removed.pop(uid, None)
        if original is not None:
            self._cluster.add_pod(original)
            return
        if uid in self._cluster.pods:
            return
        name = self._info.name
        placed = pod if pod.node_name == name else replace(pod, node_name=name)
        self._added[uid] = placed
        self._cluster.add_pod(placed)

    def undo(self) -> None:
        cluster, info = self._cluster, self._info
        for uid in list(self._added):
            cluster.remove_pod(uid)
        for pod in self._removed.values():
            cluster.add_pod(pod)
        self._added.clear()
        self._removed.clear()
        _reorder(info.pods, self._order)
        _reorder(info.pods_with_affinity, self._affinity_order)
        info.generation = self._info_generation
        cluster.generation = self._generation


def _reorder(pods: dict[str, Pod], order: list[str]) -> None:
    """Put ``pods`` (same keys as ``order``) back in ``order``, in place."""
    if list(pods) != order:
        saved = dict(pods)
        pods.clear()
        pods.update((uid, saved[uid]) for uid in order)
