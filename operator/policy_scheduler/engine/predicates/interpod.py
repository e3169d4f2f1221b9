"""MatchInterPodAffinity: required pod affinity and anti-affinity, both directions.

kube-scheduler v1.13-v1.17 (``InterPodAffinityMatches`` with its predicate metadata) runs
three checks, in this order, and stops at the first that fails:

1. **Existing pods' anti-affinity** (symmetry). A placed pod whose *required*
   anti-affinity term selects the incoming pod (term namespaces, selector on the
   incoming pod's labels) forbids the topology domain of its own node: the pair
   (term.topologyKey, value of that key on the placed pod's node). A node that carries
   any forbidden pair among its labels fails with
   ``node(s) didn't match pod affinity/anti-affinity`` and
   ``node(s) didn't satisfy existing pods anti-affinity rules``.
2. **The pod's required affinity**. Every placed pod that matches *all* of the pod's
   required affinity terms contributes, for each term, the pair (term.topologyKey,
   value on its node), when its node has that label. A node fits when, for every term,
   it has the term's topology label and that pair was contributed. When no pair was
   contributed at all and the pod matches all its own terms, the pod is the first of
   its group and every node fits (upstream's "first pod of a series" rule). Otherwise
   ``node(s) didn't match pod affinity/anti-affinity`` and
   ``node(s) didn't match pod affinity rules``.
3. **The pod's required anti-affinity**. Every placed pod that matches *any* of the
   terms contributes the pair (term.topologyKey, value on its node). A node fails when,
   for some term, it has the topology label and the pair was contributed:
   ``node(s) didn't match pod affinity/anti-affinity`` and
   ``node(s) didn't match pod anti-affinity rules``.

All pairs are computed once per scheduling attempt (``cycle.memo``); the per-node check
is then a handful of dictionary lookups, whatever the number of pods. Two ways compute
the same pairs:

* :func:`inter_pod_metadata`, the definition (``settings.fast`` off): one walk over every
  node, visiting the pods that carry affinity terms (``NodeInfo.pods_with_affinity``)
  for check 1, and every placed pod when the incoming pod has required terms;
* :func:`indexed_inter_pod_metadata` (the fast path) reads the cluster's indexes: each
  distinct required anti-affinity term of the placed pods once, taking its topology
  domains as a whole when it selects the incoming pod (check 1); for checks 2 and 3,
  only the placed pods that :meth:`ClusterState.candidates` returns for the pod's own
  terms (those carrying a label value the term requires). A pod without terms in a
  cluster where no placed pod has a required anti-affinity term costs O(1); otherwise
  O(distinct terms + candidate pods), never O(nodes).

Its fast path screen (``settings.fast``) leaves every node out when the metadata says
no check can fail: no placed pod's required anti-affinity selects the pod and it has
no required terms of its own (the usual case).

A term's namespaces were already defaulted to its own pod's namespace when the pod was
parsed; a missing label selector selects nothing, as ``LabelSelectorAsSelector(nil)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ... import names
from ...objects import Pod, PodAffinityTerm
from ..cluster import ClusterState
from ..functions import FITS, CycleState, Reasons, hint, predicate
from ..nodeinfo import NodeInfo

POD_AFFINITY_NOT_MATCH: Final = "node(s) didn't match pod affinity/anti-affinity"
POD_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"
EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)

EXISTING_ANTI_AFFINITY_FAILED: Final = (
    POD_AFFINITY_NOT_MATCH,
    EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH,
)
AFFINITY_FAILED: Final = (POD_AFFINITY_NOT_MATCH, POD_AFFINITY_RULES_NOT_MATCH)
ANTI_AFFINITY_FAILED: Final = (POD_AFFINITY_NOT_MATCH, POD_ANTI_AFFINITY_RULES_NOT_MATCH)

_MEMO_KEY: Final = "interpod.predicate"

TopologyPair = tuple[str, str]


def pod_matches_term(term: PodAffinityTerm, target: Pod) -> bool:
    """PodMatchesTermsNamespaceAndSelector: the target is in the term's namespaces and selected."""
    return target.namespace in term.namespaces and term.selector.matches(target.labels)


def pod_matches_all_terms(terms: tuple[PodAffinityTerm, ...], target: Pod) -> bool:
    """podMatchesAllAffinityTermProperties: an empty term list matches nothing."""
    return bool(terms) and all(pod_matches_term(term, target) for term in terms)


@dataclass(frozen=True, slots=True)
class InterPodMetadata:
    """What the per-node check reads, computed once per pod (upstream predicateMetadata)."""

    #: Topology key -> values where a placed pod's required anti-affinity forbids the pod.
    forbidden: dict[str, frozenset[str]]
    #: Pairs holding a placed pod that matches all the pod's required affinity terms.
    affinity_pairs: frozenset[TopologyPair]
    #: Pairs holding a placed pod that matches one of the pod's required anti-affinity terms.
    anti_affinity_pairs: frozenset[TopologyPair]
    #: The pod matches all its own required affinity terms (first-of-a-group rule).
    matches_own_affinity: bool


NO_METADATA: Final = InterPodMetadata(
    forbidden={},
    affinity_pairs=frozenset(),
    anti_affinity_pairs=frozenset(),
    matches_own_affinity=False,
)


def inter_pod_metadata(pod: Pod, cluster: ClusterState) -> InterPodMetadata:
    """Scan the placed pods once: the pairs of every check for this pod (the definition)."""
    forbidden: dict[str, set[str]] = {}
    affinity_terms = pod.affinity_required
    anti_terms = pod.anti_affinity_required
    affinity_pairs: set[TopologyPair] = set()
    anti_pairs: set[TopologyPair] = set()
    scan_all = bool(affinity_terms or anti_terms)

    for info in cluster.nodes.values():
        labels = info.node.labels
        # Symmetry: only pods with affinity terms can carry a required anti-affinity.
        for existing in info.pods_with_affinity.values():
            for term in existing.anti_affinity_required:
                value = labels.get(term.topology_key)
                if value is not None and pod_matches_term(term, pod):
                    forbidden.setdefault(term.topology_key, set()).add(value)
        if not scan_all:
            continue
        for existing in info.pods.values():
            if pod_matches_all_terms(affinity_terms, existing):
                for term in affinity_terms:
                    value = labels.get(term.topology_key)
                    if value is not None:
                        affinity_pairs.add((term.topology_key, value))
            for term in anti_terms:
                if pod_matches_term(term, existing):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        anti_pairs.add((term.topology_key, value))

    return InterPodMetadata(
        forbidden={key: frozenset(values) for key, values in forbidden.items()},
        affinity_pairs=frozenset(affinity_pairs),
        anti_affinity_pairs=frozenset(anti_pairs),
        matches_own_affinity=pod_matches_all_terms(affinity_terms, pod),
    )


def indexed_inter_pod_metadata(pod: Pod, cluster: ClusterState) -> InterPodMetadata:
    """The same pairs as :func:`inter_pod_metadata`, from the cluster's indexes."""
    affinity_terms = pod.affinity_required
    anti_terms = pod.anti_affinity_required
    if not affinity_terms and not anti_terms and not cluster.required_anti_affinity_terms:
        return NO_METADATA
    nodes = cluster.nodes

    # Symmetry: each distinct term once, with the domains of the pods carrying it.
    forbidden: dict[str, set[str]] = {}
    for term, domains in cluster.required_anti_affinity_terms.items():
        if pod_matches_term(term, pod):
            forbidden.setdefault(term.topology_key, set()).update(domains)

    affinity_pairs: set[TopologyPair] = set()
    if affinity_terms:
        # A contributing pod matches every term: the smallest term's candidates suffice.
        found = min(
            (cluster.candidates(term.namespaces, (term.selector,)) for term in affinity_terms),
            key=lambda candidates: candidates.size,
        )
        trusted = found.exact and len(affinity_terms) == 1
        for existing in found:
            info = nodes.get(existing.node_name)
            if info is None or not (trusted or pod_matches_all_terms(affinity_terms, existing)):
                continue
            labels = info.node.labels
            for term in affinity_terms:
                value = labels.get(term.topology_key)
                if value is not None:
                    affinity_pairs.add((term.topology_key, value))

    anti_pairs: set[TopologyPair] = set()
    for term in anti_terms:
        found = cluster.candidates(term.namespaces, (term.selector,))
        key = term.topology_key
        values: set[str | None] = set()
        if found.exact:
            for existing in found:
                info = nodes.get(existing.node_name)
                if info is not None:
                    values.add(info.node.labels.get(key))
        else:
            for existing in found:
                info = nodes.get(existing.node_name)
                if info is not None and pod_matches_term(term, existing):
                    values.add(info.node.labels.get(key))
        anti_pairs.update((key, value) for value in values if value is not None)

    return InterPodMetadata(
        forbidden={key: frozenset(values) for key, values in forbidden.items()},
        affinity_pairs=frozenset(affinity_pairs),
        anti_affinity_pairs=frozenset(anti_pairs),
        matches_own_affinity=pod_matches_all_terms(affinity_terms, pod),
    )


def _metadata(pod: Pod, cycle: CycleState) -> InterPodMetadata:
    if cycle.settings.fast:
        return indexed_inter_pod_metadata(pod, cycle.cluster)
    return inter_pod_metadata(pod, cycle.cluster)


def _no_terms(pod: Pod, cycle: CycleState) -> bool:
    """Neither the pod nor any placed pod has a required (anti-)affinity term: every
    node fits (the common case, worth no call per node)."""
    return cycle.memo(_MEMO_KEY, lambda: _metadata(pod, cycle)) is NO_METADATA


@predicate(names.MATCH_INTER_POD_AFFINITY)
def match_inter_pod_affinity(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    meta = cycle.memo(_MEMO_KEY, lambda: _metadata(pod, cycle))
    if meta is NO_METADATA:
        return FITS
    labels = node.node.labels

    for key, values in meta.forbidden.items():
        value = labels.get(key)
        if value is not None and value in values:
            return EXISTING_ANTI_AFFINITY_FAILED

    # The first pod of a group that has affinity to itself must not wait forever for a
    # peer: with no matching pod anywhere, matching its own terms suffices.
    first_of_group = not meta.affinity_pairs and meta.matches_own_affinity
    if (
        pod.affinity_required
        and not first_of_group
        and not _node_matches_all_terms(pod.affinity_required, labels, meta.affinity_pairs)
    ):
        return AFFINITY_FAILED

    for term in pod.anti_affinity_required:
        value = labels.get(term.topology_key)
        if value is not None and (term.topology_key, value) in meta.anti_affinity_pairs:
            return ANTI_AFFINITY_FAILED

    return FITS


def _inter_pod_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """Nowhere when no placed pod's anti-affinity selects the pod and it has no required
    terms of its own (the three checks then pass everywhere); else every node."""
    meta = cycle.memo(_MEMO_KEY, lambda: _metadata(pod, cycle))
    if meta is NO_METADATA or not (
        meta.forbidden or pod.affinity_required or pod.anti_affinity_required
    ):
        return []
    return list(range(len(nodes)))


hint(match_inter_pod_affinity, fits_everywhere=_no_terms, screen=_inter_pod_screen)


def _node_matches_all_terms(
    terms: tuple[PodAffinityTerm, ...],
    labels: Mapping[str, str],
    pairs: frozenset[TopologyPair],
) -> bool:
    """nodeMatchesAllTopologyTerms: the node has every term's key, on a contributed pair."""
    for term in terms:
        value = labels.get(term.topology_key)
        if value is None or (term.topology_key, value) not in pairs:
            return False
    return True
