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
constraints are the *system* defaults; when it holds, a feasible node lacking a key is
*ignored* (scores 0, left out of the normalisation). The feasible, not ignored nodes register
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
API. Per-pod work is done once per attempt (``cycle.memo`` for Filter), two ways with
one result: the definition (``settings.fast`` off) walks every node and its pods and
scores node by node as upstream does; the fast path counts only the placed pods
:meth:`ClusterState.candidates` returns for each selector (once per selector the
constraints share), decides inclusion only for the nodes holding them, and takes the
Filter's domains from ``ClusterState.node_label_values`` when no inclusion policy can
leave a node out and every node carries every key (checked on the index's counts),
walking the nodes' labels otherwise. Its scoring reads each key's column of values once
(a hostname key every node carries is not read; the zone comes from
``NodeInfo.zone_key`` when every node is zoned) and computes a total per distinct
signature of values, the few nodes holding matching pods apart (:func:`_column_scores`).
When no inclusion policy can leave a node out (the usual case: no nodeSelector or
required node affinity under ``Honor``, taints ``Ignore``d), the counts are shared
between pods: the Filter's counts per domain and the Score's counts over the cluster
are kept in ``ClusterState.shared_counts`` under (namespace, constraints), and the next
pod asking the same adds the placed pods indexed or removed since
(``ClusterState.pod_journal``) instead of visiting every matching pod again, so a
decision does not cost more as the replicas of its workload pile up; a node that
arrived, changed or left since (``node_generation``), or a journal that forgot, means
counting again. Hints: ``never_fails`` for a pod whose constraints (own, or the defaults) hold no
DoNotSchedule one, ``fits_everywhere`` when the cluster gives it none (no group for its
default constraints).

Preemption re-creates the per-pod work on the what-if cluster instead of updating it as
upstream's AddPod/RemovePod do: the minimum is always exact here, where upstream's two
"critical paths" may keep a stale one after several removals.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast

from ...objects import HOSTNAME_LABEL, ZONE_LABELS, Node, Pod, TopologySpreadConstraint
from ...pluginargs import PodTopologySpreadArgs
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

if TYPE_CHECKING:
    from pydantic import BaseModel

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
#: The cycle's last PreScore state: [nodes, fast, state] (the nodes by identity).
_SCORE_MEMO: Final = "PodTopologySpread.score"

#: How many distinct (namespace, constraints) counts ``cluster.shared_counts`` keeps.

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


def defaults_from_args(args: PodTopologySpreadArgs | None) -> SpreadDefaults:
    """The defaults of the plugin's (defaulted, validated) arguments; None: the plugin's
    own defaults (System)."""
    if args is None or args.defaultingType == SYSTEM_DEFAULTING:
        return SYSTEM_DEFAULTS
    constraints = tuple(
        DefaultConstraint(
            max_skew=raw.maxSkew,
            topology_key=raw.topologyKey,
            when_unsatisfiable=raw.whenUnsatisfiable,
            min_domains=1 if raw.minDomains is None else raw.minDomains,
            honor_node_affinity=(raw.nodeAffinityPolicy or "Honor") == "Honor",
            honor_node_taints=(raw.nodeTaintsPolicy or "Ignore") == "Honor",
        )
        for raw in args.defaultConstraints
    )
    return SpreadDefaults(constraints, system=False)


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
    """The same counts from the indexes, for constraints on distinct keys.

    When no inclusion policy can leave a node out, the counts depend only on the
    constraints, the namespace, the nodes and the placed pods: the last pod that asked
    the same leaves them in ``cluster.shared_counts``, and the next one, if no node
    changed since, adds the placed pods indexed and removed since (``pod_journal``)
    instead of counting them all again.
    """
    if any(_filters_nodes(pod, c) for c in constraints):
        return _counted(pod, cluster, constraints)
    memo_key = (_FILTER_MEMO, pod.namespace, tuple(constraints))
    shared = cluster.shared_since(memo_key)
    if shared is not None:
        counts, changes = shared
        counts = dict(counts)
        qualified = _QualifiedNodes(pod, cluster, constraints)
        namespace = pod.namespace
        for sign, existing in changes:
            if existing.deleting or existing.namespace != namespace:
                continue
            for constraint in constraints:
                selector = constraint.selector
                if selector.empty or not selector.matches(existing.labels):
                    continue
                counted = qualified.labels(existing.node_name, constraint)
                if counted is not None:
                    key = constraint.topology_key
                    counts[(key, counted[key])] += sign
        cluster.share(memo_key, counts)
        return dict(counts)
    counts = _counted(pod, cluster, constraints)
    cluster.share(memo_key, counts)
    return dict(counts)


def _counted(
    pod: Pod, cluster: ClusterState, constraints: Sequence[TopologySpreadConstraint]
) -> dict[Pair, int]:
    """The counts from the indexes, every matching placed pod visited."""
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
    #: The fast path's reading of the nodes PreScore was given: each constraint key's
    #: value per node, in their order (None: no such label), or None for a hostname key
    #: every node of the cluster carries (only its presence is read); None for the
    #: definition.
    columns: dict[str, list[str | None] | None] | None = None


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
    pair_counts: dict[Pair, int] = {}
    columns: dict[str, list[str | None] | None] | None = None
    if fast:
        columns = {
            key: _column(cluster, nodes, key)
            for key in dict.fromkeys(c.topology_key for c in constraints)
        }
        ignored, sizes = _register_by_key(nodes, columns, constraints, require_all, pair_counts)
    else:
        ignored, sizes = _register_node_by_node(nodes, constraints, require_all, pair_counts)
    weights = tuple(
        math.log((len(nodes) - len(ignored) if c.topology_key == HOSTNAME_LABEL else size) + 2)
        for c, size in zip(constraints, sizes, strict=True)
    )
    if fast:
        host_counts = _count_candidates(pod, cluster, constraints, require_all, pair_counts)
    else:
        _count_walking(pod, cluster, constraints, require_all, pair_counts)
        host_counts = tuple(None for _ in constraints)
    return ScoreState(constraints, frozenset(ignored), pair_counts, weights, host_counts, columns)


def _column(
    cluster: ClusterState, nodes: Sequence[NodeInfoView], key: str
) -> list[str | None] | None:
    """Each node's value of ``key`` (None: no such label), or None for a hostname key
    that every node of the cluster carries (as many distinct values as nodes, in the
    cluster's index: only its presence is read, and it is everywhere).

    The zone key is read off ``NodeInfo.zone_key`` (kept on the node, no label look-up)
    when every node carries it (its values' counts add up to the nodes): ``zone_key``
    is made of the region and this label's value then, so nodes with one ``zone_key``
    have one value, read from the first of them.
    """
    values = cluster.node_label_values.get(key, {})
    if key == HOSTNAME_LABEL and len(values) == len(cluster.nodes):
        return None
    if key == ZONE_LABELS[0] and sum(values.values()) == len(cluster.nodes):
        infos = cast(Sequence[NodeInfo], nodes)
        zone_keys = [info.zone_key for info in infos]
        # One node per zone_key (any: they share the value) gives the value.
        by_zone_key = {
            zone_key: info.node.labels[key]
            for zone_key, info in dict(zip(zone_keys, infos, strict=True)).items()
        }
        return [by_zone_key[zone_key] for zone_key in zone_keys]
    return [info.node.labels.get(key) for info in nodes]


def _register_node_by_node(
    nodes: Sequence[NodeInfoView],
    constraints: Sequence[TopologySpreadConstraint],
    require_all: bool,
    pair_counts: dict[Pair, int],
) -> tuple[set[str], list[int]]:
    """initPreScoreState as written: the ignored nodes, and each constraint's domains
    (those it registered first) in ``pair_counts``."""
    ignored: set[str] = set()
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
    return ignored, sizes


def _register_by_key(
    nodes: Sequence[NodeInfoView],
    columns: Mapping[str, list[str | None] | None],
    constraints: Sequence[TopologySpreadConstraint],
    require_all: bool,
    pair_counts: dict[Pair, int],
) -> tuple[set[str], list[int]]:
    """The same from the key columns, a key at a time: a constraint's domains are its
    key's values on the counted nodes that an earlier constraint on the key did not
    register (a missing label is the value "")."""
    ignored: set[str] = set()
    kept: list[bool] | None = None
    read = [column for column in columns.values() if column is not None]
    if require_all and read:
        kept = [None not in values for values in zip(*read, strict=True)]
        if all(kept):
            kept = None
        else:
            ignored = {info.name for info, keep in zip(nodes, kept, strict=True) if not keep}
    sizes = [0] * len(constraints)
    for i, constraint in enumerate(constraints):
        key = constraint.topology_key
        if key == HOSTNAME_LABEL:
            continue
        column = columns[key]
        assert column is not None  # only hostname columns go unread
        values: set[str | None] = (
            set(column)
            if kept is None
            else {value for value, keep in zip(column, kept, strict=True) if keep}
        )
        if None in values:
            values.discard(None)
            values.add("")
        for value in values:
            assert value is not None
            if (key, value) not in pair_counts:
                pair_counts[(key, value)] = 0
                sizes[i] += 1
    return ignored, sizes


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
    """The fast path of the counts.

    When no inclusion policy can leave a node out, each constraint's counts over the
    whole cluster (per node for a hostname key, per (key, value) otherwise) depend only
    on the constraints, the namespace, ``require_all``, the nodes and the placed pods:
    they are kept in ``cluster.shared_counts`` and the next pod asking the same catches
    up from the placed pods changed since (``pod_journal``), as the Filter's counts do;
    then the registered domains take their counts from them.
    """
    if any(_filters_nodes(pod, c) for c in constraints):
        return _count_candidates_of(pod, cluster, constraints, require_all, pair_counts)
    memo_key = (_SCORE_MEMO, pod.namespace, tuple(constraints), require_all)
    shared = cluster.shared_since(memo_key)
    full: tuple[dict[Any, int], ...] | None = None
    if shared is not None:
        full, changes = shared
        assert full is not None
        for sign, existing in changes:
            if not existing.deleting and existing.namespace == pod.namespace:
                _tally(pod, cluster, constraints, require_all, existing, sign, full)
    if full is None:
        full = tuple({} for _ in constraints)
        by_selector: dict[Selector, None] = {}
        for constraint in constraints:
            if not constraint.selector.empty:
                by_selector[constraint.selector] = None
        seen: set[str] = set()
        for selector in by_selector:
            for existing in cluster.candidates((pod.namespace,), (selector,)):
                if existing.deleting or existing.uid in seen:
                    continue
                seen.add(existing.uid)
                _tally(pod, cluster, constraints, require_all, existing, 1, full)
    cluster.share(memo_key, full)
    host_counts: list[dict[str, int] | None] = []
    for constraint, counts in zip(constraints, full, strict=True):
        if constraint.topology_key == HOSTNAME_LABEL:
            host_counts.append(dict(counts))
            continue
        host_counts.append(None)
        for pair, count in counts.items():
            if pair in pair_counts:
                pair_counts[pair] += count
    return tuple(host_counts)


def _tally(
    pod: Pod,
    cluster: ClusterState,
    constraints: Sequence[TopologySpreadConstraint],
    require_all: bool,
    existing: Pod,
    sign: int,
    full: tuple[dict[Any, int], ...],
) -> None:
    """Count one placed pod (of the pod's namespace, not being deleted) in or out of each
    constraint's counts over the cluster, as :func:`_count_candidates_of` counts it (no
    inclusion policy leaves a node out here)."""
    node_name = existing.node_name
    info = cluster.nodes.get(node_name)
    if info is None:
        return
    labels = info.node.labels
    keyed: bool | None = None
    for constraint, counts in zip(constraints, full, strict=True):
        selector = constraint.selector
        if selector.empty or not selector.matches(existing.labels):
            continue
        key = constraint.topology_key
        if key == HOSTNAME_LABEL:
            # Scored on the node's own pods: no key check.
            count = counts.get(node_name, 0) + sign
            if count:
                counts[node_name] = count
            else:
                del counts[node_name]
            continue
        if require_all:
            if keyed is None:
                keyed = has_all_keys(labels, constraints)
            if not keyed:
                continue
        pair = (key, labels.get(key, ""))
        counts[pair] = counts.get(pair, 0) + sign


def _count_candidates_of(
    pod: Pod,
    cluster: ClusterState,
    constraints: Sequence[TopologySpreadConstraint],
    require_all: bool,
    pair_counts: dict[Pair, int],
) -> tuple[dict[str, int] | None, ...]:
    """The counts from only the placed pods that may match each selector, looked up and
    matched once for the constraints sharing a selector (the default constraints share
    the pod's group)."""
    qualified = _QualifiedNodes(pod, cluster, constraints, require_all=require_all)
    host_counts: list[dict[str, int] | None] = [
        {} if c.topology_key == HOSTNAME_LABEL else None for c in constraints
    ]
    by_selector: dict[Selector, list[int]] = {}
    for i, constraint in enumerate(constraints):
        if not constraint.selector.empty:
            by_selector.setdefault(constraint.selector, []).append(i)
    nodes = cluster.nodes
    own = pod.labels
    # Constraints no node can fail to count for (no key to require of it, no policy to
    # leave it out): a node's labels are read as they are.
    open_to_all = [
        not require_all and not _filters_nodes(pod, constraint) for constraint in constraints
    ]
    for selector, indexes in by_selector.items():
        found = cluster.candidates((pod.namespace,), (selector,))
        # Replicas of one template share one label map: matched once, with the pod's.
        selects_own = selector.matches(own)
        for existing in found:
            if existing.deleting:
                continue
            labels = existing.labels
            if not (found.exact or (labels is own and selects_own) or selector.matches(labels)):
                continue
            node_name = existing.node_name
            if node_name not in nodes:
                continue
            for i in indexes:
                per_host = host_counts[i]
                if per_host is not None:
                    # Scored on the node's own pods: no inclusion policy, no key check.
                    per_host[node_name] = per_host.get(node_name, 0) + 1
                    continue
                constraint = constraints[i]
                if open_to_all[i]:
                    counted: Mapping[str, str] | None = nodes[node_name].node.labels
                else:
                    counted = qualified.labels(node_name, constraint)
                if counted is not None:
                    pair = (constraint.topology_key, counted.get(constraint.topology_key, ""))
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


def scores(state: ScoreState, pod: Pod, nodes: Sequence[NodeInfoView]) -> list[int]:
    """Score and NormalizeScore over the nodes PreScore was given: the final 0..100 scores."""
    if state.columns is None:
        raw = [raw_score(state, pod, info) for info in nodes]
        normalize(state, [info.name for info in nodes], raw)
        return raw
    return _column_scores(state, nodes, state.columns)


def _column_scores(
    state: ScoreState,
    nodes: Sequence[NodeInfoView],
    columns: Mapping[str, list[str | None] | None],
) -> list[int]:
    """The same scores from the fast path's state, without a term computed per node.

    A node's term for a constraint is ``count * weight + maxSkew - 1``, or nothing
    without the key (a 0.0 added changes no sum): a hostname constraint has one term for
    the nodes holding no matching pod and one per node holding some (a few); any other
    constraint one per domain. Nodes alike in every term have one total, summed once in
    constraint order as Score sums it, then rounded and normalised once: when every node
    carries the hostname keys and none is ignored, the totals are those of the distinct
    values of the other keys, except at the few nodes holding matching pods (the system
    defaults' case); otherwise each node's total is summed from its terms.
    """
    terms: list[tuple[dict[str, float], float, bool]] = []
    for constraint, weight, per_host in zip(
        state.constraints, state.weights, state.host_counts, strict=True
    ):
        key = constraint.topology_key
        base = float(constraint.max_skew - 1)
        if per_host is not None:
            terms.append(({name: c * weight + base for name, c in per_host.items()}, base, True))
        else:
            by_value = {
                value: c * weight + base
                for (pair_key, value), c in state.pair_counts.items()
                if pair_key == key
            }
            terms.append((by_value, base, False))
    keys = [c.topology_key for c in state.constraints]
    if not state.ignored and all(
        columns[key] is None for key, (_, _, on_host) in zip(keys, terms, strict=True) if on_host
    ):
        return _by_signature(state, nodes, columns, keys, terms)
    totals = _node_totals(nodes, columns, keys, terms)
    return _normalized(state, nodes, totals)


def _total(
    signature: Sequence[str | None],
    keys: Sequence[str],
    terms: Sequence[tuple[dict[str, float], float, bool]],
    node_name: str | None,
) -> float:
    """One total, in constraint order: a hostname term by ``node_name`` (None: the
    term of a node holding no matching pod), the others by the signature's value."""
    total = 0.0
    values = iter(signature)
    for (by, base, on_host), _ in zip(terms, keys, strict=True):
        if on_host:
            total += base if node_name is None else by.get(node_name, base)
        else:
            value = next(values)
            if value is not None:
                total += by[value]
    return total


def _by_signature(
    state: ScoreState,
    nodes: Sequence[NodeInfoView],
    columns: Mapping[str, list[str | None] | None],
    keys: Sequence[str],
    terms: Sequence[tuple[dict[str, float], float, bool]],
) -> list[int]:
    """Totals by the values of the non-hostname keys, every node carrying the hostname
    keys; the nodes holding matching pods apart."""
    value_columns = [
        column
        for key, (_, _, on_host) in zip(keys, terms, strict=True)
        if not on_host and (column := columns[key]) is not None
    ]
    # One hashable per node: its value (one such key), or the tuple of its values.
    signatures: list[Any]
    single = len(value_columns) == 1
    if not value_columns:
        signatures = [()] * len(nodes)
    elif single:
        signatures = value_columns[0]
    else:
        signatures = list(zip(*value_columns, strict=True))

    def total_of(signature: Any, node_name: str | None) -> float:
        return _total((signature,) if single else signature, keys, terms, node_name)

    holding: set[str] = set()
    for by, _, on_host in terms:
        if on_host:
            holding.update(by)
    apart: dict[int, float] = {}
    if holding:
        names = [info.name for info in nodes]
        for name in holding.intersection(names):
            i = names.index(name)
            apart[i] = total_of(signatures[i], name)
    alike = {sig: total_of(sig, None) for sig in set(signatures)}
    present = set(apart.values())
    if apart:
        # A signature that only nodes holding matching pods have takes no part.
        apart_count = Counter(signatures[i] for i in apart)
        present.update(
            total for sig, total in alike.items() if signatures.count(sig) > apart_count.get(sig, 0)
        )
    else:
        present.update(alike.values())
    final_of = _finals(present)
    final_by = {sig: final_of.get(total, 0) for sig, total in alike.items()}
    result = [final_by[sig] for sig in signatures]
    for i, total in apart.items():
        result[i] = final_of[total]
    return result


def _node_totals(
    nodes: Sequence[NodeInfoView],
    columns: Mapping[str, list[str | None] | None],
    keys: Sequence[str],
    terms: Sequence[tuple[dict[str, float], float, bool]],
) -> list[float]:
    """Each node's total, a constraint at a time (ignored nodes included: not read)."""
    totals: list[float] | None = None
    for key, (by, base, on_host) in zip(keys, terms, strict=True):
        column = columns[key]
        if on_host:
            if column is None:
                column_terms = [by.get(info.name, base) for info in nodes]
            else:
                column_terms = [
                    0.0 if value is None else by.get(info.name, base)
                    for value, info in zip(column, nodes, strict=True)
                ]
        else:
            assert column is not None
            column_terms = [0.0 if value is None else by.get(value, 0.0) for value in column]
        totals = (
            column_terms
            if totals is None
            else [a + b for a, b in zip(totals, column_terms, strict=True)]
        )
    assert totals is not None
    return totals


def _finals(totals: set[float]) -> dict[float, int]:
    """NormalizeScore of the distinct totals (rounded first) of the nodes not ignored."""
    raw_of = {total: _go_round(total) for total in totals}
    raws = set(raw_of.values())
    highest = max(0, max(raws, default=0))
    lowest = min(raws, default=0)
    return {
        total: MAX_NODE_SCORE
        if highest == 0
        else MAX_NODE_SCORE * (highest + lowest - raw) // highest
        for total, raw in raw_of.items()
    }


def _normalized(state: ScoreState, nodes: Sequence[NodeInfoView], totals: list[float]) -> list[int]:
    ignored = state.ignored
    if not ignored:
        final_of = _finals(set(totals))
        return [final_of[total] for total in totals]
    final_of = _finals(
        {total for total, info in zip(totals, nodes, strict=True) if info.name not in ignored}
    )
    return [
        0 if info.name in ignored else final_of[total]
        for total, info in zip(totals, nodes, strict=True)
    ]


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

    name = NAME
    Args: ClassVar[type[BaseModel] | None] = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle) -> None:
        super().__init__(args, handle)
        self.defaults = defaults_from_args(args)
        hard_defaults = any(
            d.when_unsatisfiable == DO_NOT_SCHEDULE for d in self.defaults.constraints
        )

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
            state = self._score_state(pod, nodes, cycle, cycle.settings.fast)
            if state is None:
                return [0] * len(nodes)
            return scores(state, pod, nodes)

        self._priority: Priority = spread_priority

    def _filter_state(self, pod: Pod, cycle: CycleState) -> FilterState:
        return cycle.memo(
            _FILTER_MEMO,
            lambda: filter_state(pod, cycle.cluster, self.defaults, cycle.settings.fast),
        )

    def _score_state(
        self, pod: Pod, nodes: Sequence[NodeInfoView], cycle: CycleState, fast: bool
    ) -> ScoreState | None:
        """PreScore's state for these very nodes, computed once per cycle: the framework
        runs PreScore, then the engine's priority asks again for the same nodes (nothing
        changes in between)."""
        known: list[Any] = cycle.memo(_SCORE_MEMO, list)
        if known and known[0] is nodes and known[1] == fast:
            found: ScoreState | None = known[2]
            return found
        found = score_state(pod, nodes, cycle.cluster, self.defaults, fast)
        known[:] = [nodes, fast, found]
        return found

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
        # The fast path reads the engine's NodeInfos (their zone_key); other views the
        # definition reads.
        fast = state.settings.fast and set(map(type, nodes)) <= {NodeInfo}
        found = self._score_state(pod, nodes, state, fast)
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

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): placed pods coming, relabelled or going; nodes added,
        deleted, relabelled or (re)tainted (a node's taints decide whether it counts),
        with v1.34's hint functions. Imported here so that this method stays apart
        from the plugin's logic."""
        from ..events import ActionType
        from ._queueing import ASSIGNED_POD, NODE, on, spread_node_hint, spread_pod_hint

        pods = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL
        return [
            on(ASSIGNED_POD, pods, spread_pod_hint),
            on(NODE, node | ActionType.UPDATE_NODE_TAINT, spread_node_hint),
        ]


def as_status(reasons: Reasons) -> Status | None:
    """A predicate's reasons as a Filter status: UnschedulableAndUnresolvable when a
    reason says so, else Unschedulable; None when it fits."""
    if not reasons:
        return None
    if any(is_unresolvable(reason) for reason in reasons):
        return Status.unresolvable(*reasons)
    return Status.unschedulable(*reasons)
