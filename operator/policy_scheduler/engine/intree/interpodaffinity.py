"""InterPodAffinity: kube-scheduler v1.25-v1.30's in-tree plugin, v1.30's rules.

**Terms.** A term selects a pod when the pod's namespace is among the term's namespaces
(those listed; the term's own pod's namespace when it lists none and has no
``namespaceSelector``) or its ``namespaceSelector`` matches the labels of the pod's
Namespace (the cluster's Namespace objects; an unknown namespace has no labels; an empty
selector matches every namespace, an absent one none), and the ``labelSelector`` (absent:
nothing) matches the pod's labels (``framework.AffinityTerm``). The incoming pod's own
terms are resolved first: the known namespaces their non-empty ``namespaceSelector``
selects join the listed ones (``mergeAffinityTermNamespacesIfNotEmpty``); an empty one
takes every namespace.

**PreFilter / Filter.** Three sets of topology pairs (key, value of the key on a node):
existing pods' required anti-affinity terms that select the incoming pod, at their
pods' nodes; for the pod's required affinity, the pairs of the nodes holding a pod that
all its terms select; for its required anti-affinity, the pairs of the nodes holding a
pod one term selects (each term its own key). Skip when the first is empty and the pod
has no required term. A node is refused, in this order:

1. ``node(s) didn't match pod affinity rules`` (UnschedulableAndUnresolvable) when it
   lacks a term's topology key, or some term's pair on it holds no selected pod, unless
   no pod anywhere is selected by all the terms and the pod selects itself (the first
   pod of a group may start it);
2. ``node(s) didn't match pod anti-affinity rules`` when one of its anti-affinity terms'
   pairs holds a selected pod;
3. ``node(s) didn't satisfy existing pods anti-affinity rules`` when it is in a domain an
   existing pod's anti-affinity forbids.

**PreScore / Score / NormalizeScore.** Skip with no feasible node, and when
``ignorePreferredTermsOfExistingPods`` is set and the pod has no preferred term. Each
topology domain (key, value) of a placed pod's node collects: ``+weight`` for each of the
incoming pod's preferred affinity terms selecting the placed pod, ``-weight`` for its
preferred anti-affinity terms; for the placed pod's own terms selecting the incoming pod,
``+hardPodAffinityWeight`` per required affinity term (when the weight is above 0),
``+weight`` / ``-weight`` per preferred affinity / anti-affinity term. Skip when no term
matched at all. A node scores the sum of its domains; normalised with ``min`` and ``max``
over the scored nodes to ``int(100 * (score - min) / (max - min))`` (float), 0 for every
node when they are equal. (v1.30 keeps counting existing pods' preferred terms when the
incoming pod has preferred terms of its own, whatever ``ignorePreferredTermsOfExistingPods``
says: the flag only skips pods without.)

**Engine functions.** :meth:`InterPodAffinity.predicate` and :meth:`InterPodAffinity.priority`
are what the engine runs; the plugin API's points give the same answers. The per-pod
work is done once per attempt, two ways with one result: the definition
(``settings.fast`` off) walks every node and its pods as upstream does; the fast path
reads the cluster's term indexes (each distinct term of the placed pods once, with the
domains of the pods carrying it) and :meth:`ClusterState.candidates` for the pod's own
terms. Hints: ``fits_everywhere`` when PreFilter would Skip (no placed pod's required
anti-affinity selects the pod and it has no required term: the common case).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final

from ...objects import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from ...pluginargs import InterPodAffinityArgs
from ..cluster import ClusterState
from ..functions import (
    FITS,
    CycleState,
    Predicate,
    Priority,
    Reasons,
    Unresolvable,
    every_position,
    hint,
    no_position,
)
from ..interface import (
    FilterPlugin,
    Handle,
    NodeInfoView,
    NodeScore,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from ..nodeinfo import NodeInfo
from .podtopologyspread import as_status

if TYPE_CHECKING:
    from pydantic import BaseModel

NAME: Final = "InterPodAffinity"

ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1
MAX_NODE_SCORE: Final = 100

_FILTER_MEMO: Final = "InterPodAffinity.filter"
_PRE_SCORE_KEY: Final = "PreScoreInterPodAffinity"
#: PreScore's topology scores, once per cycle (they depend on the pod and the cluster).
_SCORE_MEMO: Final = "InterPodAffinity.score"

Pair = tuple[str, str]
#: Topology key -> value -> accumulated weight (scoreMap).
ScoreMap = dict[str, dict[str, int]]


# -- terms --------------------------------------------------------------------------------


def term_selects(term: PodAffinityTerm, pod: Pod, ns_labels: Mapping[str, str]) -> bool:
    """AffinityTerm.Matches for a placed pod's term and the incoming pod (``ns_labels``:
    the labels of the incoming pod's Namespace, empty when it is not known)."""
    return term.matches_namespace(pod.namespace, ns_labels) and term.selector.matches(pod.labels)


def namespace_labels(cluster: ClusterState, namespace: str) -> Mapping[str, str]:
    """GetNamespaceLabelsSnapshot: a Namespace's labels, none when it is not known."""
    labels = cluster.namespace_labels(namespace)
    return _NO_LABELS if labels is None else labels


_NO_LABELS: Final[Mapping[str, str]] = {}


@dataclass(frozen=True, slots=True)
class OwnTerm:
    """One of the incoming pod's terms, its namespaceSelector resolved to names
    (``namespaces`` None: every namespace, for an empty selector)."""

    term: PodAffinityTerm
    namespaces: frozenset[str] | None
    weight: int = 0

    @property
    def topology_key(self) -> str:
        return self.term.topology_key

    def selects(self, pod: Pod) -> bool:
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return self.term.selector.matches(pod.labels)


def resolve(cluster: ClusterState, term: PodAffinityTerm, weight: int = 0) -> OwnTerm:
    """mergeAffinityTermNamespacesIfNotEmpty: the listed namespaces and those a non-empty
    namespaceSelector selects among the known ones; every namespace for an empty one."""
    selector = term.namespace_selector
    if selector is None:
        return OwnTerm(term, term.namespaces, weight)
    if selector.empty:
        return OwnTerm(term, None, weight)
    selected = frozenset(cluster.namespaces_selected(selector)) if not selector.nothing else ()
    return OwnTerm(term, term.listed_namespaces.union(selected), weight)


def _resolve_all(cluster: ClusterState, terms: Sequence[PodAffinityTerm]) -> tuple[OwnTerm, ...]:
    return tuple(resolve(cluster, term) for term in terms)


def _resolve_weighted(
    cluster: ClusterState, terms: Sequence[WeightedPodAffinityTerm]
) -> tuple[OwnTerm, ...]:
    return tuple(resolve(cluster, w.term, w.weight) for w in terms)


def _selects_all(terms: Sequence[OwnTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms: no terms select nothing."""
    return bool(terms) and all(term.selects(pod) for term in terms)


# -- Filter ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterState:
    """PreFilter's state; ``skip``: PreFilter returns Skip (the filter passes every node)."""

    skip: bool
    #: Topology key -> values where a placed pod's required anti-affinity forbids the pod.
    existing_anti: dict[str, frozenset[str]]
    affinity: tuple[OwnTerm, ...]
    anti_affinity: tuple[OwnTerm, ...]
    #: Pairs holding a pod selected by all the affinity terms (affinityCounts > 0).
    affinity_pairs: frozenset[Pair]
    #: Pairs holding a pod selected by an anti-affinity term (antiAffinityCounts > 0).
    anti_affinity_pairs: frozenset[Pair]
    #: The pod selects itself by all its affinity terms (the first of a group).
    selects_itself: bool


SKIP_FILTER: Final = FilterState(True, {}, (), (), frozenset(), frozenset(), False)


def filter_state(pod: Pod, cluster: ClusterState, fast: bool) -> FilterState:
    """PreFilter's counts, by the definition or from the indexes (same result)."""
    if (
        fast
        and not pod.affinity_required
        and not pod.anti_affinity_required
        and not cluster.required_anti_affinity_terms
    ):
        return SKIP_FILTER
    ns_labels = namespace_labels(cluster, pod.namespace)
    affinity = _resolve_all(cluster, pod.affinity_required)
    anti = _resolve_all(cluster, pod.anti_affinity_required)
    forbidden: dict[str, set[str]] = {}
    affinity_pairs: set[Pair] = set()
    anti_pairs: set[Pair] = set()
    if fast:
        for term, domains in cluster.required_anti_affinity_terms.items():
            if term_selects(term, pod, ns_labels):
                forbidden.setdefault(term.topology_key, set()).update(domains)
        _indexed_own_pairs(cluster, affinity, anti, affinity_pairs, anti_pairs)
    else:
        for info in cluster.nodes.values():
            labels = info.node.labels
            for existing in info.pods_with_affinity.values():
                for term in existing.anti_affinity_required:
                    value = labels.get(term.topology_key)
                    if value is not None and term_selects(term, pod, ns_labels):
                        forbidden.setdefault(term.topology_key, set()).add(value)
            if not affinity and not anti:
                continue
            for existing in info.pods.values():
                if _selects_all(affinity, existing):
                    for own in affinity:
                        value = labels.get(own.topology_key)
                        if value is not None:
                            affinity_pairs.add((own.topology_key, value))
                for own in anti:
                    value = labels.get(own.topology_key)
                    if value is not None and own.selects(existing):
                        anti_pairs.add((own.topology_key, value))
    if not forbidden and not affinity and not anti:
        return SKIP_FILTER
    return FilterState(
        skip=False,
        existing_anti={key: frozenset(values) for key, values in forbidden.items()},
        affinity=affinity,
        anti_affinity=anti,
        affinity_pairs=frozenset(affinity_pairs),
        anti_affinity_pairs=frozenset(anti_pairs),
        selects_itself=_selects_all(affinity, pod),
    )


def _indexed_own_pairs(
    cluster: ClusterState,
    affinity: tuple[OwnTerm, ...],
    anti: tuple[OwnTerm, ...],
    affinity_pairs: set[Pair],
    anti_pairs: set[Pair],
) -> None:
    """The pod's own terms' pairs from the candidates of their selectors."""
    nodes = cluster.nodes
    if affinity:
        # A counted pod is selected by every term: the smallest term's candidates suffice.
        found = min(
            (cluster.candidates(term.namespaces, (term.term.selector,)) for term in affinity),
            key=lambda candidates: candidates.size,
        )
        trusted = found.exact and len(affinity) == 1
        for existing in found:
            info = nodes.get(existing.node_name)
            if info is None or not (trusted or _selects_all(affinity, existing)):
                continue
            labels = info.node.labels
            for own in affinity:
                value = labels.get(own.topology_key)
                if value is not None:
                    affinity_pairs.add((own.topology_key, value))
    for own in anti:
        key = own.topology_key
        found = cluster.candidates(own.namespaces, (own.term.selector,))
        for existing in found:
            info = nodes.get(existing.node_name)
            if info is None or not (found.exact or own.selects(existing)):
                continue
            value = info.node.labels.get(key)
            if value is not None:
                anti_pairs.add((key, value))


def check_filter(state: FilterState, labels: Mapping[str, str]) -> Reasons:
    """Filter on one node's labels: affinity, then anti-affinity, then existing pods'."""
    if state.skip:
        return FITS
    if state.affinity:
        pods_exist = True
        for own in state.affinity:
            value = labels.get(own.topology_key)
            if value is None:
                return _AFFINITY_FAILED
            if (own.topology_key, value) not in state.affinity_pairs:
                pods_exist = False
        if not pods_exist and (state.affinity_pairs or not state.selects_itself):
            return _AFFINITY_FAILED
    if state.anti_affinity_pairs:
        for own in state.anti_affinity:
            value = labels.get(own.topology_key)
            if value is not None and (own.topology_key, value) in state.anti_affinity_pairs:
                return _ANTI_AFFINITY_FAILED
    for key, values in state.existing_anti.items():
        value = labels.get(key)
        if value is not None and value in values:
            return _EXISTING_ANTI_AFFINITY_FAILED
    return FITS


_AFFINITY_FAILED: Final = (Unresolvable(ERR_AFFINITY_RULES_NOT_MATCH),)
_ANTI_AFFINITY_FAILED: Final = (ERR_ANTI_AFFINITY_RULES_NOT_MATCH,)
_EXISTING_ANTI_AFFINITY_FAILED: Final = (ERR_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)


# -- Score ------------------------------------------------------------------------------------


def score_map(
    pod: Pod,
    cluster: ClusterState,
    hard_weight: int,
    ignore_existing_preferred: bool,
    fast: bool,
) -> ScoreMap | None:
    """PreScore's topology scores (feasible nodes given); None for Skip."""
    own_terms = bool(pod.affinity_preferred or pod.anti_affinity_preferred)
    if ignore_existing_preferred and not own_terms:
        return None
    ns_labels = namespace_labels(cluster, pod.namespace)
    wants = _resolve_weighted(cluster, pod.affinity_preferred)
    avoids = _resolve_weighted(cluster, pod.anti_affinity_preferred)
    scores: ScoreMap = {}
    if fast:
        _indexed_scores(pod, cluster, hard_weight, ns_labels, wants, avoids, scores)
    else:
        _walked_scores(pod, cluster, hard_weight, ns_labels, wants, avoids, own_terms, scores)
    return scores or None


def _add(scores: ScoreMap, key: str, value: str, weight: int) -> None:
    by_value = scores.setdefault(key, {})
    by_value[value] = by_value.get(value, 0) + weight


def _walked_scores(
    pod: Pod,
    cluster: ClusterState,
    hard_weight: int,
    ns_labels: Mapping[str, str],
    wants: tuple[OwnTerm, ...],
    avoids: tuple[OwnTerm, ...],
    own_terms: bool,
    scores: ScoreMap,
) -> None:
    """The definition: each placed pod (every one when the pod has preferred terms, else
    those with affinity terms) on each node (processExistingPod)."""
    for info in cluster.nodes.values():
        labels = info.node.labels
        if not labels:
            continue
        placed = info.pods if own_terms else info.pods_with_affinity
        for existing in placed.values():
            for own, sign in ((wants, 1), (avoids, -1)):
                for term in own:
                    value = labels.get(term.topology_key)
                    if value is not None and term.selects(existing):
                        _add(scores, term.topology_key, value, sign * term.weight)
            if hard_weight > 0:
                for required in existing.affinity_required:
                    value = labels.get(required.topology_key)
                    if value is not None and term_selects(required, pod, ns_labels):
                        _add(scores, required.topology_key, value, hard_weight)
            for preferred, sign in (
                (existing.affinity_preferred, 1),
                (existing.anti_affinity_preferred, -1),
            ):
                for weighted in preferred:
                    value = labels.get(weighted.term.topology_key)
                    if value is not None and term_selects(weighted.term, pod, ns_labels):
                        _add(scores, weighted.term.topology_key, value, sign * weighted.weight)


def _indexed_scores(
    pod: Pod,
    cluster: ClusterState,
    hard_weight: int,
    ns_labels: Mapping[str, str],
    wants: tuple[OwnTerm, ...],
    avoids: tuple[OwnTerm, ...],
    scores: ScoreMap,
) -> None:
    """The same scores from the term indexes and the candidates of the pod's own terms."""

    def add_domains(key: str, domains: Mapping[str, int], weight: int) -> None:
        # Each selected pod in a domain adds the weight once.
        if domains:
            by_value = scores.setdefault(key, {})
            for value, pods in domains.items():
                by_value[value] = by_value.get(value, 0) + weight * pods

    if hard_weight > 0:
        for term, domains in cluster.required_affinity_terms.items():
            if term_selects(term, pod, ns_labels):
                add_domains(term.topology_key, domains, hard_weight)
    for weighted, domains in cluster.preferred_affinity_terms.items():
        if term_selects(weighted.term, pod, ns_labels):
            add_domains(weighted.term.topology_key, domains, weighted.weight)
    for weighted, domains in cluster.preferred_anti_affinity_terms.items():
        if term_selects(weighted.term, pod, ns_labels):
            add_domains(weighted.term.topology_key, domains, -weighted.weight)

    nodes = cluster.nodes
    for own, sign in ((wants, 1), (avoids, -1)):
        for mine in own:
            key = mine.topology_key
            found = cluster.candidates(mine.namespaces, (mine.term.selector,))
            matched: dict[str, int] = {}
            for existing in found:
                info = nodes.get(existing.node_name)
                if info is None or not (found.exact or mine.selects(existing)):
                    continue
                value = info.node.labels.get(key)
                if value is not None:
                    matched[value] = matched.get(value, 0) + 1
            add_domains(key, matched, sign * mine.weight)


def raw_score(scores: ScoreMap, labels: Mapping[str, str]) -> int:
    """Score: the sum of the node's domains."""
    total = 0
    for key, by_value in scores.items():
        value = labels.get(key)
        if value is not None:
            total += by_value.get(value, 0)
    return total


def _raw_scores(scores: ScoreMap, nodes: Sequence[NodeInfoView]) -> list[int]:
    """:func:`raw_score` of every node, a topology key at a time (the fast path)."""
    labels = [info.node.labels for info in nodes]
    totals: list[int] | None = None
    for key, by_value in scores.items():
        get = by_value.get
        column = [get(node_labels.get(key), 0) for node_labels in labels]  # type: ignore[arg-type]
        totals = column if totals is None else [a + b for a, b in zip(totals, column, strict=True)]
    return totals if totals is not None else [0] * len(nodes)


def normalize(scores: list[int]) -> None:
    """NormalizeScore (of a PreScore that did not skip), in place."""
    if not scores:
        return
    lowest = min(scores)
    spread = max(scores) - lowest
    if spread <= 0:
        scores[:] = [0] * len(scores)
        return
    scores[:] = [int(float(MAX_NODE_SCORE) * ((s - lowest) / spread)) for s in scores]


# -- the plugin -------------------------------------------------------------------------------


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """kube-scheduler's InterPodAffinity (module docstring); ``Args``: its
    InterPodAffinityArgs (``hardPodAffinityWeight``, ``ignorePreferredTermsOfExistingPods``)."""

    name = NAME
    Args: ClassVar[type[BaseModel] | None] = InterPodAffinityArgs

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.hard_pod_affinity_weight: int = (
            DEFAULT_HARD_POD_AFFINITY_WEIGHT if args is None else args.hardPodAffinityWeight
        )
        self.ignore_preferred_terms_of_existing_pods: bool = (
            False if args is None else args.ignorePreferredTermsOfExistingPods
        )

        def inter_pod_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
            # Called on every node a decision visits: the cycle's state is read without
            # building a factory closure per node (one is built on the first node only).
            state = cycle._memo.get(_FILTER_MEMO)
            if state is None:
                state = self._filter_state(pod, cycle)
            if state.skip:
                return FITS
            return check_filter(state, node.node.labels)

        def fits_everywhere(pod: Pod, cycle: CycleState) -> bool:
            return self._filter_state(pod, cycle).skip

        def screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
            if fits_everywhere(pod, cycle):
                return no_position(pod, nodes, cycle)
            return every_position(pod, nodes, cycle)

        self._predicate: Predicate = hint(
            inter_pod_filter, fits_everywhere=fits_everywhere, screen=screen
        )

        def inter_pod_priority(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
            scores = self._score_map(pod, nodes, cycle)
            if scores is None:
                return [0] * len(nodes)
            result = (
                _raw_scores(scores, nodes)
                if cycle.settings.fast
                else [raw_score(scores, info.node.labels) for info in nodes]
            )
            normalize(result)
            return result

        self._priority: Priority = inter_pod_priority

    def _filter_state(self, pod: Pod, cycle: CycleState) -> FilterState:
        return cycle.memo(
            _FILTER_MEMO, lambda: filter_state(pod, cycle.cluster, cycle.settings.fast)
        )

    def _score_map(
        self, pod: Pod, nodes: Sequence[NodeInfoView], cycle: CycleState
    ) -> ScoreMap | None:
        if not nodes:
            return None
        # Once per cycle: the framework runs PreScore, then the engine's priority asks
        # again (nothing changes in between).
        return cycle.memo(
            _SCORE_MEMO,
            lambda: score_map(
                pod,
                cycle.cluster,
                self.hard_pod_affinity_weight,
                self.ignore_preferred_terms_of_existing_pods,
                cycle.settings.fast,
            ),
        )

    # -- engine functions

    def predicate(self) -> Predicate:
        """Filter as an engine predicate (with its hints)."""
        return self._predicate

    def priority(self) -> Priority:
        """PreScore + Score + NormalizeScore as one engine priority (0..100 per node)."""
        return self._priority

    # -- plugin API

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        return Status.skip() if self._filter_state(pod, state).skip else None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return as_status(check_filter(self._filter_state(pod, state), node.node.labels))

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        scores = self._score_map(pod, nodes, state)
        if scores is None:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, scores)
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        try:
            scores: ScoreMap = state.read(_PRE_SCORE_KEY)
        except KeyError:
            return Status.error(f'failed to read "{_PRE_SCORE_KEY}" from cycleState')
        return raw_score(scores, node.node.labels)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        values = [entry.score for entry in scores]
        normalize(values)
        for entry, value in zip(scores, values, strict=True):
            entry.score = value
        return None

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): placed pods coming, relabelled or going; nodes added
        or relabelled (topology), with v1.34's hint functions. Imported here so that
        this method stays apart from the plugin's logic."""
        from ..events import ActionType
        from ._queueing import (
            ASSIGNED_POD,
            NODE,
            inter_pod_affinity_node_hint,
            inter_pod_affinity_pod_hint,
            on,
        )

        pods = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        return [
            on(ASSIGNED_POD, pods, inter_pod_affinity_pod_hint),
            on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, inter_pod_affinity_node_hint),
        ]
