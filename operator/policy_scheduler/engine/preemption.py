"""Preemption: where evicting lower-priority pods would let a pod that fits nowhere fit.

This is kube-scheduler's legacy ``genericScheduler.Preempt`` (v1.13-v1.17), run after a
decision found no node (a *fit error*; a pod refused by the basic checks, or a cluster
without nodes, never preempts):

1. **Eligibility** (``podEligibleToPreemptOthers``): a pod with ``preemptionPolicy:
   Never`` does not preempt; nor does a pod already nominated to a node where a pod of
   lower priority is still terminating (its earlier victims are on their way out).
2. **Nodes where it might help** (``nodesWherePreemptionMightHelp``): every node, in
   NodeTree order, except those refused for a reason that removing pods cannot cure
   (:data:`UNRESOLVABLE_REASONS`: node selector, affinity rules, host name, taints,
   labels, node conditions, volume zone/node/binding conflicts). A node that was never
   refused (the decision did not reach it) is a candidate.
3. **Victims per node** (``selectVictimsOnNode``): take every pod of lower priority off
   the node; if the pod still does not fit (both passes of :mod:`.fitting`, nominated
   pods included), the node is out. Otherwise put them back one at a time, most
   important first (higher priority, then earlier ``status.startTime``; a pod not
   started yet counts as starting now), those whose PodDisruptionBudget would be
   violated before the others, keeping each one whose return still lets the pod fit;
   the others are the victims. A victim *violates* a budget when a budget of its
   namespace selects it (a nil or empty selector selects nothing) and allows no
   disruption (``status.disruptionsAllowed <= 0``). The candidates are evaluated in
   chunks of nodes through :func:`~.parallel.parallelize_until`, as the filter is.
4. **Extenders** may narrow or veto the candidates (``processPreemptionWithExtenders``):
   the ``process`` hook (:data:`PreemptionHook`) receives the node -> victims map and
   returns the one to choose from.
5. **The node** (``pickOneNodeForPreemption``): a node needing no victim at once; else
   the fewest PDB violations; then the lowest priority of its most important victim;
   then the lowest sum of victim priorities, each offset by MaxInt32 + 1 (so fewer
   victims weigh less even with negative priorities); then the fewest victims; then the
   latest start among the most important victims (the earliest start of those of the
   highest priority); then the first in NodeTree order.
6. The lower-priority pods nominated to that node lose their nomination (they may no
   longer fit there); a pod for which no node might help loses its own.

Victims are listed most important first (priority, then start time), which is how
upstream's tests check them; v1.17 listed PDB-violating victims before the others, a
difference only for a node with victims of both kinds, whose "most important victim"
is then its most important one, as rule 2 says.

With ``PolicySettings.fast``, a policy that checks resources skips at step 3 the nodes
whose allocatable is below the pod's own request (or that take no pod): no eviction can
make the pod fit there, and trying would cost a trial per node.

**No copy of the cluster.** Victims are taken off the :class:`~.cluster.ClusterState`
itself inside a :meth:`~.cluster.ClusterState.trial` per node, undone exactly before the
next node (and so before the evaluation yields to the event loop between chunks):
every predicate, those reading cluster-wide indexes (inter-pod affinity of the victims,
topology spreading) included, sees the cluster without the victims through a fresh
``CycleState`` per check. The caller holds the cluster still (``cache.snapshot()``);
nothing is changed when :func:`preempt` returns: acting on the answer is the caller's.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ..objects import PREEMPT_NEVER, Pod, PodDisruptionBudget
from ..volumenames import VOLUME_BIND_CONFLICT, VOLUME_NODE_CONFLICT, VOLUME_ZONE_CONFLICT
from .cluster import ClusterState, Trial
from .compiler import CompiledPolicy
from .extenders import CompiledExtender, ExtenderClient, Victims, narrow_victims
from .fitting import fits_on_node, nominated_for
from .functions import is_unresolvable
from .nodeinfo import NodeInfo
from .parallel import parallelize_until
from .pipeline import PreFilterReplay
from .predicates.general import (
    ERR_NODE_NETWORK_UNAVAILABLE,
    ERR_NODE_NOT_READY,
    ERR_NODE_SELECTOR_NOT_MATCH,
    ERR_NODE_UNDER_DISK_PRESSURE,
    ERR_NODE_UNDER_MEMORY_PRESSURE,
    ERR_NODE_UNDER_PID_PRESSURE,
    ERR_NODE_UNSCHEDULABLE,
    ERR_POD_NOT_MATCH_HOST_NAME,
)
from .predicates.interpod import POD_AFFINITY_RULES_NOT_MATCH
from .predicates.labels import ERR_NODE_LABEL_PRESENCE_VIOLATED
from .predicates.taints import ERR_TAINTS_TOLERATIONS_NOT_MATCH

#: ``predicates.ErrNodeUnknownCondition``: no legacy predicate here says it any more,
#: but a reason an extender or an older scheduler reports is read the same way.
ERR_NODE_UNKNOWN_CONDITION: Final = "node(s) had unknown conditions"

#: The failures no eviction can cure (v1.17's ``unresolvablePredicateFailureErrors``).
#: Pod *anti*-affinity (``node(s) didn't match pod affinity/anti-affinity`` alone, or
#: with the anti-affinity rule reasons) stays resolvable: the pods it objects to may be
#: the victims.
UNRESOLVABLE_REASONS: Final = frozenset(
    {
        ERR_NODE_SELECTOR_NOT_MATCH,
        POD_AFFINITY_RULES_NOT_MATCH,
        ERR_POD_NOT_MATCH_HOST_NAME,
        ERR_TAINTS_TOLERATIONS_NOT_MATCH,
        ERR_NODE_LABEL_PRESENCE_VIOLATED,
        ERR_NODE_NOT_READY,
        ERR_NODE_NETWORK_UNAVAILABLE,
        ERR_NODE_UNDER_DISK_PRESSURE,
        ERR_NODE_UNDER_PID_PRESSURE,
        ERR_NODE_UNDER_MEMORY_PRESSURE,
        ERR_NODE_UNSCHEDULABLE,
        ERR_NODE_UNKNOWN_CONDITION,
        VOLUME_ZONE_CONFLICT,
        VOLUME_NODE_CONFLICT,
        VOLUME_BIND_CONFLICT,
    }
)

#: MaxInt32 + 1: added to every victim priority in rule 3 so that all are >= 0.
_PRIORITY_OFFSET: Final = 2**31

NOT_ELIGIBLE_NEVER: Final = "its preemptionPolicy is Never"
NO_NODE_HELPS: Final = "removing pods would not help on any node"
NO_VICTIMS_FIT: Final = "no node has lower-priority pods whose removal would make it fit"
VETOED: Final = "the extenders left no node to preempt on"


#: The extenders' say (``processPreemptionWithExtenders``): given the pod and the
#: candidate node -> victims map, the map to choose from (narrowed, or emptied to veto).
PreemptionHook = Callable[[Pod, dict[str, Victims]], Awaitable[Mapping[str, Victims]]]


def extender_hook(
    client: ExtenderClient | None,
    extenders: Sequence[CompiledExtender],
    cluster: ClusterState,
    ignored: Callable[[str], None] | None = None,
) -> PreemptionHook | None:
    """The hook through which a policy's extenders with a ``preemptVerb`` narrow or veto
    a preemption's candidates; None when it has none (or no client reaches them).

    An extender error that is not ignorable propagates as :class:`ExtenderError`: there
    is no preemption at this attempt (upstream gave up too); ``ignored`` hears the rest.
    """
    if client is None or not any(extender.preempt_verb for extender in extenders):
        return None

    async def hook(pod: Pod, candidates: dict[str, Victims]) -> Mapping[str, Victims]:
        kept, skipped = await narrow_victims(client, extenders, pod, candidates, cluster)
        for problem in skipped:
            if ignored is not None:
                ignored(problem)
        return kept

    return hook


@dataclass(frozen=True, slots=True)
class Preemption:
    """What preemption found for a pod that fits nowhere.

    ``node`` is where to nominate the pod and ``victims`` whom to evict there (possibly
    none: a node that needs no eviction any more); None with ``reason`` saying why no
    node was found. ``clear`` are pods whose nomination must be removed (lower-priority
    pods nominated to ``node``; or the pod itself when no node might help).
    ``candidates`` are all nodes where preemption would work, with their victims.
    ``marks_victims``: the framework's preemption (v1.26+: DefaultPreemption, or a
    PostFilter plugin's answer): each victim's status gets the ``DisruptionTarget``
    condition before it is deleted, and a preemptor waits only for victims so marked.
    The legacy preemption (this module) marks nobody, as v1.17 did.
    """

    node: str | None
    victims: tuple[Pod, ...] = ()
    clear: tuple[Pod, ...] = ()
    candidates: Mapping[str, Victims] = field(default_factory=dict)
    reason: str = ""
    marks_victims: bool = False


def importance(pod: Pod) -> tuple[int, float]:
    """Sort key, most important first (``util.MoreImportantPod``): higher priority, then
    the earlier start; a pod without ``status.startTime`` counts as starting now."""
    start = pod.start_time
    return (-pod.priority, math.inf if start is None else start)


def eligible(pod: Pod, cluster: ClusterState) -> str | None:
    """``podEligibleToPreemptOthers``: None when the pod may preempt, else why not."""
    if pod.preemption_policy == PREEMPT_NEVER:
        return NOT_ELIGIBLE_NEVER
    nominated = cluster.nomination_of(pod.uid) or pod.nominated_node_name
    info = cluster.nodes.get(nominated) if nominated else None
    if info is not None:
        for other in info.pods.values():
            if other.deleting and other.priority < pod.priority:
                return (
                    f'it is nominated to node "{nominated}", where pods of lower priority '
                    "are still terminating"
                )
    return None


def nodes_where_preemption_might_help(
    nodes: Iterable[NodeInfo], failed: Mapping[str, Sequence[str]]
) -> list[NodeInfo]:
    """The nodes none of whose failure reasons is :data:`UNRESOLVABLE_REASONS`."""
    return [
        info
        for info in nodes
        if not any(
            reason in UNRESOLVABLE_REASONS or is_unresolvable(reason)
            for reason in failed.get(info.name, ())
        )
    ]


def pdb_violation_split(
    pods: Iterable[Pod], pdbs: Iterable[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation``: (violating, others), each in the order given."""
    budgets = list(pdbs)
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in pods:
        # A pod without labels matches no budget.
        violated = bool(pod.labels) and any(
            pdb.disruptions_allowed <= 0 and pdb.selects(pod) for pdb in budgets
        )
        (violating if violated else others).append(pod)
    return violating, others


def reprieve(
    pod: Pod,
    info: NodeInfo,
    cluster: ClusterState,
    policy: CompiledPolicy,
    trial: Trial,
    violating: Sequence[Pod],
    others: Sequence[Pod],
    nominated: Mapping[str, Sequence[Pod]],
    replay: PreFilterReplay | None = None,
) -> tuple[list[Pod], int]:
    """The reprieve loop both preemptions share (v1.13-v1.17's and v1.30's): with every
    lower-priority pod off the node (``trial``), each is put back in turn, the budget
    violators first, and stays if the pod still fits; the others are the victims.
    Returns them in reprieve order and how many violate a budget."""
    victims: list[Pod] = []

    def evicted(other: Pod) -> bool:
        trial.add(other)
        reasons = fits_on_node(
            pod, info, cluster, policy, check_all=False, nominated=nominated, replay=replay
        )
        if not reasons:
            return False  # the pod still fits with it back: reprieved
        trial.remove(other.uid)
        victims.append(other)
        return True

    violations = sum(1 for other in violating if evicted(other))
    for other in others:
        evicted(other)
    return victims, violations


def select_victims_on_node(
    pod: Pod,
    info: NodeInfo,
    cluster: ClusterState,
    policy: CompiledPolicy,
    pdbs: Sequence[PodDisruptionBudget],
    nominated: Mapping[str, Sequence[Pod]],
) -> Victims | None:
    """``selectVictimsOnNode``: the fewest pods to evict, or None when evicting every
    lower-priority pod would not be enough. The cluster is as it was afterwards."""
    priority = pod.priority
    with cluster.trial(info.name) as trial:
        lower = [other for other in info.pods.values() if other.priority < priority]
        for other in lower:
            trial.remove(other.uid)
        if fits_on_node(pod, info, cluster, policy, check_all=False, nominated=nominated):
            return None
        lower.sort(key=importance)
        violating, others = pdb_violation_split(lower, pdbs)
        victims, violations = reprieve(
            pod, info, cluster, policy, trial, violating, others, nominated
        )
    victims.sort(key=importance)
    return Victims(tuple(victims), violations)


def too_small(pod: Pod, info: NodeInfo) -> bool:
    """The node's allocatable is below the pod's own cpu, memory or ephemeral storage
    request, or takes no pod: PodFitsResources refuses the pod there even with no other
    pod on the node (requests are never negative)."""
    request = pod.request
    allocatable = info.allocatable
    return (
        allocatable.milli_cpu < request.milli_cpu
        or allocatable.memory < request.memory
        or allocatable.ephemeral_storage < request.ephemeral_storage
        or allocatable.allowed_pods < 1
    )


async def select_nodes_for_preemption(
    pod: Pod,
    cluster: ClusterState,
    policy: CompiledPolicy,
    nodes: Sequence[NodeInfo],
    *,
    chunk_size: int = 64,
    workers: int = 16,
) -> dict[str, Victims]:
    """``selectNodesForPreemption``: node -> victims where evicting them lets the pod fit,
    in the order of ``nodes``; evaluated in chunks that yield to the event loop."""
    budgets = [pdb for pdb in cluster.pdbs.values() if pdb.selector is not None]
    nominated = nominated_for(pod, cluster)
    found: dict[str, Victims] = {}
    if policy.settings.fast and policy.checks_resources:
        # A node too small for the pod alone is no candidate, whatever is evicted: no
        # trial for it (a pod bigger than any node would otherwise try every node).
        nodes = [info for info in nodes if not too_small(pod, info)]

    def work(lo: int, hi: int) -> bool:
        for info in nodes[lo:hi]:
            victims = select_victims_on_node(pod, info, cluster, policy, budgets, nominated)
            if victims is not None:
                found[info.name] = victims
        return True

    await parallelize_until(len(nodes), work, chunk_size=chunk_size, workers=workers)
    return found


def _earliest_start_of_most_important(victims: Victims) -> float:
    """``GetEarliestPodStartTime``: the earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims.pods)
    return min(importance(p)[1] for p in victims.pods if p.priority == top)


def pick_one_node_for_preemption(candidates: Mapping[str, Victims]) -> str | None:
    """``pickOneNodeForPreemption`` over ``candidates`` in their order (module docstring)."""
    if not candidates:
        return None
    for name, victims in candidates.items():
        if not victims.pods:
            return name
    names = list(candidates)

    def narrow(pool: list[str], key: Callable[[Victims], float]) -> list[str]:
        values = [key(candidates[name]) for name in pool]
        best = min(values)
        return [name for name, value in zip(pool, values, strict=True) if value == best]

    for key in (
        lambda v: v.num_pdb_violations,
        lambda v: max(p.priority for p in v.pods),
        lambda v: sum(p.priority + _PRIORITY_OFFSET for p in v.pods),
        lambda v: len(v.pods),
    ):
        names = narrow(names, key)
        if len(names) == 1:
            return names[0]
    # The latest "earliest start of the most important victims"; the first on a tie.
    latest = names[0]
    latest_start = _earliest_start_of_most_important(candidates[latest])
    for name in names[1:]:
        start = _earliest_start_of_most_important(candidates[name])
        if start > latest_start:
            latest, latest_start = name, start
    return latest


async def preempt(
    pod: Pod,
    cluster: ClusterState,
    policy: CompiledPolicy,
    failed: Mapping[str, Sequence[str]],
    *,
    process: PreemptionHook | None = None,
    chunk_size: int = 64,
    workers: int = 16,
) -> Preemption:
    """``Preempt`` for a pod that fits nowhere, ``failed`` being each refused node's reasons.

    Reads the cluster, changes nothing (see the module docstring).
    """
    why_not = eligible(pod, cluster)
    if why_not is not None:
        return Preemption(None, reason=f"the pod may not preempt: {why_not}")
    potential = nodes_where_preemption_might_help(cluster.ordered_nodes(), failed)
    if not potential:
        # Its nomination, if it has one, is pointless now.
        own = (pod,) if cluster.nomination_of(pod.uid) or pod.nominated_node_name else ()
        return Preemption(None, clear=own, reason=NO_NODE_HELPS)
    candidates = await select_nodes_for_preemption(
        pod, cluster, policy, potential, chunk_size=chunk_size, workers=workers
    )
    if process is not None and candidates:
        offered = candidates
        narrowed = await process(pod, dict(offered))
        # Keep NodeTree order whatever order the hook answers in ("the first" rule).
        candidates = {name: narrowed[name] for name in offered if name in narrowed}
        if not candidates:
            return Preemption(None, reason=VETOED)
    chosen = pick_one_node_for_preemption(candidates)
    if chosen is None:
        return Preemption(None, candidates=candidates, reason=NO_VICTIMS_FIT)
    lower = tuple(
        other
        for other in cluster.nominated.get(chosen, {}).values()
        if other.priority < pod.priority and other.uid != pod.uid
    )
    return Preemption(
        chosen, victims=candidates[chosen].pods, clear=lower, candidates=candidates, reason=""
    )
