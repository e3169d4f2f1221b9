"""NodeName, as kube-scheduler v1.30 has it (Filter only).

A pod that names a node (``spec.nodeName``) fits only that node: every other node is
refused, UnschedulableAndUnresolvable, with ``node(s) didn't match the requested node
name`` (the legacy HostName predicate said "hostname"). A pod naming none fits every
node.

Fast path: node-local; it cannot fail for a pod without ``spec.nodeName`` (the plan
drops it), and its screen names the other nodes without calling it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ...objects import Pod
from ..events import ActionType, ClusterEventWithHint
from ..functions import FITS, CycleState, Predicate, Reasons, Unresolvable, hint
from ..interface import FilterPlugin, Handle, NodeInfoView, Status
from ..nodeinfo import NodeInfo
from ._queueing import NODE, node_name_hint, on
from .helper import engine_node, status_of

NAME: Final = "NodeName"

ERR_REASON: Final = Unresolvable("node(s) didn't match the requested node name")


def node_name_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if pod.node_name and pod.node_name != node.name:
        return (ERR_REASON,)
    return FITS


def _other_nodes(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    wanted = pod.node_name
    if not wanted:
        return []
    return [k for k, info in enumerate(nodes) if info.name != wanted]


hint(
    node_name_filter,
    node_local=True,
    never_fails=lambda pod: not pod.node_name,
    screen=_other_nodes,
)


class NodeName(FilterPlugin):
    """The node the pod names, if it names one."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def predicate(self) -> Predicate:
        return node_name_filter

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return status_of(node_name_filter(pod, engine_node(state, node), state))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34: the node the pod names was added."""
        return [on(NODE, ActionType.ADD, node_name_hint)]
