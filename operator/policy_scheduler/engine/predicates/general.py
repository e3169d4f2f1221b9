"""The basic predicates: node health, cordons, host name, host ports, node selector, resources.

Each predicate is kube-scheduler's legacy function of the same name (v1.13-v1.16
``pkg/scheduler/algorithm/predicates``), returning its failure reasons in upstream's
words; each reason string is a module constant beside the predicate that emits it.

* **CheckNodeCondition** walks the node's conditions in the order the node reports them:
  ``Ready`` other than ``True``, ``OutOfDisk`` other than ``False`` and
  ``NetworkUnavailable`` other than ``False`` each add a reason; a node without a
  ``Ready`` condition at all is *not* rejected. As in v1.13-v1.16 it also rejects a
  cordoned node (``spec.unschedulable``), whatever the pod tolerates.
* **CheckNodeUnschedulable** rejects a cordoned node unless the pod tolerates the
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint.
* **HostName**, **PodFitsHostPorts** (alias PodFitsPorts, resolved by the compiler) and
  **MatchNodeSelector** (``nodeSelector`` AND the required node affinity terms, ORed).
* **PodFitsResources** checks the pod count first, stops there when the pod requests
  nothing, then cpu, memory, ephemeral-storage and the scalar resources by name (with
  ``settings.fast`` and no scalar resource, on ``NodeInfo``'s free amounts).
* **GeneralPredicates** runs PodFitsResources, HostName, PodFitsHostPorts and
  MatchNodeSelector, all of them, and concatenates their reasons in that order.
* **CheckNodeMemoryPressure** (BestEffort pods only), **CheckNodeDiskPressure** and
  **CheckNodePIDPressure** reject nodes whose pressure condition is ``True``.

What depends only on the pod (the scalar resources to check, with their reason strings)
is computed once per scheduling attempt through ``cycle.memo``.

Fast path hints (:func:`~..functions.hint`): every predicate here reads only the pod and
its one node, so all are ``node_local`` (the algorithm may serve them from its
equivalence cache); HostName cannot fail without ``spec.nodeName``, PodFitsHostPorts
without host ports, MatchNodeSelector without a nodeSelector or required node affinity,
CheckNodeMemoryPressure for a pod that is not BestEffort. With ``settings.fast``,
GeneralPredicates calls only the parts that can fail for the pod. Each has a screen:
the node health predicates can only refuse a ``NodeInfo.flagged`` node; the resource
checks are made inline over a chunk of nodes, and the predicate is called only where
one of them fails (it then gives its reasons in its order); a node selector is matched
once per distinct set of label values it reads.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

from ... import names
from ...objects import Node, Pod, Taint, is_extended_resource, tolerations_tolerate
from ...selectors import terms_match
from ..functions import FITS, CycleState, Reasons, every_position, hint, predicate
from ..nodeinfo import NodeInfo

# -- CheckNodeCondition / CheckNodeUnschedulable -----------------------------------------

ERR_NODE_NOT_READY: Final = "node(s) were not ready"
ERR_NODE_OUT_OF_DISK: Final = "node(s) were out of disk space"
ERR_NODE_NETWORK_UNAVAILABLE: Final = "node(s) had unavailable network"
ERR_NODE_UNSCHEDULABLE: Final = "node(s) were unschedulable"

NODE_READY: Final = "Ready"
NODE_OUT_OF_DISK: Final = "OutOfDisk"
NODE_NETWORK_UNAVAILABLE: Final = "NetworkUnavailable"
CONDITION_TRUE: Final = "True"
CONDITION_FALSE: Final = "False"

#: The taint a cordon stands for; tolerating it lets a pod onto a cordoned node.
UNSCHEDULABLE_TAINT: Final = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


@predicate(names.CHECK_NODE_CONDITION)
def check_node_condition(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    reasons: list[str] = []
    info = node.node
    # Conditions are kept in the order the node reports them, which is the order
    # upstream appends its reasons in.
    for ctype, status in info.conditions.items():
        if ctype == NODE_READY:
            if status != CONDITION_TRUE:
                reasons.append(ERR_NODE_NOT_READY)
        elif ctype == NODE_OUT_OF_DISK:
            if status != CONDITION_FALSE:
                reasons.append(ERR_NODE_OUT_OF_DISK)
        elif ctype == NODE_NETWORK_UNAVAILABLE and status != CONDITION_FALSE:
            reasons.append(ERR_NODE_NETWORK_UNAVAILABLE)
    # v1.13-v1.16 still rejected cordoned nodes here, tolerations notwithstanding; only
    # CheckNodeUnschedulable looks at the unschedulable taint.
    if info.unschedulable:
        reasons.append(ERR_NODE_UNSCHEDULABLE)
    return tuple(reasons)


@predicate(names.CHECK_NODE_UNSCHEDULABLE)
def check_node_unschedulable(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if node.node.unschedulable and not tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
        return (ERR_NODE_UNSCHEDULABLE,)
    return FITS


# -- HostName ---------------------------------------------------------------------------

ERR_POD_NOT_MATCH_HOST_NAME: Final = "node(s) didn't match the requested hostname"


@predicate(names.HOST_NAME)
def host_name(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if pod.node_name and pod.node_name != node.name:
        return (ERR_POD_NOT_MATCH_HOST_NAME,)
    return FITS


# -- PodFitsHostPorts -------------------------------------------------------------------

ERR_POD_NOT_FITS_HOST_PORTS: Final = "node(s) didn't have free ports for the requested pod ports"


@predicate(names.POD_FITS_HOST_PORTS)
def pod_fits_host_ports(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if pod.host_ports and node.ports_conflict(pod.host_ports):
        return (ERR_POD_NOT_FITS_HOST_PORTS,)
    return FITS


# -- MatchNodeSelector ------------------------------------------------------------------

ERR_NODE_SELECTOR_NOT_MATCH: Final = "node(s) didn't match node selector"


def matches_node_selector_and_affinity(pod: Pod, node: Node) -> bool:
    """PodMatchesNodeSelectorAndAffinityTerms: nodeSelector AND required node affinity.

    No ``requiredDuringSchedulingIgnoredDuringExecution`` matches every node; one with no
    terms (or only empty terms) matches none; its terms are ORed.
    """
    if pod.has_node_selector and not pod.node_selector.matches(node.labels):
        return False
    terms = pod.required_node_terms
    return terms is None or terms_match(terms, node.labels, node.name)


@predicate(names.MATCH_NODE_SELECTOR)
def match_node_selector(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if matches_node_selector_and_affinity(pod, node.node):
        return FITS
    return (ERR_NODE_SELECTOR_NOT_MATCH,)


# -- PodFitsResources -------------------------------------------------------------------


def insufficient(resource: str) -> str:
    """InsufficientResourceError's reason: ``Insufficient <resource name>``."""
    return f"Insufficient {resource}"


ERR_INSUFFICIENT_PODS: Final = "Insufficient pods"
ERR_INSUFFICIENT_CPU: Final = "Insufficient cpu"
ERR_INSUFFICIENT_MEMORY: Final = "Insufficient memory"
ERR_INSUFFICIENT_EPHEMERAL_STORAGE: Final = "Insufficient ephemeral-storage"

_SCALARS_KEY: Final = "PodFitsResources/scalars"


def _checked_scalars(cycle: CycleState) -> tuple[tuple[str, int, str], ...]:
    """The pod's scalar requests to check, by name, with their reasons.

    Extended resources an extender manages with ``ignoredByScheduler`` are left to it;
    only extended ones can be ignored (hugepages, ``*.kubernetes.io/*`` are always
    checked). Go iterates a map here (random order); sorting by name makes the reasons
    stable.
    """
    ignored = cycle.settings.ignored_resources
    return tuple(
        (name, amount, insufficient(name))
        for name, amount in sorted(cycle.pod.request.scalar.items())
        if not (name in ignored and is_extended_resource(name))
    )


#: The reasons for each pattern of (pods, cpu, memory, ephemeral-storage) shortfalls.
_SHORTFALL_REASONS: Final = {
    pattern: tuple(
        reason
        for short, reason in zip(
            pattern,
            (
                ERR_INSUFFICIENT_PODS,
                ERR_INSUFFICIENT_CPU,
                ERR_INSUFFICIENT_MEMORY,
                ERR_INSUFFICIENT_EPHEMERAL_STORAGE,
            ),
            strict=True,
        )
        if short
    )
    for pattern in itertools.product((False, True), repeat=4)
}


@predicate(names.POD_FITS_RESOURCES)
def pod_fits_resources(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    request = pod.request
    if cycle.settings.fast and not request.scalar:
        # The same checks on the node's free amounts, the reasons by pattern (a pod too
        # big for every node is refused by every node of the cluster).
        if request.is_zero:
            return _SHORTFALL_REASONS[node.free_pods < 1, False, False, False]
        return _SHORTFALL_REASONS[
            node.free_pods < 1,
            node.free_cpu < request.milli_cpu,
            node.free_memory < request.memory,
            node.free_ephemeral < request.ephemeral_storage,
        ]
    reasons: list[str] = []
    allocatable = node.node.allocatable
    # The pod count is checked even for a pod that requests nothing.
    if len(node.pods) + 1 > allocatable.allowed_pods:
        reasons.append(ERR_INSUFFICIENT_PODS)
    # A scalar mentioned with amount 0 still counts as a request, as upstream's map
    # length does.
    if request.is_zero:
        return tuple(reasons)
    if allocatable.milli_cpu < request.milli_cpu + node.requested_cpu:
        reasons.append(ERR_INSUFFICIENT_CPU)
    if allocatable.memory < request.memory + node.requested_memory:
        reasons.append(ERR_INSUFFICIENT_MEMORY)
    if allocatable.ephemeral_storage < request.ephemeral_storage + node.requested_ephemeral:
        reasons.append(ERR_INSUFFICIENT_EPHEMERAL_STORAGE)
    if request.scalar:
        capacity = allocatable.scalar
        requested = node.requested_scalar
        for name, amount, reason in cycle.memo(_SCALARS_KEY, lambda: _checked_scalars(cycle)):
            if capacity.get(name, 0) < amount + requested.get(name, 0):
                reasons.append(reason)
    return tuple(reasons)


# -- GeneralPredicates ------------------------------------------------------------------


@predicate(names.GENERAL_PREDICATES)
def general_predicates(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    # Every part runs, even after a failure: GeneralPredicates reports all its reasons.
    if cycle.settings.fast and not (
        pod.node_name
        or pod.host_ports
        or pod.has_node_selector
        or pod.required_node_terms is not None
    ):
        # The other three parts cannot fail for this pod (see their hints).
        return pod_fits_resources(pod, node, cycle)
    return (
        *pod_fits_resources(pod, node, cycle),
        *host_name(pod, node, cycle),
        *pod_fits_host_ports(pod, node, cycle),
        *match_node_selector(pod, node, cycle),
    )


# -- node pressure ----------------------------------------------------------------------

ERR_NODE_UNDER_MEMORY_PRESSURE: Final = "node(s) had memory pressure"
ERR_NODE_UNDER_DISK_PRESSURE: Final = "node(s) had disk pressure"
ERR_NODE_UNDER_PID_PRESSURE: Final = "node(s) had pid pressure"

NODE_MEMORY_PRESSURE: Final = "MemoryPressure"
NODE_DISK_PRESSURE: Final = "DiskPressure"
NODE_PID_PRESSURE: Final = "PIDPressure"


@predicate(names.CHECK_NODE_MEMORY_PRESSURE)
def check_node_memory_pressure(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    # Only BestEffort pods are kept off a node under memory pressure: the kubelet evicts
    # them first, the others have requests it honours.
    if pod.best_effort and node.node.conditions.get(NODE_MEMORY_PRESSURE) == CONDITION_TRUE:
        return (ERR_NODE_UNDER_MEMORY_PRESSURE,)
    return FITS


@predicate(names.CHECK_NODE_DISK_PRESSURE)
def check_node_disk_pressure(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if node.node.conditions.get(NODE_DISK_PRESSURE) == CONDITION_TRUE:
        return (ERR_NODE_UNDER_DISK_PRESSURE,)
    return FITS


@predicate(names.CHECK_NODE_PID_PRESSURE)
def check_node_pid_pressure(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    if node.node.conditions.get(NODE_PID_PRESSURE) == CONDITION_TRUE:
        return (ERR_NODE_UNDER_PID_PRESSURE,)
    return FITS


# -- fast path hints --------------------------------------------------------------------


def flagged_nodes(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """The screen of the node health and taint predicates: the flagged nodes only."""
    return [k for k, info in enumerate(nodes) if info.flagged]


def resources_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """Where PodFitsResources may fail: its checks on the nodes' free amounts (scalars:
    everywhere)."""
    request = pod.request
    if request.scalar:
        return every_position(pod, nodes, cycle)
    if request.is_zero:
        return [k for k, info in enumerate(nodes) if info.free_pods < 1]
    cpu = request.milli_cpu
    memory = request.memory
    ephemeral = request.ephemeral_storage
    return [
        k
        for k, info in enumerate(nodes)
        if info.free_cpu < cpu
        or info.free_memory < memory
        or info.free_ephemeral < ephemeral
        or info.free_pods < 1
    ]


_SELECTOR_KEYS: Final = "MatchNodeSelector/keys"
_SELECTOR_VERDICTS: Final = "MatchNodeSelector/verdicts"


def _selector_keys(pod: Pod) -> tuple[str, ...] | None:
    """The label keys the pod's nodeSelector and required node affinity read; None when
    a term reads the node's name too (matchFields)."""
    keys = [req.key for req in pod.node_selector.requirements]
    for term in pod.required_node_terms or ():
        if not term.fields.empty:
            return None
        keys.extend(req.key for req in term.labels.requirements)
    return tuple(dict.fromkeys(keys))


def _selector_misses(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """Positions of the nodes the pod's nodeSelector / required node affinity refuse.

    The answer depends only on the values of the keys the selectors read (absent is
    None): it is computed once per distinct tuple of them in an attempt.
    """
    keys = cycle.memo(_SELECTOR_KEYS, lambda: _selector_keys(pod))
    out: list[int] = []
    if keys is None:
        for k, info in enumerate(nodes):
            if not matches_node_selector_and_affinity(pod, info.node):
                out.append(k)
        return out
    verdicts: dict[tuple[str | None, ...], bool] = cycle.memo(_SELECTOR_VERDICTS, dict)
    for k, info in enumerate(nodes):
        labels = info.node.labels
        values = tuple([labels.get(key) for key in keys])
        fits = verdicts.get(values)
        if fits is None:
            fits = verdicts[values] = matches_node_selector_and_affinity(pod, info.node)
        if not fits:
            out.append(k)
    return out


def host_name_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    wanted = pod.node_name
    if not wanted:
        return []
    return [k for k, info in enumerate(nodes) if info.name != wanted]


def host_ports_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    if not pod.host_ports:
        return []
    return [k for k, info in enumerate(nodes) if info.used_ports]


def node_selector_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    if _no_selector(pod):
        return []
    return _selector_misses(pod, nodes, cycle)


def general_screen(pod: Pod, nodes: Sequence[NodeInfo], cycle: CycleState) -> list[int]:
    """Where one of GeneralPredicates' four parts may fail."""
    suspects = resources_screen(pod, nodes, cycle)
    if not (pod.node_name or pod.host_ports or not _no_selector(pod)):
        return suspects
    merged = set(suspects)
    merged.update(host_name_screen(pod, nodes, cycle))
    merged.update(host_ports_screen(pod, nodes, cycle))
    merged.update(node_selector_screen(pod, nodes, cycle))
    return sorted(merged)


def _no_selector(pod: Pod) -> bool:
    return not pod.has_node_selector and pod.required_node_terms is None


hint(check_node_condition, node_local=True, screen=flagged_nodes)
hint(check_node_unschedulable, node_local=True, screen=flagged_nodes)
hint(
    host_name,
    node_local=True,
    never_fails=lambda pod: not pod.node_name,
    screen=host_name_screen,
)
hint(
    pod_fits_host_ports,
    node_local=True,
    never_fails=lambda pod: not pod.host_ports,
    screen=host_ports_screen,
)
hint(match_node_selector, node_local=True, never_fails=_no_selector, screen=node_selector_screen)
hint(pod_fits_resources, node_local=True, screen=resources_screen)
hint(general_predicates, node_local=True, screen=general_screen)
hint(
    check_node_memory_pressure,
    node_local=True,
    never_fails=lambda pod: not pod.best_effort,
    screen=flagged_nodes,
)
hint(check_node_disk_pressure, node_local=True, screen=flagged_nodes)
hint(check_node_pid_pressure, node_local=True, screen=flagged_nodes)
