"""Spreading predicates: CheckServiceAffinity (custom ``serviceAffinity``) and EvenPodsSpread.

Both are kube-scheduler v1.13-v1.17 legacy predicates whose answer for a node depends on
where *other* pods run, so each computes a per-pod summary once per scheduling attempt
(``cycle.memo``) and the per-node check is a few dictionary lookups.

**serviceAffinity** (``ServiceAffinity.checkServiceAffinity``). The policy names node
label keys. The values the candidate node must carry are, per key:

1. the pod's own ``nodeSelector`` value for that key, if it has one;
2. otherwise, if at least one Service of the pod's namespace selects the pod, the value on
   the node of the *first* placed pod of the namespace whose labels include all the
   pod's labels (upstream's ``matchingPodList``: note it is the pod's labels, not the
   Service selector, that pick that pod), if that node has the key.

A key that gets no value constrains nothing. Placed pods are visited in the order of the
scheduler snapshot (nodes in NodeTree order, then each node's pods), as upstream's pod
lister does. A node lacking one of the values fails with "node(s) didn't match service
affinity".

**EvenPodsSpread** (alpha ``PodTopologySpread``, v1.16-v1.17 ``getEvenPodsSpreadMetadata``,
with the fields today's PodTopologySpread added, v1.25-v1.27). Only ``whenUnsatisfiable:
DoNotSchedule`` constraints count. Over *all* nodes that carry every constraint's key, the
pods of the pod's namespace matching a constraint's selector are counted per
(topologyKey, value) pair, for the constraints whose inclusion policies let the node in
(:func:`counting_constraints`): ``nodeAffinityPolicy: Honor`` (the default) needs the node
to pass the pod's nodeSelector and required node affinity, ``nodeTaintsPolicy: Honor``
(default Ignore) needs it to tolerate the pod's NoSchedule/NoExecute taints. Counts of
constraints sharing a key add up in one pair, as upstream's v1.17 map does. A
constraint's selector already carries its ``matchLabelKeys`` (parsed in ``objects``). For
a candidate node, each constraint requires the key on the node and ``count(pair of the
node) + (1 if the pod matches the selector) - min count over the key's pairs <=
maxSkew``, where the minimum is 0 when the key has fewer pairs (domains) than the
constraint's ``minDomains``; otherwise "node(s) didn't match pod topology spread
constraints". No qualifying pair at all lets every node through.

The per-pod summary is computed two ways that give the same counts: ``_hard_spread``,
the definition (``settings.fast`` off), walks every node and counts its pods per
constraint; ``_indexed_hard_spread`` (the fast path) counts only the pods
:meth:`ClusterState.candidates` returns for each constraint's selector, and takes the
qualifying pairs from ``ClusterState.node_label_values`` without a walk over the nodes
when no inclusion policy can leave a node out (no ``nodeTaintsPolicy: Honor``, and no node
selector or required affinity under ``nodeAffinityPolicy: Honor``) and the constraints
share one topology key (the common case); otherwise a walk over the nodes' labels remains.
Its screen leaves every node out when the pod has no DoNotSchedule constraint or no
pair was counted (the predicate then lets every node through).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ... import names
from ...objects import Node, Pod, TopologySpreadConstraint, Workload
from ...selectors import terms_match
from ..cluster import ClusterState
from ..functions import (
    FITS,
    CycleState,
    Predicate,
    Reasons,
    hint,
    predicate,
    predicate_factory,
)
from ..nodeinfo import NodeInfo
from .taints import tolerates_taints

ERR_SERVICE_AFFINITY: Final = "node(s) didn't match service affinity"
ERR_TOPOLOGY_SPREAD: Final = "node(s) didn't match pod topology spread constraints"

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"


# -- helpers shared with the spreading priorities -----------------------------------------


def pod_services(pod: Pod, cluster: ClusterState, *, fast: bool = False) -> list[Workload]:
    """Services of the pod's namespace whose selector selects the pod (GetPodServices).

    A Service without a selector selects nothing (parsed as a never-matching selector).
    ``fast``: only the namespace's workloads are looked at (same answer, same order).
    """
    workloads = cluster.workloads_in(pod.namespace) if fast else cluster.workloads.values()
    return [
        w
        for w in workloads
        if w.kind == "Service" and w.namespace == pod.namespace and w.selector.matches(pod.labels)
    ]


def matches_node_selector_and_affinity(pod: Pod, node: Node) -> bool:
    """PodMatchesNodeSelectorAndAffinityTerms: nodeSelector and required node affinity."""
    if pod.has_node_selector and not pod.node_selector.matches(node.labels):
        return False
    terms = pod.required_node_terms
    # An absent required affinity allows every node; an empty term list allows none.
    return terms is None or terms_match(terms, node.labels, node.name)


def snapshot_pods(cluster: ClusterState) -> Iterator[Pod]:
    """Placed pods in the order of the scheduler snapshot's pod lister."""
    for info in cluster.ordered_nodes():
        yield from info.pods.values()


def has_all_keys(
    labels: Mapping[str, str], constraints: Iterable[TopologySpreadConstraint]
) -> bool:
    """NodeLabelsMatchSpreadConstraints: every constraint's topologyKey is on the node."""
    for constraint in constraints:
        if constraint.topology_key not in labels:
            return False
    return True


def counting_constraints(
    pod: Pod, node: Node, constraints: Sequence[TopologySpreadConstraint]
) -> list[TopologySpreadConstraint]:
    """The constraints whose counts this node's pods join.

    The node must carry every constraint's key (NodeLabelsMatchSpreadConstraints), and,
    per constraint, pass the pod's node selector and required affinity under
    ``nodeAffinityPolicy: Honor`` and tolerate the pod's NoSchedule/NoExecute taints
    under ``nodeTaintsPolicy: Honor`` (PodTopologySpread's matchNodeInclusionPolicies).
    Both checks run at most once per node.
    """
    if not has_all_keys(node.labels, constraints):
        return []
    included: list[TopologySpreadConstraint] = []
    affinity: bool | None = None
    taints: bool | None = None
    for constraint in constraints:
        if constraint.honor_node_affinity:
            if affinity is None:
                affinity = matches_node_selector_and_affinity(pod, node)
            if not affinity:
                continue
        if constraint.honor_node_taints:
            if taints is None:
                taints = tolerates_taints(pod, node)
            if not taints:
                continue
        included.append(constraint)
    return included


def filters_nodes(pod: Pod, constraint: TopologySpreadConstraint) -> bool:
    """Whether the inclusion policies can leave a node carrying the key out of the counts."""
    if constraint.honor_node_taints:
        return True
    return constraint.honor_node_affinity and (
        pod.has_node_selector or pod.required_node_terms is not None
    )


# -- CheckServiceAffinity -----------------------------------------------------------------


def _service_affinity_labels(
    pod: Pod, cluster: ClusterState, keys: tuple[str, ...], fast: bool
) -> dict[str, str]:
    """The label values a node must carry for this pod (FindLabelsInSet + AddUnsetLabelsToMap)."""
    wanted: dict[str, str] = {}
    if pod.has_node_selector:
        raw = _node_selector_map(pod)
        for key in keys:
            if key in raw:
                wanted[key] = raw[key]
    if len(wanted) == len(keys) or not pod_services(pod, cluster, fast=fast):
        return wanted
    first = _first_matching_pod(pod, cluster)
    if first is None:
        return wanted
    info = cluster.nodes.get(first.node_name)
    if info is None:
        return wanted
    node_labels = info.node.labels
    for key in keys:
        if key not in wanted and key in node_labels:
            wanted[key] = node_labels[key]
    return wanted


def _node_selector_map(pod: Pod) -> dict[str, str]:
    """The pod's nodeSelector as a plain map (each requirement is ``key In {value}``)."""
    out: dict[str, str] = {}
    for requirement in pod.node_selector.requirements:
        out[requirement.key] = next(iter(requirement.values))
    return out


def _first_matching_pod(pod: Pod, cluster: ClusterState) -> Pod | None:
    """The first placed pod of the namespace whose labels contain all of the pod's labels."""
    wanted = pod.labels.items()
    for other in snapshot_pods(cluster):
        if other.namespace != pod.namespace:
            continue
        if all(other.labels.get(key) == value for key, value in wanted):
            return other
    return None


@predicate(names.CHECK_SERVICE_AFFINITY)
def bare_check_service_affinity(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """CheckServiceAffinity without labels: no key, so no value to match (v1.17+ accepted
    it bare and filtered nothing; v1.13-v1.16 refused it)."""
    return FITS


hint(bare_check_service_affinity, never_fails=lambda pod: True, node_local=True)


@predicate_factory("serviceAffinity")
def service_affinity(argument: Any) -> Predicate:
    """CheckServiceAffinity with the policy's label keys."""
    keys = tuple(argument.labels)
    memo_key = f"serviceAffinity:{keys!r}"

    def check_service_affinity(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
        wanted = cycle.memo(
            memo_key,
            lambda: _service_affinity_labels(pod, cycle.cluster, keys, cycle.settings.fast),
        )
        labels = node.node.labels
        for key, value in wanted.items():
            if labels.get(key) != value:
                return (ERR_SERVICE_AFFINITY,)
        return FITS

    return check_service_affinity


# -- EvenPodsSpread -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _HardSpread:
    """Per-pod summary of the DoNotSchedule constraints (evenPodsSpreadMetadata)."""

    #: (constraint, 1 if the incoming pod matches its selector else 0)
    constraints: tuple[tuple[TopologySpreadConstraint, int], ...]
    #: (topologyKey, value) -> matching pods in that domain
    pair_counts: dict[tuple[str, str], int]
    #: topologyKey -> the smallest count over its pairs
    min_counts: dict[str, int]
    #: topologyKey -> how many domains (pairs) it has, for minDomains
    domains: dict[str, int]


def _hard_constraints(pod: Pod) -> list[TopologySpreadConstraint]:
    return [c for c in pod.spread_constraints if c.when_unsatisfiable == DO_NOT_SCHEDULE]


def _hard_spread(pod: Pod, cluster: ClusterState) -> _HardSpread | None:
    constraints = _hard_constraints(pod)
    if not constraints:
        return None
    pair_counts: dict[tuple[str, str], int] = {}
    for info in cluster.nodes.values():
        node = info.node
        for constraint in counting_constraints(pod, node, constraints):
            matched = 0
            for existing in info.pods.values():
                if existing.namespace == pod.namespace and constraint.selector.matches(
                    existing.labels
                ):
                    matched += 1
            pair = (constraint.topology_key, node.labels[constraint.topology_key])
            pair_counts[pair] = pair_counts.get(pair, 0) + matched
    return _summary(pod, constraints, pair_counts)


def _summary(
    pod: Pod,
    constraints: Sequence[TopologySpreadConstraint],
    pair_counts: dict[tuple[str, str], int],
) -> _HardSpread:
    """The per-attempt summary from the matching pods counted per topology pair."""
    min_counts: dict[str, int] = {}
    domains: dict[str, int] = {}
    for (key, _), count in pair_counts.items():
        domains[key] = domains.get(key, 0) + 1
        if key not in min_counts or count < min_counts[key]:
            min_counts[key] = count
    return _HardSpread(
        constraints=tuple((c, 1 if c.selector.matches(pod.labels) else 0) for c in constraints),
        pair_counts=pair_counts,
        min_counts=min_counts,
        domains=domains,
    )


class QualifiedNodes:
    """Which constraints' counts a node's pods join (:func:`counting_constraints`).

    Answers per node name, remembering each answer: the fast paths ask for the nodes
    of the candidate pods only, not for every node.
    """

    __slots__ = ("_answers", "_cluster", "_constraints", "_pod")

    def __init__(
        self, pod: Pod, cluster: ClusterState, constraints: Sequence[TopologySpreadConstraint]
    ) -> None:
        self._pod = pod
        self._cluster = cluster
        self._constraints = tuple(constraints)
        self._answers: dict[str, tuple[Mapping[str, str], frozenset[int]] | None] = {}

    def labels(
        self, node_name: str, constraint: TopologySpreadConstraint
    ) -> Mapping[str, str] | None:
        """The node's labels if its pods count for ``constraint``, else None."""
        try:
            answer = self._answers[node_name]
        except KeyError:
            answer = None
            info = self._cluster.nodes.get(node_name)
            if info is not None:
                node = info.node
                included = counting_constraints(self._pod, node, self._constraints)
                if included:
                    answer = (node.labels, frozenset(id(c) for c in included))
            self._answers[node_name] = answer
        if answer is None or id(constraint) not in answer[1]:
            return None
        return answer[0]


def _indexed_hard_spread(pod: Pod, cluster: ClusterState) -> _HardSpread | None:
    """The same summary as :func:`_hard_spread`, counting only the candidate pods.

    When no inclusion policy can leave a node out, the counts are shared with the next
    pod asking the same (``cluster.shared_counts``, by namespace and constraints), which
    adds the placed pods indexed or removed since (``cluster.pod_journal``) instead of
    counting them all again, unless a node changed meanwhile (``node_generation``).
    """
    constraints = _hard_constraints(pod)
    if not constraints:
        return None
    if any(filters_nodes(pod, c) for c in constraints):
        return _summary(pod, constraints, _indexed_counts(pod, cluster, constraints))
    memo_key = (_SHARED_KEY, pod.namespace, tuple(constraints))
    shared = cluster.shared_since(memo_key)
    counts: dict[tuple[str, str], int] | None = None
    if shared is not None:
        counts, changes = shared
        qualified = QualifiedNodes(pod, cluster, constraints)
        for sign, existing in changes:
            if existing.namespace != pod.namespace:
                continue
            for constraint in constraints:
                if not constraint.selector.matches(existing.labels):
                    continue
                labels = qualified.labels(existing.node_name, constraint)
                if labels is not None:
                    key = constraint.topology_key
                    counts[(key, labels[key])] += sign
    if counts is None:
        counts = _indexed_counts(pod, cluster, constraints)
    cluster.share(memo_key, counts)
    return _summary(pod, constraints, dict(counts))


#: ``cluster.shared_counts``' key for EvenPodsSpread's counts.
_SHARED_KEY = "EvenPodsSpread.counts"


def _indexed_counts(
    pod: Pod, cluster: ClusterState, constraints: Sequence[TopologySpreadConstraint]
) -> dict[tuple[str, str], int]:
    """The counts per topology pair from the candidate pods."""
    keys = {c.topology_key for c in constraints}
    pair_counts: dict[tuple[str, str], int] = {}
    # Every counting node contributes its pairs, with a count of 0 until a pod is seen.
    if len(keys) == 1 and not any(filters_nodes(pod, c) for c in constraints):
        (key,) = keys
        for value in cluster.node_label_values.get(key, ()):
            pair_counts[(key, value)] = 0
    else:
        for info in cluster.nodes.values():
            node = info.node
            for constraint in counting_constraints(pod, node, constraints):
                pair_counts[(constraint.topology_key, node.labels[constraint.topology_key])] = 0
    qualified = QualifiedNodes(pod, cluster, constraints)
    for constraint in constraints:
        found = cluster.candidates((pod.namespace,), (constraint.selector,))
        key = constraint.topology_key
        for existing in found:
            if not (found.exact or constraint.selector.matches(existing.labels)):
                continue
            labels = qualified.labels(existing.node_name, constraint)
            if labels is not None:
                pair_counts[(key, labels[key])] += 1
    return pair_counts


def _spread_summary(pod: Pod, cycle: CycleState) -> _HardSpread | None:
    if cycle.settings.fast:
        return _indexed_hard_spread(pod, cycle.cluster)
    return _hard_spread(pod, cycle.cluster)


def _even_pods_spread_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """Nowhere without DoNotSchedule constraints or counted pairs; else every node."""
    if not pod.spread_constraints:
        return []
    spread = cycle.memo("evenPodsSpread:hard", lambda: _spread_summary(pod, cycle))
    if spread is None or not spread.pair_counts:
        return []
    return list(range(len(nodes)))


@predicate(names.EVEN_PODS_SPREAD)
def even_pods_spread(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """EvenPodsSpreadPredicate: each hard constraint's skew stays within maxSkew."""
    if not pod.spread_constraints:
        return FITS
    spread = cycle.memo("evenPodsSpread:hard", lambda: _spread_summary(pod, cycle))
    if spread is None or not spread.pair_counts:
        return FITS
    labels = node.node.labels
    for constraint, self_match in spread.constraints:
        key = constraint.topology_key
        value = labels.get(key)
        if value is None:
            return (ERR_TOPOLOGY_SPREAD,)
        lowest = spread.min_counts.get(key)
        if lowest is None:
            # Upstream logs an internal error and skips the constraint.
            continue
        if spread.domains[key] < constraint.min_domains:
            # Fewer eligible domains than minDomains: the global minimum counts as 0.
            lowest = 0
        skew = spread.pair_counts.get((key, value), 0) + self_match - lowest
        if skew > constraint.max_skew:
            return (ERR_TOPOLOGY_SPREAD,)
    return FITS


hint(
    even_pods_spread,
    never_fails=lambda pod: not pod.spread_constraints,
    screen=_even_pods_spread_screen,
)
