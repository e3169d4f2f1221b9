"""NodeUnschedulable, as kube-scheduler v1.30 has it (Filter only).

A cordoned node (``spec.unschedulable``) is refused, UnschedulableAndUnresolvable, with
``node(s) were unschedulable``, unless the pod tolerates the taint a cordon stands for,
``node.kubernetes.io/unschedulable:NoSchedule``. Node conditions are not its business
(the node lifecycle controller taints unhealthy nodes; TaintToleration sees those).

Fast path: node-local; a cordoned node is ``NodeInfo.flagged``, so the screen keeps only
the flagged nodes.
"""

from __future__ import annotations

from typing import Any, Final

from ...objects import Pod, tolerations_tolerate
from ..events import ActionType, ClusterEventWithHint
from ..functions import FITS, CycleState, Predicate, Reasons, Unresolvable, hint
from ..interface import FilterPlugin, Handle, NodeInfoView, Status
from ..nodeinfo import NodeInfo
from ..predicates.general import UNSCHEDULABLE_TAINT, flagged_nodes
from ._queueing import NODE, on, unschedulable_hint
from .helper import engine_node, status_of

NAME: Final = "NodeUnschedulable"

ERR_REASON_UNSCHEDULABLE: Final = Unresolvable("node(s) were unschedulable")
#: Declared by v1.30 beside the other, returned by none of its code paths.
ERR_REASON_UNKNOWN_CONDITION: Final = "node(s) had unknown conditions"


def node_unschedulable_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if node.node.unschedulable and not tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
        return (ERR_REASON_UNSCHEDULABLE,)
    return FITS


hint(node_unschedulable_filter, node_local=True, screen=flagged_nodes)


class NodeUnschedulable(FilterPlugin):
    """Cordoned nodes take only the pods that tolerate the cordon."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def predicate(self) -> Predicate:
        return node_unschedulable_filter

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return status_of(node_unschedulable_filter(pod, engine_node(state, node), state))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34: a node added or its ``spec.unschedulable`` changed, now open to the pod."""
        return [on(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, unschedulable_hint)]
