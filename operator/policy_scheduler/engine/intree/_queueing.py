"""The in-tree plugins' queueing hints, as kube-scheduler v1.34's (QueueingHints GA).

Each plugin's ``events_to_register()`` (at the end of its class) names the cluster
events (:mod:`..events`) that may undo its rejection, with these hint functions; each
answers QUEUE when the change may let the pod pass the plugin, QUEUE_SKIP when it
cannot. Old is None on an addition, new is None on a deletion.
"""

from __future__ import annotations

from typing import Any

from ...objects import Node, Pod, Resources, tolerations_tolerate
from ...selectors import NodeSelectorTerm, terms_match
from ..events import (
    ASSIGNED_POD,
    NODE,
    QUEUE,
    QUEUE_SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHintFn,
)
from ..predicates.general import UNSCHEDULABLE_TAINT, matches_node_selector_and_affinity


def on(
    resource: str, action: ActionType, hint: QueueingHintFn | None = None
) -> ClusterEventWithHint:
    """A registration (shorthand)."""
    return ClusterEventWithHint(ClusterEvent(resource, action), hint)


def _verdict(helps: bool) -> str:
    return QUEUE if helps else QUEUE_SKIP


def node_affinity_hint(added: tuple[NodeSelectorTerm, ...] | None) -> QueueingHintFn:
    """NodeAffinity's isSchedulableAfterNodeChange: the node matches the pod's
    nodeSelector, required affinity (and the plugin's addedAffinity) now, and did not
    before (a node that already matched was not what refused the pod)."""

    def matches(pod: Pod, node: Node) -> bool:
        if added is not None and not terms_match(added, node.labels, node.name):
            return False
        return matches_node_selector_and_affinity(pod, node)

    def hint(pod: Pod, old: Any, new: Any) -> str:
        if not isinstance(new, Node) or not matches(pod, new):
            return QUEUE_SKIP
        return _verdict(not isinstance(old, Node) or not matches(pod, old))

    return hint


def _fits_empty(pod: Pod, allocatable: Resources) -> bool:
    """The pod's request fits the node's allocatable (nothing else counted)."""
    want = pod.node_request
    return (
        want.milli_cpu <= allocatable.milli_cpu
        and want.memory <= allocatable.memory
        and want.ephemeral_storage <= allocatable.ephemeral_storage
        and all(amount <= allocatable.scalar.get(name, 0) for name, amount in want.scalar.items())
    )


def _grew(pod: Pod, old: Resources, new: Resources) -> bool:
    """Allocatable grew in something the pod requests (or in pods)."""
    want = pod.node_request
    return (
        new.allowed_pods > old.allowed_pods
        or (want.milli_cpu > 0 and new.milli_cpu > old.milli_cpu)
        or (want.memory > 0 and new.memory > old.memory)
        or (want.ephemeral_storage > 0 and new.ephemeral_storage > old.ephemeral_storage)
        or any(new.scalar.get(n, 0) > old.scalar.get(n, 0) for n in want.scalar)
    )


def fit_node_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeResourcesFit's isSchedulableAfterNodeChange: a node added that could hold the
    pod, or one whose allocatable grew in what the pod requests and can hold it now."""
    if not isinstance(new, Node) or not _fits_empty(pod, new.allocatable):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, Node) or _grew(pod, old.allocatable, new.allocatable))


def fit_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeResourcesFit's isSchedulableAfterPodEvent: an assigned pod deleted (its room
    is free), or scaled down in something the pod requests."""
    if not isinstance(old, Pod) or not old.node_name:
        return QUEUE_SKIP
    if new is None:
        return QUEUE
    if not isinstance(new, Pod):
        return QUEUE
    return _verdict(_grew(pod, new.node_request, old.node_request))


def taint_hint(pod: Pod, old: Any, new: Any) -> str:
    """TaintToleration's isSchedulableAfterNodeChange: the pod tolerates the node's
    NoSchedule/NoExecute taints now, and did not before."""

    def tolerated(node: Node) -> bool:
        return all(
            tolerations_tolerate(pod.tolerations, taint)
            for taint in node.taints
            if taint.effect in ("NoSchedule", "NoExecute")
        )

    if not isinstance(new, Node) or not tolerated(new):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, Node) or not tolerated(old))


def unschedulable_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeUnschedulable's isSchedulableAfterNodeChange: the node takes pods now
    (``spec.unschedulable`` off, or tolerated), and did not before."""

    def open_to(node: Node) -> bool:
        return not node.unschedulable or tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT)

    if not isinstance(new, Node) or not open_to(new):
        return QUEUE_SKIP
    return _verdict(not isinstance(old, Node) or not open_to(old))


def node_name_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodeName's isSchedulableAfterNodeAdd: the node the pod names was added."""
    return _verdict(isinstance(new, Node) and new.name == pod.node_name)


def ports_pod_hint(pod: Pod, old: Any, new: Any) -> str:
    """NodePorts' isSchedulableAfterPodDeleted: an assigned pod that held one of the
    pod's host ports was deleted."""
    if not isinstance(old, Pod) or not old.node_name:
        return QUEUE_SKIP
    wanted = {(p.protocol, p.port) for p in pod.host_ports}
    return _verdict(any((p.protocol, p.port) in wanted for p in old.host_ports))


__all__ = [
    "ASSIGNED_POD",
    "NODE",
    "fit_node_hint",
    "fit_pod_hint",
    "node_affinity_hint",
    "node_name_hint",
    "on",
    "ports_pod_hint",
    "taint_hint",
    "unschedulable_hint",
]
