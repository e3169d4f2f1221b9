"""DynamicResources: kube-scheduler v1.34's DRA plugin, structured parameters
(PreEnqueue, PreFilter, Filter, PostFilter, Reserve, Unreserve, PreBind).

**The pod's claims.** Each entry of ``spec.resourceClaims`` names a ResourceClaim: its
``resourceClaimName``, or for a ``resourceClaimTemplateName`` the claim the controller
made for the pod, which ``status.resourceClaimStatuses`` names (listed without a name:
no claim was needed, the entry is skipped). The claim must exist in the pod's namespace
and not be being deleted; a claim made from a template must be the pod's (its
controller is the pod). Otherwise the pod is not scheduled, in upstream's words:
``pod "NS/NAME": ResourceClaim not created yet``, ``resourceclaim.resource.k8s.io
"NAME" not found``, ``resourceclaim "NAME" is being deleted``, ``ResourceClaim NS/NAME
was not created for pod NS/POD (pod is not owner)``. PreEnqueue keeps such a pod out of
the active queue until that changes; PreFilter refuses it (UnschedulableAndUnresolvable,
as every refusal of this plugin is).

**PreFilter.** Skip for a pod without claims. An allocated claim (by the API, or by this
scheduler and still in flight) that is reserved for 256 pods and not this one:
``resourceclaim in use``; an allocated claim restricts the pod to its allocation's nodes.
(Upstream makes a pod whose claim is in flight for another pod wait, ``resource claim
NS/NAME is in the process of being allocated``; here the allocation in flight counts as
made, which ``simulate``, where nothing is ever written, needs.) For a claim to allocate,
every request's device class must exist: ``request REQ: device class CLASS does not
exist``. The claims to allocate get an allocator over every ResourceSlice
and the devices in use (allocated claims' and those in flight), once per cycle.

**Filter.** Per node: the allocator must give every claim to allocate its devices there
(``cannot allocate all claims``), and every allocated claim must be available there
(``resourceclaim not available on the node``). What the allocator cannot do on any node
(a selector that does not compile or fails, "all" devices of an incomplete pool) is an
Error for the attempt. The node's allocation is kept for Reserve. A node's search is
bounded by DynamicResourcesArgs' ``filterTimeout`` (default 10s, 0: none;
DRASchedulerFilterTimeout, beta and on in v1.34): past it the node is refused
UnschedulableAndUnresolvable, ``timed out trying to allocate devices``.

**PostFilter.** Unschedulable, in v1.34's words: ``no new claims to deallocate`` for a
pod without claims, ``still not schedulable`` for one with claims; with DefaultPreemption
after it (v1.34's default profile) every FailedScheduling message so reads ``... no new
claims to deallocate, preemption: 0/N nodes are available: ...``. When an allocated
claim of the pod kept it off some node ("resourceclaim not available on the node") and
no other pod reserves it (its ``reservedFor`` empty, or only this pod), PostFilter clears
its allocation and reservation (one claim per attempt), so that the next attempt
allocates it afresh where the pod fits: ``deallocation of ResourceClaim completed``. The
write goes through the scheduler's ports: the operator updates the claim's status (a
failure is PostFilter's Error), ``simulate`` drops the allocation from its cluster.

**Preemption.** v1.34's DynamicResources has no PreFilterExtensions (AddPod/RemovePod):
when DefaultPreemption removes victims from a node in its what-if, the devices their
claims hold stay in use, as PreFilter saw them. A pod that finds no device anywhere is
refused UnschedulableAndUnresolvable, so preemption skips every node ("Preemption is not
helpful for scheduling"): no pod is evicted to free a device. (Upstream's later
DRAPreemption work adds the RemovePod accounting; v1.34 has none, nor has this plugin.)

**Reserve / Unreserve / PreBind.** Reserve takes the chosen node's devices: in flight in
the scheduler's cache, so that no other pod is given them; Unreserve gives them back.
PreBind writes each claim's ``status.allocation`` (those it allocated) and adds the pod to
``status.reservedFor`` (through the scheduler's ports: offline, ``simulate``, the
assumption stands).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ... import pluginargs
from ...devices import (
    RESERVED_FOR_MAX_SIZE,
    Allocation,
    DeviceResult,
    ResourceClaim,
)
from ...objects import Pod
from ...selectors import NodeSelectorTerm, node_selector_term
from ..cluster import ClusterState
from ..functions import CycleState
from ..handles import ports_of
from ..interface import (
    FilterPlugin,
    Handle,
    NodeInfoView,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    Status,
)
from ._allocator import AllocationError, AllocationTimeout, Allocator

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME

CANNOT_ALLOCATE: Final = "cannot allocate all claims"
NOT_AVAILABLE: Final = "resourceclaim not available on the node"
IN_USE: Final = "resourceclaim in use"
TIMED_OUT: Final = "timed out trying to allocate devices"
#: DynamicResourcesArgs' default ``filterTimeout`` (v1.34), in seconds.
DEFAULT_FILTER_TIMEOUT: Final = 10.0
#: PostFilter's answers (v1.34): a pod without claims; a pod with claims.
NO_CLAIMS_TO_DEALLOCATE: Final = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE: Final = "still not schedulable"
#: ... and one that cleared the allocation of a claim that kept the pod off a node.
DEALLOCATED: Final = "deallocation of ResourceClaim completed"


class ClaimProblem(Exception):
    """Why the pod's claims cannot be used now (upstream's message)."""


def pod_claims(pod: Pod, cluster: ClusterState) -> list[ResourceClaim]:
    """The ResourceClaims the pod names, in order; raises :class:`ClaimProblem`."""
    claims: list[ResourceClaim] = []
    for entry in pod.resource_claims:
        name = entry.claim_name
        if entry.template and not entry.listed:
            raise ClaimProblem(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
        if not name:
            continue  # listed without a claim: none was needed
        claim = cluster.resource_claims.get(f"{pod.namespace}/{name}")
        if claim is None:
            raise ClaimProblem(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.deleting:
            raise ClaimProblem(f'resourceclaim "{name}" is being deleted')
        if entry.template and claim.controller_uid != pod.uid:
            raise ClaimProblem(
                f"ResourceClaim {claim.key} was not created for pod {pod.key} (pod is not owner)"
            )
        claims.append(claim)
    return claims


@dataclass(slots=True)
class ClaimsState:
    """What PreFilter found, read by Filter, Reserve, Unreserve and PreBind."""

    claims: list[ResourceClaim]
    #: Per claim: the nodes its allocation restricts the pod to (None: no restriction).
    available_on: list[tuple[NodeSelectorTerm, ...] | None]
    #: The claims this scheduler allocates, and the allocator for them.
    to_allocate: list[ResourceClaim] = field(default_factory=list)
    allocator: Allocator | None = None
    #: Filter's allocations per node (one tuple of results per claim to allocate).
    per_node: dict[str, list[tuple[DeviceResult, ...]]] = field(default_factory=dict)
    #: Reserve's choice: claim key -> allocation.
    reserved: dict[str, Allocation] = field(default_factory=dict)
    #: The claims PreBind reserved for the pod (Unreserve takes the pod out again).
    written: list[ResourceClaim] = field(default_factory=list)


def _claim_to_deallocate(
    found: ClaimsState, pod: Pod, cluster: ClusterState, statuses: Mapping[str, Status]
) -> ResourceClaim | None:
    """PostFilter's pick: the first of the pod's allocated claims that some node refused
    the pod for (``resourceclaim not available on the node``: the allocation's nodes do
    not include it) and that no other pod reserves. Upstream picks one at random among
    them; any is valid, this one is stable. An allocation still in flight (this
    scheduler's, not written yet) is another pod's: never taken back here."""
    refused = [
        cluster.nodes[name].node
        for name, status in statuses.items()
        if NOT_AVAILABLE in status.reasons and name in cluster.nodes
    ]
    if not refused:
        return None
    for claim, terms in zip(found.claims, found.available_on, strict=True):
        if terms is None or claim.allocation is None:
            continue  # not allocated, or allocated by us and in flight
        if claim.reserved_for and claim.reserved_for != (pod.uid,):
            continue
        for node in refused:
            if not any(t.matches(node.labels, node.name) for t in terms):
                return claim
    return None


def _state(state: CycleState) -> ClaimsState | None:
    try:
        found: ClaimsState = state.read(STATE_KEY)
    except KeyError:
        return None
    return found


def _node_name_selector(node_name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def allocation_on(
    results: Sequence[DeviceResult], cluster: ClusterState, node_name: str
) -> Allocation:
    """The allocation of ``results`` chosen for ``node_name``, with the nodes its devices
    are reachable from: that node when one of their slices is node-local, else a slice's
    node selector, else every node (upstream's createNodeSelector, simplified: one
    slice's selector, not their intersection)."""
    raw: dict[str, Any] | None = None
    for result in results:
        for s in cluster.resource_slices.values():
            if s.driver != result.driver or s.pool != result.pool:
                continue
            if not any(d.name == result.device for d in s.devices):
                continue
            if s.node_name:
                raw = _node_name_selector(node_name)
                return _allocation(results, raw)
            if s.node_selector_raw is not None and raw is None:
                raw = dict(s.node_selector_raw)
    return _allocation(results, raw)


def _allocation(results: Sequence[DeviceResult], raw: dict[str, Any] | None) -> Allocation:
    if raw is None:
        return Allocation(tuple(results), None)
    terms = tuple(
        node_selector_term(term, f"nodeSelector.nodeSelectorTerms[{i}]")
        for i, term in enumerate(raw.get("nodeSelectorTerms") or ())
    )
    return Allocation(tuple(results), terms, raw)


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    PreBindPlugin,
):
    """Devices for the pod's ResourceClaims on the node (module docstring)."""

    name = NAME
    #: v1.34's DynamicResourcesArgs: ``filterTimeout`` bounds a node's device search.
    Args = pluginargs.DynamicResourcesArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        written = getattr(args, "filterTimeout", None)
        seconds = pluginargs.parse_duration(written) if isinstance(written, str) else None
        #: Seconds a node's search may take (0: no limit); checked by Args already.
        self.filter_timeout = (
            seconds if seconds is not None and seconds >= 0 else DEFAULT_FILTER_TIMEOUT
        )

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.resource_claims:
            return None
        try:
            pod_claims(pod, self.handle.snapshot().cluster)
        except ClaimProblem as exc:
            return Status.unresolvable(str(exc))
        return None

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        if not pod.resource_claims:
            return Status.skip()
        cluster = state.cluster
        try:
            claims = pod_claims(pod, cluster)
        except ClaimProblem as exc:
            return Status.unresolvable(str(exc))
        if not claims:
            return Status.skip()
        found = ClaimsState(claims, [None] * len(claims))
        for index, claim in enumerate(claims):
            allocation = cluster.allocation_of(claim)
            if allocation is not None:
                if (
                    len(claim.reserved_for) >= RESERVED_FOR_MAX_SIZE
                    and pod.uid not in claim.reserved_for
                ):
                    return Status.unresolvable(IN_USE)
                found.available_on[index] = allocation.node_selector
                continue
            found.to_allocate.append(claim)
            for request in claim.spec.requests:
                options = (
                    [(request.name, request.exactly)]
                    if request.exactly is not None
                    else [(f"{request.name}/{sub.name}", sub) for sub in request.first_available]
                )
                for name, sub in options:
                    if sub.device_class not in cluster.device_classes:
                        return Status.unresolvable(
                            f"request {name}: device class {sub.device_class} does not exist"
                        )
        if found.to_allocate:
            found.allocator = Allocator(
                cluster.device_classes,
                None,
                cluster.devices_in_use(),
                local=cluster.node_slices,
                shared=cluster.shared_slices,
            )
        state.write(STATE_KEY, found)
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        found = _state(state)
        if found is None:
            return None
        labels = node.node.labels
        if found.allocator is not None:
            try:
                results = found.allocator.allocate(
                    node.name, labels, found.to_allocate, timeout=self.filter_timeout
                )
            except AllocationTimeout:
                return Status.unresolvable(TIMED_OUT)
            except AllocationError as exc:
                return Status.error(str(exc))
            if results is None:
                return Status.unresolvable(CANNOT_ALLOCATE)
            found.per_node[node.name] = results
        for terms in found.available_on:
            if terms is not None and not any(t.matches(labels, node.name) for t in terms):
                return Status.unresolvable(NOT_AVAILABLE)
        return None

    async def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> PostFilterResult | Status | None:
        # v1.34's words, which every FailedScheduling of a profile running this plugin
        # carries before DefaultPreemption's ("no new claims to deallocate, preemption:
        # ..."), and its one write: an allocated claim that kept the pod off a node and
        # that no other pod reserves loses its allocation (module docstring).
        found = _state(state)
        if found is None or not found.claims:
            return Status.unschedulable(NO_CLAIMS_TO_DEALLOCATE)
        claim = _claim_to_deallocate(found, pod, state.cluster, statuses)
        if claim is not None:
            problem = await ports_of(self.handle).deallocate_claim(pod, claim)
            if problem is not None:
                return problem
            return Status.unschedulable(DEALLOCATED)
        return Status.unschedulable(STILL_NOT_SCHEDULABLE)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        found = _state(state)
        if found is None or not found.to_allocate:
            return None
        results = found.per_node.get(node_name)
        if results is None:
            return Status.error("claim allocation not found for node")
        cluster = state.cluster
        found.reserved = {
            claim.key: allocation_on(devices, cluster, node_name)
            for claim, devices in zip(found.to_allocate, results, strict=True)
        }
        ports_of(self.handle).assume_allocations(found.reserved)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        found = _state(state)
        if found is None:
            return
        ports = ports_of(self.handle)
        if found.reserved:
            ports.forget_allocations(list(found.reserved))
            found.reserved = {}
        if found.written:
            ports.release_claims(pod, found.written)
            found.written = []

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        found = _state(state)
        if found is None:
            return None
        writes = [
            (claim, found.reserved.get(claim.key))
            for claim in found.claims
            if pod.uid not in claim.reserved_for
        ]
        if not writes:
            return None
        status = await ports_of(self.handle).bind_claims(state, pod, writes)
        # Even a failure may have reserved some of them: Unreserve releases them all.
        found.written = [claim for claim, _ in writes]
        return status

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): ResourceClaim, ResourceSlice and DeviceClass added or
        changed, nodes added or relabelled (``_queueing``)."""
        from ._queueing import dynamic_resources_events

        return list(dynamic_resources_events())


def claimed_devices(state: CycleState) -> dict[str, dict[str, list[str]]]:
    """The devices the pod's claims have on the chosen node (Reserve's, or the API's
    for a claim allocated before): claim name -> request -> ``driver/pool/device``, as
    ``simulate -o json`` shows them; empty for a pod without claims."""
    found = _state(state)
    if found is None:
        return {}
    shown: dict[str, dict[str, list[str]]] = {}
    for claim in found.claims:
        allocation = found.reserved.get(claim.key) or claim.allocation
        if allocation is None:
            continue
        per_request = shown.setdefault(claim.name, {})
        for result in allocation.results:
            per_request.setdefault(result.request, []).append("/".join(result.device_id))
    return shown
