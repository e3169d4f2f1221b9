"""Does a pod fit on one node? The plain predicate run, and the two passes of nominated pods.

kube-scheduler's ``podFitsOnNode`` (v1.13-v1.17) runs a node's predicates up to twice
when pods are *nominated* to that node (a preemption set room aside for them, and they
are waiting for their victims to leave):

1. with the nominated pods of **equal or higher** priority than the pod (the pod itself
   excepted) added to the node, as if they were running: the pod must yield to them,
   it may not take the room freed for them;
2. if that passed, once more **without** them: they may end up elsewhere, and some
   predicates (inter-pod affinity) may only pass because of them.

The pod fits only if both passes pass; the reasons are those of the first pass that
failed. Lower-priority nominated pods are ignored: the pod may take their room. With no
such nominated pod on the node, the second pass alone runs, which is the ordinary check.

The first pass puts the nominated pods on the node for real, inside a
:meth:`~.cluster.ClusterState.trial` undone right after, and runs the predicates with a
fresh :class:`~.functions.CycleState`, so that what predicates compute once per pod
from the whole cluster (inter-pod affinity, topology spreading) sees them too. It never
uses the fast path's equivalence cache, whose results are for the node without them;
the second pass is the ordinary check and may (see ``algorithm.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..objects import Pod
from .cluster import ClusterState
from .compiler import CompiledPolicy, CompiledPredicate
from .functions import CycleState
from .nodeinfo import NodeInfo
from .pipeline import PreFilterReplay, run_filter


def run_predicates(
    pod: Pod,
    info: NodeInfo,
    cycle: CycleState,
    predicates: Iterable[CompiledPredicate],
    check_all: bool,
) -> list[str]:
    """The predicates in order on one node: [] fits, else the reasons
    (:func:`.pipeline.run_filter`, the Filter point's rule, on the records' functions)."""
    return run_filter(pod, info, cycle, [entry.fn for entry in predicates], check_all)


def nominated_for(pod: Pod, cluster: ClusterState) -> dict[str, list[Pod]]:
    """Node -> the nominated pods ``pod`` must yield to there (priority >= its own).

    Only nodes that have some; usually none at all, and then the filter runs as if
    nomination did not exist.
    """
    if not cluster.nominated:
        return {}
    out: dict[str, list[Pod]] = {}
    priority, uid = pod.priority, pod.uid
    for node, pods in cluster.nominated.items():
        chosen = [p for p in pods.values() if p.priority >= priority and p.uid != uid]
        if chosen:
            out[node] = chosen
    return out


def first_pass(
    pod: Pod,
    info: NodeInfo,
    cluster: ClusterState,
    policy: CompiledPolicy,
    nominated: Sequence[Pod],
    *,
    check_all: bool,
) -> list[str]:
    """The predicates on ``info`` with ``nominated`` running there too (then undone)."""
    with cluster.trial(info.name) as trial:
        for other in nominated:
            trial.add(other)
        return run_filter(pod, info, policy.new_cycle(pod, cluster), policy.filter_fns, check_all)


def fits_on_node(
    pod: Pod,
    info: NodeInfo,
    cluster: ClusterState,
    policy: CompiledPolicy,
    *,
    check_all: bool,
    nominated: Mapping[str, Sequence[Pod]] | None = None,
    replay: PreFilterReplay | None = None,
) -> list[str]:
    """``podFitsOnNode``: both passes on one node as the cluster is now, plain path.

    ``nominated`` is :func:`nominated_for` computed once by a caller checking many
    nodes (None: computed here). Each pass gets a fresh CycleState: callers change the
    cluster between calls (preemption takes victims off). ``replay``: PreFilter as
    recorded before those changes, for the pass on the cluster's own pods (the
    nominated pods' pass adds pods it did not see, and runs PreFilter whole).
    """
    found = nominated_for(pod, cluster) if nominated is None else nominated
    others = found.get(info.name)
    if others:
        reasons = first_pass(pod, info, cluster, policy, others, check_all=check_all)
        if reasons:
            return reasons
    cycle = policy.new_cycle(pod, cluster, replay)
    return run_filter(pod, info, cycle, policy.filter_fns, check_all)
