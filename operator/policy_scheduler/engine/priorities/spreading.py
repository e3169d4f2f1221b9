"""Spreading priorities: SelectorSpread, ServiceSpreading, serviceAntiAffinity, EvenPodsSpread.

All four favour nodes (and zones, or label values) with fewer pods "like" the incoming
one. Each priority receives every feasible node at once; what depends only on the pod —
the selectors that define "like", the per-domain counts — is computed once per
scheduling attempt through ``cycle.memo`` and the per-node work is a lookup. Scores
follow kube-scheduler v1.13-v1.17, with its float64 arithmetic and truncating int
conversion, on the legacy 0..10 scale.

**SelectorSpreadPriority** (``SelectorSpread.CalculateSpreadPriorityMap/Reduce``). The
Services, ReplicationControllers, ReplicaSets and StatefulSets of the pod's namespace
that select the pod are combined into one selector: a placed pod counts only if it
matches *all* of them (upstream merges their requirements). Workloads whose selector is
empty select nothing. A node's count is its pods of the same namespace, not being
deleted, matching that selector; no selecting workload means every count is 0. Reduce:
``max`` is the highest count among the scored nodes, ``f = 10 * (max - count) / max``
(10 when max is 0). When some scored node carries zone labels (``utilnode.GetZoneKey``),
zone counts are the sums of the scored nodes' counts per zone, and a zoned node gets
``f * (1 - 2/3) + 2/3 * 10 * (maxZone - zoneCount) / maxZone``; unzoned nodes keep ``f``.
**ServiceSpreadingPriority** is the same with Services only.

**serviceAntiAffinity** (``ServiceAntiAffinity``, custom priority with a node label).
Map: the node's pods of the namespace, not being deleted, matched by the selector of the
*first* Service selecting the pod. Reduce: ``total`` sums all scored nodes' counts;
nodes without the label score 0; the others ``10 * (total - countOfTheirLabelValue) /
total`` (10 when total is 0).

**EvenPodsSpreadPriority** (v1.17 ``buildPodTopologySpreadMap`` + map/reduce, with
today's inclusion policies and ``matchLabelKeys``). Only ``ScheduleAnyway`` constraints
count; with none every node scores 0. Scored nodes carrying all the constraints' keys are
*qualified* and define the topology pairs. Every node of the cluster that carries all
keys adds, per constraint whose inclusion policies let it in (``nodeAffinityPolicy:
Honor``, the default: it passes the pod's nodeSelector/required affinity;
``nodeTaintsPolicy: Honor``: it tolerates the pod's NoSchedule/NoExecute taints), its pods
matching the selector (any namespace, as v1.17 does) to its pair, if that pair belongs to
a qualified node. A qualified node's raw
score is the sum of its pairs' counts. Reduce: ``total`` = sum of qualified raw scores,
``min`` = the smallest; if ``total - min`` is 0 every scored node gets 10 (checked before
qualification, as v1.17 does), else unqualified nodes get 0 and qualified ones
``10 * (total - raw) / (total - min)``.

Fast paths (``settings.fast``; off runs the definitions above as written, node by node):

* a pod that no workload selects scores without any per-node counting: every
  SelectorSpread/ServiceSpreading score is then exactly 10 (node and zone parts are both
  10, and ``int(10 * 1/3 + 2/3 * 10)`` is 10 in float64), and serviceAntiAffinity gives
  10 to nodes with the label, 0 to the others;
* otherwise the matching pods are counted per node name once per decision from
  :meth:`ClusterState.candidates` (the placed pods carrying a label the selectors
  require) when those are fewer than the pods on the scored nodes, and node by node
  otherwise; zones come from ``NodeInfo.zone_key``, set when the node is, and each
  distinct (zone, count) is scored once; the selecting workloads are looked for among
  the pod's namespace's only (:meth:`ClusterState.workloads_in`);
* EvenPodsSpreadPriority counts only the candidate pods of each constraint's selector,
  asking whether their node qualifies (:class:`~..predicates.spreading.QualifiedNodes`)
  instead of walking every node of the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from ... import names
from ...objects import Pod, TopologySpreadConstraint
from ...selectors import Selector
from ..cluster import ClusterState, zone_key
from ..functions import CycleState, Priority, priority_factory, register_priority
from ..nodeinfo import NodeInfo
from ..predicates.spreading import (
    SCHEDULE_ANYWAY,
    QualifiedNodes,
    counting_constraints,
    filters_nodes,
    has_all_keys,
    pod_services,
)

MAX_PRIORITY: Final = float(names.MAX_PRIORITY)
#: Upstream gives 2/3 of the weight to zone spreading, 1/3 to node spreading.
ZONE_WEIGHTING: Final = 2.0 / 3.0

SPREAD_KINDS: Final = frozenset({"Service", "ReplicationController", "ReplicaSet", "StatefulSet"})
SERVICE_KINDS: Final = frozenset({"Service"})


# -- SelectorSpreadPriority / ServiceSpreadingPriority ---------------------------------------


def spread_selectors(
    pod: Pod, cluster: ClusterState, kinds: frozenset[str], *, fast: bool = False
) -> tuple[Selector, ...]:
    """Selectors of the workloads of ``kinds`` that select the pod (getSelector).

    Upstream skips controllers whose selector is empty ("should match nothing"); a
    Service or RC parsed without a selector never matches, so it drops out the same way.
    ``fast``: only the pod's namespace's workloads are looked at (same answer).
    """
    workloads = cluster.workloads_in(pod.namespace) if fast else cluster.workloads.values()
    return tuple(
        w.selector
        for w in workloads
        if w.kind in kinds
        and w.namespace == pod.namespace
        and not w.selector.empty
        and w.selector.matches(pod.labels)
    )


def count_matching(pod: Pod, node: NodeInfo, selectors: tuple[Selector, ...]) -> int:
    """countMatchingPods: same namespace, not being deleted, matching every selector."""
    if not selectors:
        return 0
    count = 0
    namespace = pod.namespace
    for other in node.pods.values():
        if other.namespace != namespace or other.deleting:
            continue
        labels = other.labels
        if all(selector.matches(labels) for selector in selectors):
            count += 1
    return count


def indexed_counts(
    pod: Pod, nodes: Sequence[NodeInfo], cluster: ClusterState, selectors: tuple[Selector, ...]
) -> list[int]:
    """The same counts as :func:`count_matching` per node, from the cluster's indexes.

    Counts the candidate pods by node name when they are fewer than the pods the scored
    nodes hold (estimated from the cluster's average); otherwise counting node by node
    visits fewer pods.
    """
    if not selectors:
        return [0] * len(nodes)  # no workload selects the pod: nothing is "like" it
    found = cluster.candidates((pod.namespace,), selectors)
    if found.size * len(cluster.nodes) > len(cluster.pods) * len(nodes):
        return [count_matching(pod, node, selectors) for node in nodes]
    by_node: dict[str, int] = {}
    for other in found:
        if other.deleting:
            continue
        if not found.exact:
            labels = other.labels
            if not all(selector.matches(labels) for selector in selectors):
                continue
        by_node[other.node_name] = by_node.get(other.node_name, 0) + 1
    if not by_node:
        return [0] * len(nodes)
    return [by_node.get(node.name, 0) for node in nodes]


def _counts(
    pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState, selectors: tuple[Selector, ...]
) -> list[int]:
    if cycle.settings.fast:
        return indexed_counts(pod, nodes, cycle.cluster, selectors)
    return [count_matching(pod, node, selectors) for node in nodes]


#: SelectorSpread's score when every count is 0: 10 by node, and 10 by zone for zoned nodes.
NO_SELECTOR_SCORE: Final = int(
    MAX_PRIORITY * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * MAX_PRIORITY
)


def _spread_priority(name: str, kinds: frozenset[str]) -> Priority:
    def spread(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        selectors = cycle.memo(
            f"{name}:selectors",
            lambda: spread_selectors(pod, cycle.cluster, kinds, fast=cycle.settings.fast),
        )
        if cycle.settings.fast:
            if not selectors and NO_SELECTOR_SCORE == names.MAX_PRIORITY:
                return [names.MAX_PRIORITY] * len(nodes)
            return fast_spread_reduce(nodes, _counts(pod, nodes, cycle, selectors))
        return spread_reduce(nodes, _counts(pod, nodes, cycle, selectors))

    return spread


def _computed_zone(node: NodeInfo) -> str:
    return zone_key(node.node)


def spread_reduce(
    nodes: Sequence[NodeInfo],
    counts: list[int],
    zone_of: Callable[[NodeInfo], str] = _computed_zone,
) -> list[int]:
    """CalculateSpreadPriorityReduce over the scored nodes' counts."""
    zones = [zone_of(node) for node in nodes]
    max_by_node = max(counts, default=0)
    by_zone = _zone_counts(zones, counts)
    max_by_zone = max(by_zone.values(), default=0)
    return [
        _spread_score(zone, count, max_by_node, by_zone, max_by_zone)
        for zone, count in zip(zones, counts, strict=True)
    ]


def fast_spread_reduce(nodes: Sequence[NodeInfo], counts: list[int]) -> list[int]:
    """:func:`spread_reduce` with each node's zone from ``NodeInfo.zone_key`` and each
    distinct (zone, count) scored once: nodes of a zone with the same count score alike,
    and most nodes hold no pod like the incoming one (count 0)."""
    zones = [node.zone_key for node in nodes]
    max_by_node = max(counts, default=0)
    by_zone = dict.fromkeys([zone for zone in set(zones) if zone], 0)
    if max_by_node > 0:
        for zone, count in zip(zones, counts, strict=True):
            if count and zone:
                by_zone[zone] += count
    max_by_zone = max(by_zone.values(), default=0)
    empty = {zone: _spread_score(zone, 0, max_by_node, by_zone, max_by_zone) for zone in set(zones)}
    if max_by_node == 0:
        return [empty[zone] for zone in zones]
    scores = [empty[zone] for zone in zones]
    some: dict[tuple[str, int], int] = {}
    for k, count in enumerate(counts):
        if count:
            pair = (zones[k], count)
            score = some.get(pair)
            if score is None:
                score = some[pair] = _spread_score(
                    pair[0], count, max_by_node, by_zone, max_by_zone
                )
            scores[k] = score
    return scores


def _zone_counts(zones: list[str], counts: list[int]) -> dict[str, int]:
    by_zone: dict[str, int] = {}
    for zone, count in zip(zones, counts, strict=True):
        if zone:
            by_zone[zone] = by_zone.get(zone, 0) + count
    return by_zone


def _spread_score(
    zone: str, count: int, max_by_node: int, by_zone: dict[str, int], max_by_zone: int
) -> int:
    """One scored node's SelectorSpread score from its zone and count (float64 steps)."""
    f_score = MAX_PRIORITY
    if max_by_node > 0:
        f_score = MAX_PRIORITY * (float(max_by_node - count) / float(max_by_node))
    if by_zone and zone:
        zone_score = MAX_PRIORITY
        if max_by_zone > 0:
            zone_score = MAX_PRIORITY * (float(max_by_zone - by_zone[zone]) / float(max_by_zone))
        f_score = (f_score * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
    return int(f_score)


register_priority(names.SELECTOR_SPREAD, _spread_priority(names.SELECTOR_SPREAD, SPREAD_KINDS))
register_priority(names.SERVICE_SPREADING, _spread_priority(names.SERVICE_SPREADING, SERVICE_KINDS))


# -- serviceAntiAffinity --------------------------------------------------------------------


def _first_service_selector(pod: Pod, cluster: ClusterState, fast: bool) -> tuple[Selector, ...]:
    services = pod_services(pod, cluster, fast=fast)
    return (services[0].selector,) if services else ()


@priority_factory("serviceAntiAffinity")
def service_anti_affinity(argument: Any) -> Priority:
    """ServiceAntiAffinity spreading the first service's pods over a node label's values."""
    label: str = argument.label

    def anti_affinity(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        selectors = cycle.memo(
            "serviceAntiAffinity:selector",
            lambda: _first_service_selector(pod, cycle.cluster, cycle.settings.fast),
        )
        values = [node.node.labels.get(label) for node in nodes]
        if not selectors and cycle.settings.fast:
            # No Service: every count and the total are 0.
            return [0 if value is None else names.MAX_PRIORITY for value in values]
        counts = _counts(pod, nodes, cycle, selectors)
        total = sum(counts)
        by_value: dict[str, int] = {}
        for value, count in zip(values, counts, strict=True):
            if value is not None:
                by_value[value] = by_value.get(value, 0) + count
        scores: list[int] = []
        for value in values:
            if value is None:
                scores.append(0)
                continue
            f_score = MAX_PRIORITY
            if total > 0:
                f_score = MAX_PRIORITY * (float(total - by_value[value]) / float(total))
            scores.append(int(f_score))
        return scores

    return anti_affinity


# -- EvenPodsSpreadPriority -----------------------------------------------------------------


def _scored_pairs(
    nodes: Sequence[NodeInfo], constraints: tuple[TopologySpreadConstraint, ...]
) -> dict[tuple[str, str], int]:
    """Every (key, value) pair of the scored nodes that carry all the constraints' keys."""
    pairs: dict[tuple[str, str], int] = {}
    for info in nodes:
        labels = info.node.labels
        if has_all_keys(labels, constraints):
            for constraint in constraints:
                pairs.setdefault((constraint.topology_key, labels[constraint.topology_key]), 0)
    return pairs


def _soft_pair_counts(
    pod: Pod,
    nodes: Sequence[NodeInfo],
    cluster: ClusterState,
    constraints: tuple[TopologySpreadConstraint, ...],
) -> dict[tuple[str, str], int]:
    """topologyPairToPodCounts: pairs of qualified scored nodes, counted over all nodes."""
    pairs = _scored_pairs(nodes, constraints)
    if not pairs:
        return pairs
    for info in cluster.nodes.values():
        node = info.node
        for constraint in counting_constraints(pod, node, constraints):
            pair = (constraint.topology_key, node.labels[constraint.topology_key])
            if pair not in pairs:
                continue
            # v1.17 counts matching pods of every namespace here (the predicate does not).
            matched = 0
            for existing in info.pods.values():
                if constraint.selector.matches(existing.labels):
                    matched += 1
            pairs[pair] += matched
    return pairs


def _indexed_soft_pair_counts(
    pod: Pod,
    nodes: Sequence[NodeInfo],
    cluster: ClusterState,
    constraints: tuple[TopologySpreadConstraint, ...],
) -> dict[tuple[str, str], int]:
    """The same counts as :func:`_soft_pair_counts`, visiting only the candidate pods.

    When no inclusion policy can leave a node out, the counts over every qualified node
    are shared with the next pod asking the same (``cluster.shared_counts``, by
    constraints), which adds the placed pods indexed or removed since
    (``cluster.pod_journal``) instead of counting them all again, unless a node changed
    meanwhile (``node_generation``); the scored nodes' pairs take their counts from them.
    """
    pairs = _scored_pairs(nodes, constraints)
    if not pairs:
        return pairs
    if any(filters_nodes(pod, c) for c in constraints):
        full = _candidate_counts(pod, cluster, constraints)
    else:
        full = _shared_counts(pod, cluster, constraints)
    for pair, count in full.items():
        if pair in pairs:
            pairs[pair] += count
    return pairs


#: ``cluster.shared_counts``' key for EvenPodsSpreadPriority's counts, and how many it keeps.
_SHARED_KEY = "EvenPodsSpreadPriority.counts"


def _shared_counts(
    pod: Pod, cluster: ClusterState, constraints: tuple[TopologySpreadConstraint, ...]
) -> dict[tuple[str, str], int]:
    """The counts over the cluster the last pod asking the same left, caught up."""
    memo_key = (_SHARED_KEY, constraints)
    shared = cluster.shared_since(memo_key)
    full: dict[tuple[str, str], int] | None = None
    if shared is not None:
        full, changes = shared
        assert full is not None
        qualified = QualifiedNodes(pod, cluster, constraints)
        for sign, existing in changes:
            for constraint in constraints:
                if not constraint.selector.matches(existing.labels):
                    continue
                node_labels = qualified.labels(existing.node_name, constraint)
                if node_labels is not None:
                    pair = (constraint.topology_key, node_labels[constraint.topology_key])
                    full[pair] = full.get(pair, 0) + sign
    if full is None:
        full = _candidate_counts(pod, cluster, constraints)
    cluster.share(memo_key, full)
    return full


def _candidate_counts(
    pod: Pod, cluster: ClusterState, constraints: tuple[TopologySpreadConstraint, ...]
) -> dict[tuple[str, str], int]:
    """Matching pods per pair of the qualified nodes, from the candidate pods."""
    full: dict[tuple[str, str], int] = {}
    qualified = QualifiedNodes(pod, cluster, constraints)
    for constraint in constraints:
        # Every namespace, as in the definition.
        found = cluster.candidates(None, (constraint.selector,))
        key = constraint.topology_key
        for existing in found:
            if not (found.exact or constraint.selector.matches(existing.labels)):
                continue
            node_labels = qualified.labels(existing.node_name, constraint)
            if node_labels is None:
                continue
            pair = (key, node_labels[key])
            full[pair] = full.get(pair, 0) + 1
    return full


def even_pods_spread_priority(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """CalculateEvenPodsSpreadPriorityMap + Reduce for ScheduleAnyway constraints."""
    constraints = tuple(
        c for c in pod.spread_constraints if c.when_unsatisfiable == SCHEDULE_ANYWAY
    )
    if not constraints or not nodes:
        return [0] * len(nodes)
    count_pairs = _indexed_soft_pair_counts if cycle.settings.fast else _soft_pair_counts
    pairs = cycle.memo(
        "evenPodsSpread:soft", lambda: count_pairs(pod, nodes, cycle.cluster, constraints)
    )
    raw: list[int | None] = []
    for info in nodes:
        labels = info.node.labels
        if not has_all_keys(labels, constraints):
            raw.append(None)
            continue
        raw.append(sum(pairs[(c.topology_key, labels[c.topology_key])] for c in constraints))
    qualified = [score for score in raw if score is not None]
    total = sum(qualified)
    # With no qualified node upstream's min stays MaxInt64, so the difference is never 0.
    max_min_diff = total - min(qualified) if qualified else -1
    scores: list[int] = []
    for score in raw:
        if max_min_diff == 0:
            scores.append(names.MAX_PRIORITY)
        elif score is None:
            scores.append(0)
        else:
            scores.append(int(MAX_PRIORITY * (float(total - score) / float(max_min_diff))))
    return scores


register_priority(names.EVEN_PODS_SPREAD_PRIORITY, even_pods_spread_priority)
