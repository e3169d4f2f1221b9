"""Taint predicates: a node's taints keep off the pods that do not tolerate them.

kube-scheduler's legacy PodToleratesNodeTaints and PodToleratesNodeNoExecuteTaints
(v1.13-v1.17): every taint whose effect the predicate cares about must be tolerated by
at least one of the pod's tolerations (``v1.Toleration.ToleratesTaint``: an empty
toleration effect matches every effect, an empty key with ``Exists`` matches every key,
``Equal`` compares values). PodToleratesNodeTaints cares about ``NoSchedule`` and
``NoExecute``; ``PreferNoSchedule`` is only a priority's business
(TaintTolerationPriority). PodToleratesNodeNoExecuteTaints cares about ``NoExecute``
only. Either fails with one reason, however many taints are not tolerated.

Both read only the pod and its node: they are hinted ``node_local`` for the fast path's
equivalence cache, and screened to the nodes that have taints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ... import names
from ...objects import Node, Pod, tolerations_tolerate
from ..functions import FITS, CycleState, Reasons, hint, predicate
from ..nodeinfo import NodeInfo

ERR_TAINTS_TOLERATIONS_NOT_MATCH: Final = "node(s) had taints that the pod didn't tolerate"

NO_SCHEDULE: Final = "NoSchedule"
NO_EXECUTE: Final = "NoExecute"

#: The effects that keep a pod off a node (also PodTopologySpread's nodeTaintsPolicy filter).
SCHEDULING_EFFECTS: Final = frozenset({NO_SCHEDULE, NO_EXECUTE})
_EXECUTION_EFFECTS: Final = frozenset({NO_EXECUTE})


def tolerates_taints(pod: Pod, node: Node, effects: frozenset[str] = SCHEDULING_EFFECTS) -> bool:
    """Every taint of ``node`` with one of ``effects`` is tolerated by the pod."""
    tolerations = pod.tolerations
    for taint in node.taints:
        if taint.effect in effects and not tolerations_tolerate(tolerations, taint):
            return False
    return True


def _tolerates(pod: Pod, node: NodeInfo, effects: frozenset[str]) -> Reasons:
    if tolerates_taints(pod, node.node, effects):
        return FITS
    return (ERR_TAINTS_TOLERATIONS_NOT_MATCH,)


@predicate(names.POD_TOLERATES_NODE_TAINTS)
def pod_tolerates_node_taints(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    return _tolerates(pod, node, SCHEDULING_EFFECTS)


@predicate(names.POD_TOLERATES_NODE_NO_EXECUTE_TAINTS)
def pod_tolerates_node_no_execute_taints(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    return _tolerates(pod, node, _EXECUTION_EFFECTS)


def _tainted(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    # Tainted nodes are flagged: the flag answers for most nodes in one look.
    return [k for k, info in enumerate(nodes) if info.flagged and info.node.taints]


hint(pod_tolerates_node_taints, node_local=True, screen=_tainted)
hint(pod_tolerates_node_no_execute_taints, node_local=True, screen=_tainted)
