"""NodeAffinity, as kube-scheduler v1.30 has it (PreFilter, Filter, PreScore, Score,
NormalizeScore), with its ``addedAffinity`` argument.

PreFilter: Skip (no Filter this cycle) for a pod with neither ``nodeSelector`` nor
required node affinity when no ``addedAffinity`` is required either. When every term
of the pod's required affinity names nodes (``matchFields`` ``metadata.name In``, the
names of one term intersected), only those nodes are filtered (a
:class:`~..interface.PreFilterResult`, the terms' names united); when the union is
empty, the pod is refused at once, UnschedulableAndUnresolvable: ``pod affinity terms
conflict``.

Filter, both UnschedulableAndUnresolvable: a node the ``addedAffinity``'s required
terms do not match is refused with ``node(s) didn't match scheduler-enforced node
affinity``; one the pod's ``nodeSelector`` (every label) and required terms (ORed; an
empty term matches nothing, no term at all matches no node) do not match, with
``node(s) didn't match Pod's node affinity/selector``.

Score: the summed weights of the ``addedAffinity``'s and the pod's preferred terms the
node matches (terms of weight 0 and empty terms skipped; unlike the legacy priority, a
term's ``matchFields`` count). PreScore skips a pod with no preferred term when the
arguments add none. NormalizeScore: ``DefaultNormalizeScore(100)``, the best node 100.

Fast path: node-local; the filter cannot fail for a pod without selector or required
terms when nothing is added (the plan drops it), and its screen evaluates a selector
once per distinct set of the label values it reads (:mod:`..predicates.general`); the
score is a constant 0 without preferences, and its batch form also evaluates the terms
once per distinct set of label values when no term reads the node's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ... import pluginargs
from ...objects import Node, Pod
from ...selectors import IN, NodeSelectorTerm, node_selector_term, node_selector_terms, terms_match
from ..events import ActionType, ClusterEventWithHint
from ..functions import (
    FITS,
    CycleState,
    Predicate,
    Priority,
    Reasons,
    Unresolvable,
    hint,
    mapped,
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
from ..predicates.general import matches_node_selector_and_affinity, node_selector_screen
from ._queueing import NODE, node_affinity_hint, on
from .helper import arg, engine_node, instance_key, normalize_node_scores, normalizing, status_of

NAME: Final = "NodeAffinity"

ERR_REASON_POD: Final = Unresolvable("node(s) didn't match Pod's node affinity/selector")
ERR_REASON_ENFORCED: Final = Unresolvable("node(s) didn't match scheduler-enforced node affinity")
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"

#: The node field a term's matchFields can name.
OBJECT_NAME_FIELD: Final = "metadata.name"

WeightedTerms = tuple[tuple[int, NodeSelectorTerm], ...]


def preferred_terms(terms: Sequence[tuple[int, NodeSelectorTerm]]) -> WeightedTerms:
    """NewPreferredSchedulingTerms: the terms that can score (weight not 0, not empty)."""
    return tuple((weight, term) for weight, term in terms if weight != 0 and not term.empty)


def term_weights(terms: WeightedTerms, node: Node) -> int:
    """PreferredSchedulingTerms.Score: the summed weights of the matching terms."""
    labels, name = node.labels, node.name
    return sum(weight for weight, term in terms if term.matches(labels, name))


def required_node_names(pod: Pod) -> frozenset[str] | None:
    """The nodes the pod's required terms name, when every term names some (PreFilter)."""
    terms = pod.required_node_terms
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for req in term.fields.requirements:
            if req.key == OBJECT_NAME_FIELD and req.operator == IN:
                term_names = set(req.values) if term_names is None else term_names & req.values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


# -- settings from the arguments --------------------------------------------------------


def _plain(value: Any) -> Any:
    """Models (or lists of them) as the dicts the selector compilers read."""
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


@dataclass(frozen=True, slots=True)
class NodeAffinitySettings:
    """NodeAffinityArgs' addedAffinity, compiled: required terms (None: none added) and
    the preferred terms that can score."""

    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: WeightedTerms = ()

    @classmethod
    def from_args(cls, args: Any) -> NodeAffinitySettings:
        added = arg(args, "addedAffinity")
        if added is None:
            return cls()
        required = None
        required_raw = arg(added, "requiredDuringSchedulingIgnoredDuringExecution")
        where = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        if required_raw is not None:
            required = node_selector_terms(
                _plain(arg(required_raw, "nodeSelectorTerms") or []), f"{where}.nodeSelectorTerms"
            )
        preferred: list[tuple[int, NodeSelectorTerm]] = []
        where = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        for i, entry in enumerate(
            arg(added, "preferredDuringSchedulingIgnoredDuringExecution") or ()
        ):
            preferred.append(
                (
                    int(arg(entry, "weight") or 0),
                    node_selector_term(
                        _plain(arg(entry, "preference")), f"{where}[{i}].preference"
                    ),
                )
            )
        return cls(required, preferred_terms(preferred))


# -- the engine functions -----------------------------------------------------------------


class NodeAffinityFilter:
    """The Filter as an engine predicate, for one addedAffinity."""

    __slots__ = ("__weakref__", "added")

    def __init__(self, added: tuple[NodeSelectorTerm, ...] | None) -> None:
        self.added = added

    def __call__(self, pod: Pod, info: NodeInfo, cycle: CycleState) -> Reasons:
        node = info.node
        added = self.added
        if added is not None and not terms_match(added, node.labels, node.name):
            return (ERR_REASON_ENFORCED,)
        if not matches_node_selector_and_affinity(pod, node):
            return (ERR_REASON_POD,)
        return FITS

    def unconstrained(self, pod: Pod) -> bool:
        """Nothing to check for this pod: no selector, no required terms, none added."""
        return self.added is None and not pod.has_node_selector and pod.required_node_terms is None

    def screen(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        suspects = node_selector_screen(pod, nodes, cycle)
        added = self.added
        if added is None:
            return suspects
        misses = set(suspects)
        misses.update(
            k
            for k, info in enumerate(nodes)
            if not terms_match(added, info.node.labels, info.node.name)
        )
        return sorted(misses)


class NodeAffinityScore:
    """The Score (before NormalizeScore) as an engine map, for one addedAffinity."""

    __slots__ = ("__weakref__", "_key", "added")

    def __init__(self, added: WeightedTerms) -> None:
        self.added = added
        self._key = instance_key(f"{NAME}/preferred")

    def terms(self, pod: Pod, cycle: CycleState) -> WeightedTerms:
        """The added terms, then the pod's, that can score."""
        return cycle.memo(self._key, lambda: self._terms(pod))

    def _terms(self, pod: Pod) -> WeightedTerms:
        own = preferred_terms([(p.weight, p.term) for p in pod.preferred_node_terms])
        return (*self.added, *own)

    def __call__(self, pod: Pod, info: NodeInfo, cycle: CycleState) -> int:
        return term_weights(self.terms(pod, cycle), info.node)

    def constant(self, pod: Pod) -> int | None:
        """0 everywhere for a pod without a preference that can score, nothing added."""
        if self.added:
            return None
        own = preferred_terms([(p.weight, p.term) for p in pod.preferred_node_terms])
        return None if own else 0

    def batch(self, pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
        terms = self.terms(pod, cycle)
        if not terms:
            return [0] * len(nodes)
        keys: list[str] = []
        for _, term in terms:
            if not term.fields.empty:
                # A term reads the node's name: no two nodes share an answer.
                return [term_weights(terms, info.node) for info in nodes]
            keys.extend(req.key for req in term.labels.requirements)
        keys = list(dict.fromkeys(keys))
        known: dict[tuple[str | None, ...], int] = {}
        out: list[int] = []
        for info in nodes:
            labels = info.node.labels
            values = tuple([labels.get(key) for key in keys])
            score = known.get(values)
            if score is None:
                score = known[values] = term_weights(terms, info.node)
            out.append(score)
        return out


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """The pod's nodeSelector and node affinity, and the scheduler's addedAffinity."""

    name = NAME
    Args = pluginargs.NodeAffinityArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.settings = NodeAffinitySettings.from_args(args)
        self._filter = NodeAffinityFilter(self.settings.required)
        hint(
            self._filter,
            node_local=True,
            never_fails=self._filter.unconstrained,
            screen=self._filter.screen,
        )
        self._score = NodeAffinityScore(self.settings.preferred)
        hint(
            self._score,
            node_local=True,
            constant=self._score.constant,
            batch=self._score.batch,
        )
        self._priority = mapped(self._score, normalizing(reverse=False))

    def predicate(self) -> Predicate:
        return self._filter

    def priority(self) -> Priority:
        return self._priority

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        if self._filter.unconstrained(pod):
            return Status.skip()
        names = required_node_names(pod)
        if names is None:
            return None
        if not names:
            return Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return status_of(self._filter(pod, engine_node(state, node), state))

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        if not self.settings.preferred and not pod.preferred_node_terms:
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        return self._score(pod, engine_node(state, node), state)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        normalize_node_scores(False, scores)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34: a node added or relabelled that the pod's terms now match."""
        hint = node_affinity_hint(self.settings.required)
        return [on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, hint)]
