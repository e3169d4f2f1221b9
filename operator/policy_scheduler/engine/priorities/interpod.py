"""InterPodAffinityPriority: preferred pod affinity and anti-affinity, both directions.

kube-scheduler v1.13-v1.17 (``CalculateInterPodAffinityPriority``) walks every placed
pod on every node of the cluster (not only the feasible ones) and, for each term that
matches, adds a weight to the *topology domain* of the placed pod's node — the pair
(term.topologyKey, value of that key on the placed pod's node); a node without the
label contributes nothing:

* the incoming pod's preferred affinity terms that select the placed pod: ``+weight``;
* the incoming pod's preferred anti-affinity terms that select it: ``-weight``;
* the placed pod's *required* affinity terms that select the incoming pod:
  ``+hardPodAffinitySymmetricWeight`` (0 turns this off);
* the placed pod's preferred affinity terms that select the incoming pod: ``+weight``;
* the placed pod's preferred anti-affinity terms that select it: ``-weight``.

A feasible node's count is the sum of the domains it belongs to (for each topology key
it carries, the weight of its value). Counts are then normalised over the feasible
nodes: with ``min`` and ``max`` starting at 0, a node scores
``int(10 * (count - min) / (max - min))`` in float64 arithmetic, and every node scores 0
when ``max == min``.

The domain weights are computed once per scheduling attempt, two ways that give the
same weights:

* :func:`topology_scores`, the definition (``settings.fast`` off): one walk over every
  node; pods that carry no affinity term are visited only when the incoming pod has
  preferred terms of its own (otherwise ``NodeInfo.pods_with_affinity`` suffices);
* :func:`indexed_topology_scores` (the fast path): each distinct term of the placed
  pods once, from the cluster's term indexes, adding ``weight x pods carrying it`` to
  each of its topology domains when the term selects the incoming pod; for the incoming
  pod's preferred terms, only the placed pods :meth:`ClusterState.candidates` returns.
  A pod without terms in a cluster where no placed pod has one costs O(1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ... import names
from ...objects import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from ..cluster import ClusterState
from ..functions import CycleState, register_priority
from ..nodeinfo import NodeInfo
from ..predicates.interpod import pod_matches_term

MAX_PRIORITY: Final = 10

_MEMO_KEY: Final = "interpod.priority"

#: Topology key -> topology value -> accumulated weight.
TopologyScores = dict[str, dict[str, int]]


def topology_scores(pod: Pod, cluster: ClusterState, hard_weight: int) -> TopologyScores:
    """Weights per topology domain from every placed pod (buildTopologyPairToScore)."""
    scores: TopologyScores = {}

    def add(term: PodAffinityTerm, labels: Mapping[str, str], weight: int) -> None:
        # NodesHaveSameTopologyKey: an empty key or a node without the label shares
        # no domain with anyone.
        value = labels.get(term.topology_key) if term.topology_key else None
        if value is not None:
            by_value = scores.setdefault(term.topology_key, {})
            by_value[value] = by_value.get(value, 0) + weight

    def process(
        terms: tuple[WeightedPodAffinityTerm, ...],
        target: Pod,
        labels: Mapping[str, str],
        multiplier: int,
    ) -> None:
        # Namespaces were resolved against the defining pod when it was parsed.
        for weighted in terms:
            if pod_matches_term(weighted.term, target):
                add(weighted.term, labels, weighted.weight * multiplier)

    wants = pod.affinity_preferred
    avoids = pod.anti_affinity_preferred
    own_terms = bool(wants or avoids)

    for info in cluster.nodes.values():
        labels = info.node.labels
        if own_terms:
            for existing in info.pods.values():
                process(wants, existing, labels, 1)
                process(avoids, existing, labels, -1)
        for existing in info.pods_with_affinity.values():
            if hard_weight > 0:
                for term in existing.affinity_required:
                    if pod_matches_term(term, pod):
                        add(term, labels, hard_weight)
            process(existing.affinity_preferred, pod, labels, 1)
            process(existing.anti_affinity_preferred, pod, labels, -1)
    return scores


def indexed_topology_scores(pod: Pod, cluster: ClusterState, hard_weight: int) -> TopologyScores:
    """The same weights as :func:`topology_scores`, from the cluster's indexes."""
    scores: TopologyScores = {}
    wants = pod.affinity_preferred
    avoids = pod.anti_affinity_preferred
    if not (wants or avoids or cluster.affinity_pods):
        return scores
    nodes = cluster.nodes

    def add(term: PodAffinityTerm, domains: Mapping[str, int], weight: int) -> None:
        # Each matching pod in a domain adds the weight once; an empty key is no domain.
        key = term.topology_key
        if not key or not domains:
            return
        by_value = scores.setdefault(key, {})
        for value, pods in domains.items():
            by_value[value] = by_value.get(value, 0) + weight * pods

    if hard_weight > 0:
        for term, domains in cluster.required_affinity_terms.items():
            if pod_matches_term(term, pod):
                add(term, domains, hard_weight)
    for weighted, domains in cluster.preferred_affinity_terms.items():
        if pod_matches_term(weighted.term, pod):
            add(weighted.term, domains, weighted.weight)
    for weighted, domains in cluster.preferred_anti_affinity_terms.items():
        if pod_matches_term(weighted.term, pod):
            add(weighted.term, domains, -weighted.weight)

    # The pod's own preferred terms: only the placed pods that can match them.
    for terms, multiplier in ((wants, 1), (avoids, -1)):
        for weighted in terms:
            term = weighted.term
            if not term.topology_key:
                continue
            found = cluster.candidates(term.namespaces, (term.selector,))
            matched: dict[str, int] = {}
            for existing in found:
                info = nodes.get(existing.node_name)
                if info is None or not (found.exact or pod_matches_term(term, existing)):
                    continue
                value = info.node.labels.get(term.topology_key)
                if value is not None:
                    matched[value] = matched.get(value, 0) + 1
            add(term, matched, weighted.weight * multiplier)
    return scores


def _scores(pod: Pod, cycle: CycleState) -> TopologyScores:
    hard_weight = cycle.settings.hard_pod_affinity_weight
    if cycle.settings.fast:
        return indexed_topology_scores(pod, cycle.cluster, hard_weight)
    return topology_scores(pod, cycle.cluster, hard_weight)


def inter_pod_affinity_priority(
    pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState
) -> list[int]:
    scores = cycle.memo(_MEMO_KEY, lambda: _scores(pod, cycle))
    if not scores:
        return [0] * len(nodes)

    counts: list[int] = []
    for info in nodes:
        labels = info.node.labels
        total = 0
        for key, by_value in scores.items():
            value = labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        counts.append(total)

    # min and max start at 0, as upstream's int64 zero values.
    lowest = min(0, min(counts, default=0))
    highest = max(0, max(counts, default=0))
    spread = highest - lowest
    if spread <= 0:
        return [0] * len(nodes)
    return [int(float(MAX_PRIORITY) * ((count - lowest) / spread)) for count in counts]


register_priority(names.INTER_POD_AFFINITY, inter_pod_affinity_priority)
