"""PodTopologySpread: kube-scheduler v1.25-v1.30's in-tree plugin, v1.30's rules.

**Constraints.** A pod's own ``topologySpreadConstraints`` (their ``labelSelector``
already carries ``matchLabelKeys``, merged when the pod was parsed, as the v1.27+
scheduler merges them; ``nodeAffinityPolicy`` defaults to Honor, ``nodeTaintsPolicy``
to Ignore, ``minDomains`` to 1). A pod that has none gets the plugin's *default
constraints*: with ``defaultingType: System`` (the default) maxSkew 3 over
``kubernetes.io/hostname`` and 5 over ``topology.kubernetes.io/zone``, both
``ScheduleAnyway``; with ``List`` the ``defaultConstraints`` of the arguments. A default
constraint selects the pod's own group: the label set of the Services of its namespace
that select it, plus the selector of its controller when that is a
ReplicationController (``v1``), ReplicaSet or StatefulSet (``apps/v1``) found by name
(``helper.DefaultSelector``); a pod with no such group gets no default constraint. Filter
reads the ``DoNotSchedule`` constraints, Score the ``ScheduleAnyway`` ones.

**PreFilter / Filter.** Skip when the pod has no DoNotSchedule constraint. Otherwise,
over every node that carries all the constraints' topology keys, for each constraint
whose inclusion policies let the node in (``Honor`` affinity: the node passes the pod's
nodeSelector and required node affinity; ``Honor`` taints: it tolerates the pod's
NoSchedule/NoExecute taints), the node's pair (key, its value) is a *domain* and counts
the node's pods that are in the pod's namespace, not being deleted and matched by the
selector (an empty selector counts none, though the pod matches it itself). Two
constraints on one key share the pair; per node, the last included one's count is the
one added (upstream writes a per-node map). For a candidate node, in constraint order:
no topology label -> ``node(s) didn't match pod topology spread constraints (missing
required label)``, UnschedulableAndUnresolvable; a key with no domain at all is skipped
(upstream logs an internal error); else with ``min`` the smallest count of the key's
domains (0 when they are fewer than ``minDomains``), ``count(node's domain) + (1 if the
pod matches the selector) - min > maxSkew`` -> ``node(s) didn't match pod topology
spread constraints``, Unschedulable.

**PreScore / Score / NormalizeScore** (the v1.19+ scoring). Skip when the cluster has no
node or the pod no ScheduleAnyway constraint. ``requireAllTopologies`` holds unless the
constraints are the *system* defaults: then a feasible node lacking a key is *ignored*
(scores 0, left out of the normalisation). The feasible, not ignored nodes register
their domains for each non-hostname constraint (value "" for a missing label); a
constraint's weight is ``ln(domains it registered first + 2)``, for a hostname
constraint ``ln(feasible - ignored + 2)``. Every node of the cluster (carrying all keys
when required), per constraint letting it in, adds its matching pods to its registered
domain. A node's raw score is, over the constraints whose key it carries, ``count *
weight + maxSkew - 1`` (count: its own matching pods for hostname, its domain's
otherwise), rounded half away from zero. Normalised: with ``max`` (from 0) and ``min``
over the not ignored nodes, ``100 * (max + min - raw) / max`` (integer), 100 for every
node when ``max`` is 0, 0 for ignored nodes.

**Engine functions.** :meth:`PodTopologySpread.predicate` and
:meth:`PodTopologySpread.priority` are what the engine runs; ``filter``, ``pre_filter``,
``pre_score``, ``score`` and ``normalize_score`` give the same answers through the plugin
API. Per-pod work is done once per attempt (``cycle.memo``), two ways with one result:
the definition (``settings.fast`` off) walks every node and its pods as upstream does;
the fast path counts only the placed pods :meth:`ClusterState.candidates` returns for each
selector, decides inclusion only for the nodes holding them, and takes the Filter's
domains from ``ClusterState.node_label_values`` when no inclusion policy can leave a node
out and every node carries every key (checked on the index's counts), walking the nodes'
labels otherwise. Hints: ``never_fails`` for a pod whose constraints (own, or the
defaults) hold no DoNotSchedule one, ``fits_everywhere`` when the cluster gives it none
(no group for its default constraints).

Preemption re-creates the per-pod work on the what-if cluster instead of updating it as
upstream's AddPod/RemovePod do: the minimum is always exact here, where upstream's two
"critical paths" may keep a stale one after several removals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from ...objects import HOSTNAME_LABEL, Node, Pod, TopologySpreadConstraint
from ...selectors import IN, Requirement, Selector
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
    is_unresolvable,
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
from ..predicates.spreading import matches_node_selector_and_affinity
from ..predicates.taints import tolerates_taints

NAME: Final = "PodTopologySpread"

ERR_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_NODE_LABEL_NOT_MATCH: Final = ERR_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
MAX_NODE_SCORE: Final = 100

#: The controllers whose selector joins a default constraint's: (apiVersion, kind).
_GROUP_CONTROLLERS: Final = frozenset(
    {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}
)

_FILTER_MEMO: Final = "PodTopologySpread.filter"
_PRE_SCORE_KEY: Final = "PreScorePodTopologySpread"

Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class DefaultConstraint:
    """A default constraint of the plugin's arguments: a constraint with no selector
    (the pod's group is its selector)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False


SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    DefaultConstraint(3, HOSTNAME_LABEL, SCHEDULE_ANYWAY),
    DefaultConstraint(5, ZONE_LABEL, SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class SpreadDefaults:
    """What the plugin's arguments decide: the default constraints and whether they are
    the system's (``requireAllTopologies`` is off for those)."""

    constraints: tuple[DefaultConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
    system: bool = True


SYSTEM_DEFAULTS: Final = SpreadDefaults()


def defaults_from_args(args: Any) -> SpreadDefaults:
    """The defaults of a PodTopologySpreadArgs model (camelCase fields, defaulted), or of
    None (the plugin's own defaults: System)."""
    if args is None or getattr(args, "defaultingType", SYSTEM_DEFAULTING) == SYSTEM_DEFAULTING:
        return SYSTEM_DEFAULTS
    constraints = []
    for raw in args.defaultConstraints:
        constraints.append(
            DefaultConstraint(
                max_skew=raw.maxSkew,
                topology_key=raw.topologyKey,
                when_unsatisfiable=raw.whenUnsatisfiable,
                min_domains=1 if raw.minDomains is None else raw.minDomains,
                honor_node_affinity=(raw.nodeAffinityPolicy or "Honor") == "Honor",
                honor_node_taints=(raw.nodeTaintsPolicy or "Ignore") == "Honor",
            )
        )
    return SpreadDefaults(tuple(constraints), system=False)


# -- constraints -------------------------------------------------------------------------


def default_selector(pod: Pod, cluster: ClusterState) -> Selector:
    """helper.DefaultSelector: the pod's Services' label sets merged, plus its
    RC/ReplicaSet/StatefulSet controller's selector (looked up by name). Empty when the
    pod belongs to no such group."""
    label_set: dict[str, str] = {}
    for workload in cluster.workloads_in(pod.namespace):
        if workload.kind == "Service" and workload.selector.matches(pod.labels):
            _merge_set(label_set, workload.selector)
    extra: tuple[Requirement, ...] = ()
    owner = pod.controller
    if owner is not None and (owner.api_version, owner.kind) in _GROUP_CONTROLLERS:
        found = cluster.workloads.get(f"{owner.kind}/{pod.namespace}/{owner.name}")
        if found is not None and not found.selector.nothing:
            if owner.kind == "ReplicationController":
                _merge_set(label_set, found.selector)
            else:
                extra = found.selector.requirements
    return Selector(
        (*(Requirement(key, IN, frozenset({value})) for key, value in label_set.items()), *extra)
    )


def _merge_set(label_set: dict[str, str], selector: Selector) -> None:
    """labels.Merge with a map selector (each requirement is ``key In {value}``)."""
    for requirement in selector.requirements:
        label_set[requirement.key] = next(iter(requirement.values))


def pod_constraints(
    pod: Pod, cluster: ClusterState, defaults: SpreadDefaults, action: str
) -> tuple[TopologySpreadConstraint, ...]:
    """The pod's constraints of one ``whenUnsatisfiable`` action, or the default ones
    (with the pod's group as selector) when the pod has none of its own at all."""
    if pod.spread_constraints:
        return tuple(c for c in pod.spread_constraints if c.when_unsatisfiable == action)
    wanted = [d for d in defaults.constraints if d.when_unsatisfiable == action]
    if not wanted:
        return ()
    selector = default_selector(pod, cluster)
    if selector.empty:
        return ()
    return tuple(
        TopologySpreadConstraint(
            max_skew=d.max_skew,
            topology_key=d.topology_key,
            when_unsatisfiable=d.when_unsatisfiable,
            selector=selector,
            min_domains=d.min_domains,
            honor_node_affinity=d.honor_node_affinity,
            honor_node_taints=d.honor_node_taints,
        )
        for d in wanted
    )


def has_all_keys(
    labels: Mapping[str, str], constraints: Iterable[TopologySpreadConstraint]
) -> bool:
    """nodeLabelsMatchSpreadConstraints."""
    for constraint in constraints:
        if constraint.topology_key not in labels:
            return False
    return True


def count_matching(pods: Iterable[Pod], selector: Selector, namespace: str) -> int:
    """countPodsMatchSelector: pods of the namespace, not being deleted, selected; an
    empty selector counts none."""
    if selector.empty:
        return 0
    return sum(
        1
        for p in pods
        if not p.deleting and p.namespace == namespace and selector.matches(p.labels)
    )


class Inclusion:
    """matchNodeInclusionPolicies, each node's two checks made at most once."""

    __slots__ = ("_affinity", "_pod", "_taints")

    def __init__(self, pod: Pod) -> None:
        self._pod = pod
        self._affinity: dict[str, bool] = {}
        self._taints: dict[str, bool] = {}

    def admits(self, constraint: TopologySpreadConstraint, node: Node) -> bool:
        if constraint.honor_node_affinity:
            ok = self._affinity.get(node.name)
            if ok is None:
                ok = self._affinity[node.name] = matches_node_selector_and_affinity(self._pod, node)
            if not ok:
                return False
        if constraint.honor_node_taints:
            ok = self._taints.get(node.name)
            if ok is None:
                ok = self._taints[node.name] = tolerates_taints(self._pod, node)
            if not ok:
                return False
        return True


def _filters_nodes(pod: Pod, constraint: TopologySpreadConstraint) -> bool:
    """Whether the inclusion policies can leave out a node that carries the keys."""
    if constraint.honor_node_taints:
        return True
    return constraint.honor_node_affinity and (
        pod.has_node_selector or pod.required_node_terms is not None
    )


# -- Filter ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterState:
    """PreFilter's state (preFilterState): the constraints and their domains' counts."""

    constraints: tuple[TopologySpreadConstraint, ...]
    #: 1 where the pod matches the constraint's selector, else 0.
    self_match: tuple[int, ...]
    #: (topologyKey, value) -> matching pods in that domain (TpPairToMatchNum).
    pair_counts: dict[Pair, int]
    #: topologyKey -> the smallest count of its domains; keys without a domain absent.
    min_counts: dict[str, int]
    #: topologyKey -> how many domains it has (TpKeyToDomainsNum).
    domains: dict[str, int]


NO_FILTER_STATE: Final = FilterState((), (), {}, {}, {})


def filter_state(
    pod: Pod, cluster: ClusterState, defaults: SpreadDefaults, fast: bool
) -> FilterState:
    """calPreFilterState, by the definition or from the indexes (same result)."""
    constraints = pod_constraints(pod, cluster, defaults, DO_NOT_SCHEDULE)
    if not constraints:
        return NO_FILTER_STATE
    keys = [c.topology_key for c in constraints]
    if fast and len(set(keys)) == len(keys):
        pair_counts = _indexed_counts(pod, cluster, constraints)
    else:
        pair_counts = _walked_counts(pod, cluster, constraints)
    min_counts: dict[str, int] = {}
    domains: dict[str, int] = {}
    for (key, _), count in pair_counts.items():
        domains[key] = domains.get(key, 0) + 1
        if count < min_counts.get(key, count + 1):
            min_counts[key] = count
    return FilterState(
        constraints=constraints,
        self_match=tuple(1 if c.selector.matches(pod.labels) else 0 for c in constraints),
        pair_counts=pair_counts,
        min_counts=min_counts,
        domains=domains,
    )


def _walked_counts(
    pod: Pod, cluster: ClusterState, constraints: Sequence[TopologySpreadConstraint]
) -> dict[Pair, int]:
    """The definition: every node, its pods counted per included constraint."""
    inclusion = Inclusion(pod)
    pair_counts: dict[Pair, int] = {}
    for info in cluster.nodes.values():
        node = info.node
        labels = node.labels
        if not has_all_keys(labels, constraints):
            continue
        here: dict[Pair, int] = {}
        for constraint in constraints:
            if inclusion.admits(constraint, node):
                key = constraint.topology_key
                here[(key, labels[key])] = count_matching(
                    info.pods.values(), constraint.selector, pod.namespace
                )
        for pair, count in here.items():
            pair_counts[pair] = pair_counts.get(pair, 0) + count
    return pair_counts


def _indexed_counts(
    pod: Pod, cluster: ClusterState, constraints: Sequence[TopologySpreadConstraint]
) -> dict[Pair, int]:
    """The same counts from the indexes, for constraints on distinct keys."""
    pair_counts: dict[Pair, int] = {}
    values_of = cluster.node_label_values
    total = len(cluster.nodes)
    if not any(_filters_nodes(pod, c) for c in constraints) and all(
        sum(values_of.get(c.topology_key, {}).values()) == total for c in constraints
    ):
        # Every node carries every key and no policy leaves one out: every value is a domain.
        for constraint in constraints:
            key = constraint.topology_key
            for value in values_of.get(key, ()):
                pair_counts[(key, value)] = 0
    else:
        inclusion = Inclusion(pod)
        for info in cluster.nodes.values():
            node = info.node
            labels = node.labels
            if has_all_keys(labels, constraints):
                for constraint in constraints:
                    if inclusion.admits(constraint, node):
                        key = constraint.topology_key
                        pair_counts[(key, labels[key])] = 0
    qualified = _QualifiedNodes(pod, cluster, constraints)
    for constraint in constraints:
        selector = constraint.selector
        if selector.empty:
            continue
        found = cluster.candidates((pod.namespace,), (selector,))
        key = constraint.topology_key
        for existing in found:
            if existing.deleting or not (found.exact or selector.matches(existing.labels)):
                continue
            counted = qualified.labels(existing.node_name, constraint)
            if counted is not None:
                pair_counts[(key, counted[key])] += 1
    return pair_counts


class _QualifiedNodes:
    """The labels of a node whose pods a constraint counts, else None; per node once."""

    __slots__ = ("_cluster", "_constraints", "_inclusion", "_keys")

    def __init__(
        self,
        pod: Pod,
        cluster: ClusterState,
        constraints: Sequence[TopologySpreadConstraint],
        *,
        require_all: bool = True,
    ) -> None:
        self._cluster = cluster
        self._constraints = constraints if require_all else ()
        self._inclusion = Inclusion(pod)
        self._keys: dict[str, bool] = {}

    def labels(
        self, node_name: str, constraint: TopologySpreadConstraint
    ) -> Mapping[str, str] | None:
        info = self._cluster.nodes.get(node_name)
        if info is None:
            return None
        node = info.node
        keyed = self._keys.get(node_name)
        if keyed is None:
            keyed = self._keys[node_name] = has_all_keys(node.labels, self._constraints)
        if not keyed or not self._inclusion.admits(constraint, node):
            return None
        return node.labels


def check_filter(state: FilterState, labels: Mapping[str, str]) -> Reasons:
    """Filter on one node's labels."""
    for constraint, self_match in zip(state.constraints, state.self_match, strict=True):
        key = constraint.topology_key
        value = labels.get(key)
        if value is None:
            return (Unresolvable(ERR_NODE_LABEL_NOT_MATCH),)
        lowest = state.min_counts.get(key)
        if lowest is None:
            continue  # no domain for the key at all: upstream logs an internal error
        if state.domains[key] < constraint.min_domains:
            lowest = 0
        if state.pair_counts.get((key, value), 0) + self_match - lowest > constraint.max_skew:
            return (ERR_CONSTRAINTS_NOT_MATCH,)
    return FITS


# -- Score ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScoreState:
    """PreScore's state (preScoreState)."""

    constraints: tuple[TopologySpreadConstraint, ...]
    ignored: frozenset[str]
    #: Registered (key, value) -> matching pods (TopologyPairToPodCounts).
    pair_counts: dict[Pair, int]
    weights: tuple[float, ...]
    #: Per hostname constraint (None for the others): node name -> its matching pods;
    #: filled by the fast path only (the definition counts the node's pods when scoring).
    host_counts: tuple[dict[str, int] | None, ...]


def score_state(
    pod: Pod,
    nodes: Sequence[NodeInfoView],
    cluster: ClusterState,
    defaults: SpreadDefaults,
    fast: bool,
) -> ScoreState | None:
    """PreScore; None for Skip."""
    if not cluster.nodes:
        return None
    constraints = pod_constraints(pod, cluster, defaults, SCHEDULE_ANYWAY)
    if not constraints:
        return None
    require_all = bool(pod.spread_constraints) or not defaults.system
    ignored: set[str] = set()
    pair_counts: dict[Pair, int] = {}
    sizes = [0] * len(constraints)
    for info in nodes:
        labels = info.node.labels
        if require_all and not has_all_keys(labels, constraints):
            ignored.add(info.name)
            continue
        for i, constraint in enumerate(constraints):
            key = constraint.topology_key
            if key == HOSTNAME_LABEL:
                continue
            pair = (key, labels.get(key, ""))
            if pair not in pair_counts:
                pair_counts[pair] = 0
                sizes[i] += 1
    weights = tuple(
        math.log((len(nodes) - len(ignored) if c.topology_key == HOSTNAME_LABEL else size) + 2)
        for c, size in zip(constraints, sizes, strict=True)
    )
    if fast:
        host_counts = _count_candidates(pod, cluster, constraints, require_all, pair_counts)
    else:
        _count_walking(pod, cluster, constraints, require_all, pair_counts)
        host_counts = tuple(None for _ in constraints)
    return ScoreState(constraints, frozenset(ignored), pair_counts, weights, host_counts)


def _count_walking(
    pod: Pod,
    cluster: ClusterState,
    constraints: Sequence[TopologySpreadConstraint],
    require_all: bool,
    pair_counts: dict[Pair, int],
) -> None:
    inclusion = Inclusion(pod)
    for info in cluster.nodes.values():
        node = info.node
        labels = node.labels
        if require_all and not has_all_keys(labels, constraints):
            continue
        for constraint in constraints:
            if not inclusion.admits(constraint, node):
                continue
            pair = (constraint.topology_key, labels.get(constraint.topology_key, ""))
            if pair in pair_counts:
                pair_counts[pair] += count_matching(
                    info.pods.values(), constraint.selector, pod.namespace
                )


def _count_candidates(
    pod: Pod,
    cluster: ClusterState,
    constraints: Sequence[TopologySpreadConstraint],
    require_all: bool,
    pair_counts: dict[Pair, int],
) -> tuple[dict[str, int] | None, ...]:
    """The fast path of the counts: only the placed pods that may match each selector."""
    qualified = _QualifiedNodes(pod, cluster, constraints, require_all=require_all)
    host_counts: list[dict[str, int] | None] = []
    for constraint in constraints:
        selector = constraint.selector
        key = constraint.topology_key
        per_host: dict[str, int] | None = {} if key == HOSTNAME_LABEL else None
        host_counts.append(per_host)
        if selector.empty:
            continue
        found = cluster.candidates((pod.namespace,), (selector,))
        for existing in found:
            if existing.deleting or not (found.exact or selector.matches(existing.labels)):
                continue
            if per_host is not None:
                # Scored on the node's own pods: no inclusion policy, no key check.
                if existing.node_name in cluster.nodes:
                    per_host[existing.node_name] = per_host.get(existing.node_name, 0) + 1
                continue
            labels = qualified.labels(existing.node_name, constraint)
            if labels is not None:
                pair = (key, labels.get(key, ""))
                if pair in pair_counts:
                    pair_counts[pair] += 1
    return tuple(host_counts)


def raw_score(state: ScoreState, pod: Pod, info: NodeInfoView) -> int:
    """Score: one node's raw score (0 for an ignored node)."""
    if info.name in state.ignored:
        return 0
    labels = info.node.labels
    total = 0.0
    for constraint, weight, per_host in zip(
        state.constraints, state.weights, state.host_counts, strict=True
    ):
        key = constraint.topology_key
        value = labels.get(key)
        if value is None:
            continue
        if key == HOSTNAME_LABEL:
            if per_host is not None:
                count = per_host.get(info.name, 0)
            else:
                count = count_matching(info.pods.values(), constraint.selector, pod.namespace)
        else:
            count = state.pair_counts[(key, value)]
        total += count * weight + float(constraint.max_skew - 1)
    return _go_round(total)


def _go_round(value: float) -> int:
    """math.Round: half away from zero (Python's round() goes to even)."""
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return whole


def normalize(state: ScoreState, names: Sequence[str], scores: list[int]) -> None:
    """NormalizeScore, in place."""
    ignored = state.ignored
    lowest: int | None = None
    highest = 0
    for name, score in zip(names, scores, strict=True):
        if name in ignored:
            continue
        if lowest is None or score < lowest:
            lowest = score
        highest = max(highest, score)
    for i, (name, score) in enumerate(zip(names, scores, strict=True)):
        if name in ignored:
            scores[i] = 0
        elif highest == 0:
            scores[i] = MAX_NODE_SCORE
        else:
            assert lowest is not None
            scores[i] = MAX_NODE_SCORE * (highest + lowest - score) // highest


# -- the plugin -----------------------------------------------------------------------------


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """kube-scheduler's PodTopologySpread (module docstring); ``Args``: its
    PodTopologySpreadArgs (``defaultConstraints``, ``defaultingType``)."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.defaults = defaults_from_args(args)
        hard_defaults = any(
            d.when_unsatisfiable == DO_NOT_SCHEDULE for d in self.defaults.constraints
        )
        defaults = self.defaults

        def spread_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
            return check_filter(self._filter_state(pod, cycle), node.node.labels)

        def never_fails(pod: Pod) -> bool:
            if pod.spread_constraints:
                return all(c.when_unsatisfiable != DO_NOT_SCHEDULE for c in pod.spread_constraints)
            return not hard_defaults

        def fits_everywhere(pod: Pod, cycle: CycleState) -> bool:
            return not self._filter_state(pod, cycle).constraints

        def screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
            if fits_everywhere(pod, cycle):
                return no_position(pod, nodes, cycle)
            return every_position(pod, nodes, cycle)

        self._predicate: Predicate = hint(
            spread_filter, never_fails=never_fails, fits_everywhere=fits_everywhere, screen=screen
        )

        def spread_priority(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
            state = score_state(pod, nodes, cycle.cluster, defaults, cycle.settings.fast)
            if state is None:
                return [0] * len(nodes)
            scores = [raw_score(state, pod, info) for info in nodes]
            normalize(state, [info.name for info in nodes], scores)
            return scores

        self._priority: Priority = spread_priority

    def _filter_state(self, pod: Pod, cycle: CycleState) -> FilterState:
        return cycle.memo(
            _FILTER_MEMO,
            lambda: filter_state(pod, cycle.cluster, self.defaults, cycle.settings.fast),
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
        if not self._filter_state(pod, state).constraints:
            return Status.skip()
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return as_status(check_filter(self._filter_state(pod, state), node.node.labels))

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        found = score_state(pod, nodes, state.cluster, self.defaults, state.settings.fast)
        if found is None:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, found)
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        try:
            found: ScoreState = state.read(_PRE_SCORE_KEY)
        except KeyError:
            return Status.error(f'reading "{_PRE_SCORE_KEY}" from cycleState: not found')
        return raw_score(found, pod, node)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        try:
            found: ScoreState = state.read(_PRE_SCORE_KEY)
        except KeyError:
            return Status.error(f'reading "{_PRE_SCORE_KEY}" from cycleState: not found')
        values = [entry.score for entry in scores]
        normalize(found, [entry.name for entry in scores], values)
        for entry, value in zip(scores, values, strict=True):
            entry.score = value
        return None


def as_status(reasons: Reasons) -> Status | None:
    """A predicate's reasons as a Filter status: UnschedulableAndUnresolvable when a
    reason says so, else Unschedulable; None when it fits."""
    if not reasons:
        return None
    if any(is_unresolvable(reason) for reason in reasons):
        return Status.unresolvable(*reasons)
    return Status.unschedulable(*reasons)
