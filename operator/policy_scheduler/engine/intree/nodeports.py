"""NodePorts, as kube-scheduler v1.30 has it (PreFilter, Filter).

PreFilter: Skip (no Filter this cycle) for a pod whose containers ask for no host port.
Filter: a node where one of the pod's host ports is taken is refused, Unschedulable
(evicting the pod holding it would free it): ``node(s) didn't have free ports for the
requested pod ports``. A port is (hostIP, protocol, hostPort), hostIP defaulting to
0.0.0.0 and protocol to TCP; 0.0.0.0 clashes with any address on the same protocol and
port (``HostPortInfo.CheckConflict``). Only containers' ports count, not init
containers'.

Fast path: node-local; it cannot fail for a pod without host ports (the plan drops it),
and its screen keeps only the nodes with ports in use. The conflict check is the
engine's (``NodeInfo.ports_conflict``, shared with the legacy PodFitsHostPorts, whose
rule v1.30 kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ...objects import Pod
from ..events import ActionType, ClusterEventWithHint
from ..functions import FITS, CycleState, Predicate, Reasons, hint
from ..interface import FilterPlugin, Handle, NodeInfoView, PreFilterPlugin, PreFilterResult, Status
from ..nodeinfo import NodeInfo
from ._queueing import ASSIGNED_POD, NODE, on, ports_pod_hint
from .helper import engine_node, status_of

NAME: Final = "NodePorts"

ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"


def node_ports_filter(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if pod.host_ports and node.ports_conflict(pod.host_ports):
        return (ERR_REASON,)
    return FITS


def _ports_in_use(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    if not pod.host_ports:
        return []
    return [k for k, info in enumerate(nodes) if info.used_ports]


hint(
    node_ports_filter,
    node_local=True,
    never_fails=lambda pod: not pod.host_ports,
    screen=_ports_in_use,
)


class NodePorts(PreFilterPlugin, FilterPlugin):
    """The pod's host ports free on the node."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def predicate(self) -> Predicate:
        return node_ports_filter

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        return None if pod.host_ports else Status.skip()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return status_of(node_ports_filter(pod, engine_node(state, node), state))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """v1.34: an assigned pod holding a wanted host port deleted; a node added."""
        return [
            on(ASSIGNED_POD, ActionType.DELETE, ports_pod_hint),
            on(NODE, ActionType.ADD),
        ]
