"""VolumeBinding, kube-scheduler v1.30's volume binder plugin.

PreFilter, Filter, Reserve/Unreserve, PreBind (and PreScore/Score behind the
VolumeCapacityPriority gate), as upstream's ``volumebinding`` plugin and its
``SchedulerVolumeBinder``:

* **PreFilter** (``podHasPVCs`` then ``GetPodVolumeClaims``) looks at the pod's
  ``persistentVolumeClaim`` and generic ``ephemeral`` volumes (claim
  ``<pod>-<volume>``, which the pod must control). Skip without any. Otherwise, in
  volume order, UnschedulableAndUnresolvable with upstream's words: ``persistentvolumeclaim
  "c" not found``; ``waiting for ephemeral volume controller to create the
  persistentvolumeclaim "pod-v"``; ``persistentvolumeclaim "c" bound to non-existent
  persistentvolume "pv"`` (phase Lost); ``persistentvolumeclaim "c" is being deleted``;
  ``PVC ns/c was not created for pod ns/pod (pod is not owner)``. Then the claims are
  split: fully bound (``spec.volumeName`` and the ``pv.kubernetes.io/bind-completed``
  annotation), unbound of a WaitForFirstConsumer class (to bind), and the rest, which
  should have been bound before scheduling: ``pod has unbound immediate
  PersistentVolumeClaims``, Unresolvable. The candidate PVs of each class to bind are
  those of the class (``GetPersistentVolumeClass``: the beta annotation first).
* **Filter** (``FindPodVolumes``) on one node: each bound claim's PV must exist (else
  ``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)``) and its
  node affinity must match the node (else ``node(s) had volume node affinity
  conflict``), a PV of a migrated in-tree plugin being first translated to its CSI
  driver when the node's CSINode says the plugin is migrated there (:mod:`._migration`).
  A claim to bind that already has a ``volume.kubernetes.io/selected-node`` for another
  node fails at once; the others get the smallest available PV of their class that
  fits on the node (claims by ascending request, one PV per claim: the legacy
  matching, :func:`~..predicates.volumes.find_matching_volume`), and those without one
  must be provisioned: the class must have a provisioner (not
  ``kubernetes.io/no-provisioner``) whose ``allowedTopologies`` admit the node (else
  ``node(s) didn't find available persistent volumes to bind``), and, when the class's
  CSIDriver publishes storage capacity (``spec.storageCapacity``), a
  CSIStorageCapacity of the class reaching the node must hold the claim (else ``node(s)
  did not have enough free storage``). Every reason is UnschedulableAndUnresolvable; a
  claim to provision without a class or with an unknown class is upstream's Error.
* **Reserve** works out the bindings on the chosen node (the Filter's answer for it,
  computed again on the same snapshot) and, unless the pod's claims are all bound
  already, has them *assumed*: matched PVs show their claimRef, claims to provision
  their selected node, so the next pod cannot take them (AssumePodVolumes).
  **Unreserve** gives them back; **PreBind** writes them to the API and waits for the
  PV controller (BindPodVolumes). The assuming and the writing are the legacy volume
  binder's, unchanged: the plugin reaches them through the handle's ports
  (``engine/handles.py``: the cache's ``assume_volumes`` / ``forget_volumes``, the
  runtime's ``VolumeBinder``), waiting the policy's ``bindTimeoutSeconds`` when its
  ``pluginConfig`` gives one, else ``--volume-binding-timeout``; offline (``simulate``)
  the assumption stands for the binding.
* **Score** only with the VolumeCapacityPriority feature gate (alpha, off in v1.30):
  per class of the PVs matched on the node, the utilisation ``requested * 100 /
  capacity`` through the ``shape`` (scores 0..10 scaled to 0..100), averaged over the
  classes; 0 on nodes without a matched PV. Off, PreScore Skips and the priority is 0
  on every node.

Versus the legacy CheckVolumeBinding (engine/predicates/volumes.py, v1.17): generic
ephemeral volumes; PreFilter's Unresolvable statuses in v1.30's words (missing, lost,
deleting claims) instead of errors on every node; a bound claim's missing PV is a reason
of its own; PVs of a class are found by the beta annotation too; migrated PVs'
topology; the storage capacity check; every reason Unresolvable.

Fast path: a pod without claims is Skipped (``never_fails``); PVs and claims are not
versioned by a node's generation, so nothing is cached per node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from ... import pluginargs
from ...objects import PersistentVolume, PersistentVolumeClaim, Pod
from ...selectors import NodeSelectorTerm, terms_match
from ...volumenames import (
    NO_PROVISIONER,
    PVC,
    UNBOUND_IMMEDIATE_CLAIMS,
    VOLUME_BIND_CONFLICT,
    VOLUME_NODE_CONFLICT,
)
from ..cluster import ClusterState
from ..functions import FITS, CycleState, Predicate, Priority, Reasons, Unresolvable, hint, mapped
from ..handles import ports_of
from ..interface import (
    FilterPlugin,
    Handle,
    NodeInfoView,
    NodeScore,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from ..nodeinfo import NodeInfo
from ..predicates.volumes import (
    PodVolumes,
    delay_binding,
    fully_bound,
    match_volumes,
    split_by_selected_node,
)
from ._migration import MIGRATION_ON, PLUGIN_OF_KIND, translated_affinity
from ._volumes import (
    EPHEMERAL,
    FilterError,
    claim_not_found,
    ephemeral_claim_name,
    go_quote,
    has_claims,
    node_info,
    not_owned,
    run_filter,
    unresolvable,
)

NAME: Final = "VolumeBinding"

ERR_REASON_BIND_CONFLICT: Final = VOLUME_BIND_CONFLICT
ERR_REASON_NODE_CONFLICT: Final = VOLUME_NODE_CONFLICT
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
ERR_REASON_UNBOUND_IMMEDIATE: Final = UNBOUND_IMMEDIATE_CLAIMS
CLAIM_LOST: Final = "Lost"

#: The cycle state key Reserve writes (upstream's ``stateKey``).
STATE_KEY: Final = NAME
_MEMO: Final = "intree.VolumeBinding"
#: MaxNodeScore / MaxCustomPriorityScore: a shape's 0..10 scores are scaled to 0..100.
_SHAPE_SCALE: Final = 10
DEFAULT_SHAPE: Final = ((0, 0), (100, 10))


# -- PreFilter -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    """PreFilter's result: why the pod cannot be placed, or its claims split for Filter."""

    error: str | None = None
    skip: bool = False
    bound: tuple[PersistentVolumeClaim, ...] = ()
    #: Unbound claims of WaitForFirstConsumer classes, in volume order.
    to_bind: tuple[PersistentVolumeClaim, ...] = ()
    #: The PVs of each class to bind (the PV cache's class index).
    candidates: Mapping[str, tuple[PersistentVolume, ...]] = field(default_factory=dict)


def pod_volume_claims(pod: Pod, cluster: ClusterState) -> PodVolumeClaims:
    """``podHasPVCs`` and ``GetPodVolumeClaims`` (see the module docstring)."""
    claims: list[PersistentVolumeClaim] = []
    for volume in pod.volumes:
        if volume.kind == PVC:
            name, ephemeral = volume.handle, False
        elif volume.kind == EPHEMERAL:
            name, ephemeral = ephemeral_claim_name(pod, volume), True
        else:
            continue
        pvc = cluster.claims.get(f"{pod.namespace}/{name}")
        if pvc is None:
            if ephemeral:
                return PodVolumeClaims(
                    "waiting for ephemeral volume controller to create the "
                    f"persistentvolumeclaim {go_quote(name)}"
                )
            return PodVolumeClaims(claim_not_found(name))
        if pvc.phase == CLAIM_LOST:
            return PodVolumeClaims(
                f"persistentvolumeclaim {go_quote(pvc.name)} bound to non-existent "
                f"persistentvolume {go_quote(pvc.volume_name)}"
            )
        if pvc.deleting:
            return PodVolumeClaims(f"persistentvolumeclaim {go_quote(pvc.name)} is being deleted")
        if ephemeral:
            problem = not_owned(pvc, pod)
            if problem is not None:
                return PodVolumeClaims(problem)
        claims.append(pvc)
    if not claims:
        return PodVolumeClaims(skip=True)
    bound: list[PersistentVolumeClaim] = []
    to_bind: list[PersistentVolumeClaim] = []
    for pvc in claims:
        if fully_bound(pvc):
            bound.append(pvc)
        elif delay_binding(pvc, cluster) and not pvc.volume_name:
            to_bind.append(pvc)
        else:
            return PodVolumeClaims(ERR_REASON_UNBOUND_IMMEDIATE)
    candidates: dict[str, tuple[PersistentVolume, ...]] = {}
    for pvc in to_bind:
        wanted = pvc.class_name
        if wanted not in candidates:
            pvs = cluster.persistent_volumes.values()
            candidates[wanted] = tuple(pv for pv in pvs if pv.class_name == wanted)
    return PodVolumeClaims(None, False, tuple(bound), tuple(to_bind), candidates)


def _claims(pod: Pod, cycle: CycleState) -> PodVolumeClaims:
    return cycle.memo(_MEMO, lambda: pod_volume_claims(pod, cycle.cluster))


# -- Filter --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FoundVolumes:
    """``FindPodVolumes`` on one node: why not, or the bindings that make it."""

    reasons: Reasons
    matched: tuple[tuple[PersistentVolumeClaim, PersistentVolume], ...] = ()
    provisioned: tuple[PersistentVolumeClaim, ...] = ()


def _affinity_of(
    pv: PersistentVolume, node: NodeInfo, cluster: ClusterState
) -> tuple[NodeSelectorTerm, ...] | None:
    """``tryTranslatePVToCSI``'s node affinity: translated when the node's CSINode
    lists the PV's in-tree plugin as migrated."""
    plugin = PLUGIN_OF_KIND.get(pv.source.kind)
    if plugin is None or plugin not in MIGRATION_ON:
        return pv.node_affinity
    csi_node = cluster.csi_nodes.get(node.name)
    if csi_node is None or plugin not in csi_node.migrated_plugins:
        return pv.node_affinity
    return translated_affinity(pv)


def _check_bound_claims(
    claims: Sequence[PersistentVolumeClaim], node: NodeInfo, cluster: ClusterState
) -> tuple[bool, bool]:
    """``checkBoundClaims``: (node affinity satisfied, every PV found)."""
    for pvc in claims:
        pv = cluster.persistent_volumes.get(pvc.volume_name)
        if pv is None:
            return True, False
        affinity = _affinity_of(pv, node, cluster)
        if affinity is not None and not terms_match(affinity, node.node.labels, ""):
            return False, True
    return True, True


def has_enough_capacity(
    pvc: PersistentVolumeClaim,
    class_name: str,
    provisioner: str,
    node: NodeInfo,
    cluster: ClusterState,
) -> bool:
    """``hasEnoughCapacity``: only a CSIDriver with ``storageCapacity`` asks, and then a
    CSIStorageCapacity of the class that reaches the node must hold the request."""
    if pvc.request <= 0:
        return True  # no storage request: nothing to check
    driver = cluster.csi_drivers.get(provisioner)
    if driver is None or not driver.storage_capacity:
        return True
    labels = node.node.labels
    for capacity in cluster.storage_capacities.values():
        if capacity.storage_class != class_name:
            continue
        limit = (
            capacity.maximum_volume_size
            if capacity.maximum_volume_size is not None
            else capacity.capacity
        )
        if limit is None or limit < pvc.request:
            continue
        if capacity.node_topology is not None and capacity.node_topology.matches(labels):
            return True
    return False


def _check_provisions(
    claims: Sequence[PersistentVolumeClaim], node: NodeInfo, cluster: ClusterState
) -> tuple[bool, bool, tuple[PersistentVolumeClaim, ...]]:
    """``checkVolumeProvisions``: (provisioning possible, storage sufficient, claims)."""
    for pvc in claims:
        class_name = pvc.class_name
        if not class_name:
            raise FilterError(f"no class for claim {go_quote(pvc.key)}")
        sc = cluster.storage_classes.get(class_name)
        if sc is None:
            raise FilterError(f"failed to find storage class {go_quote(class_name)}")
        if not sc.provisioner or sc.provisioner == NO_PROVISIONER:
            return False, True, ()
        topologies = sc.allowed_topologies
        if topologies and not terms_match(topologies, node.node.labels, ""):
            return False, True, ()
        if not has_enough_capacity(pvc, class_name, sc.provisioner, node, cluster):
            return True, False, ()
    return True, True, tuple(claims)


def find_pod_volumes(
    claims: PodVolumeClaims, node: NodeInfo, cluster: ClusterState
) -> FoundVolumes:
    """``FindPodVolumes`` on one node (raises FilterError for upstream's Errors)."""
    bound_ok, pvs_found = True, True
    if claims.bound:
        bound_ok, pvs_found = _check_bound_claims(claims.bound, node, cluster)
    unbound_ok, enough_space = True, True
    matched: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
    provisioned: tuple[PersistentVolumeClaim, ...] = ()
    if claims.to_bind:
        split = split_by_selected_node(claims.to_bind, node.name)
        if split is None:
            unbound_ok = False  # provisioning already started for another node
        else:
            to_match, to_provision = split
            to_match.sort(key=lambda c: c.request)
            matched, unmatched = match_volumes(to_match, claims.candidates, node.node.labels)
            unbound_ok = not unmatched
            to_provision.extend(unmatched)
            if to_provision:
                unbound_ok, enough_space, provisioned = _check_provisions(
                    to_provision, node, cluster
                )
    reasons: list[str] = []
    if not bound_ok:
        reasons.append(Unresolvable(ERR_REASON_NODE_CONFLICT))
    if not unbound_ok:
        reasons.append(Unresolvable(ERR_REASON_BIND_CONFLICT))
    if not enough_space:
        reasons.append(Unresolvable(ERR_REASON_NOT_ENOUGH_SPACE))
    if not pvs_found:
        reasons.append(Unresolvable(ERR_REASON_PV_NOT_EXIST))
    if reasons:
        return FoundVolumes(tuple(reasons))
    return FoundVolumes(FITS, tuple(matched), provisioned)


def check(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """PreFilter's verdict (on every node, as the framework reports it) then Filter;
    raises FilterError for upstream's Error statuses."""
    claims = _claims(pod, cycle)
    if claims.error is not None:
        return unresolvable(claims.error)
    if claims.skip:
        return FITS
    return find_pod_volumes(claims, node, cycle.cluster).reasons


def predicate(pod: Pod, node: NodeInfo, cycle: CycleState) -> Reasons:
    """The engine predicate: upstream's Error statuses as Unresolvable reasons."""
    try:
        return check(pod, node, cycle)
    except FilterError as exc:
        return unresolvable(str(exc))


hint(predicate, never_fails=lambda pod: not has_claims(pod))


def pod_volumes_on(pod: Pod, node: NodeInfo, cycle: CycleState) -> PodVolumes | None:
    """What binding the pod's claims on ``node`` takes (Filter's answer for that node);
    None for a pod without claims, or when the node does not satisfy them."""
    claims = _claims(pod, cycle)
    if claims.error is not None or claims.skip:
        return None
    try:
        found = find_pod_volumes(claims, node, cycle.cluster)
    except FilterError:
        return None
    if found.reasons:
        return None
    cluster = cycle.cluster
    bound = tuple(
        (pvc, cluster.persistent_volumes[pvc.volume_name])
        for pvc in claims.bound
        if pvc.volume_name in cluster.persistent_volumes
    )
    return PodVolumes(node.name, bound, found.matched, found.provisioned)


# -- Score (VolumeCapacityPriority) ----------------------------------------------------------

Shape = Sequence[tuple[int, int]]


def broken_linear(shape: Shape, utilization: int) -> int:
    """``helper.BuildBrokenLinearFunction``, the shape's scores already scaled."""
    for i, (point, score) in enumerate(shape):
        if utilization <= point:
            if i == 0:
                return score
            prev_point, prev_score = shape[i - 1]
            delta = (score - prev_score) * (utilization - prev_point)
            # Go's integer division truncates toward zero.
            span = point - prev_point
            quotient = abs(delta) // span
            return prev_score + (quotient if delta >= 0 else -quotient)
    return shape[-1][1]


def capacity_score(shape: Shape, volumes: PodVolumes | None) -> int:
    """``buildScorerFunction``: per class of the matched PVs, ``requested * 100 /
    capacity`` through the shape (100 when over-full or without capacity); averaged."""
    if volumes is None or not volumes.matched:
        return 0
    per_class: dict[str, list[int]] = {}
    for pvc, pv in volumes.matched:
        sums = per_class.setdefault(pv.storage_class, [0, 0])
        sums[0] += pvc.request
        sums[1] += pv.capacity
    total = 0
    for requested, capacity in per_class.values():
        if capacity == 0 or requested > capacity:
            total += broken_linear(shape, 100)
        else:
            total += broken_linear(shape, requested * 100 // capacity)
    return math.floor(total / len(per_class) + 0.5)  # math.Round: half away from zero


def scaled_shape(shape: Sequence[tuple[int, int]] | None) -> Shape:
    """The args' shape points (utilization, score 0..10) as the scorer uses them."""
    points = shape or DEFAULT_SHAPE
    return tuple((utilization, score * _SHAPE_SCALE) for utilization, score in points)


# -- the binder the framework offers -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BindingState:
    """What Reserve decided, for Unreserve and PreBind (upstream's ``stateData``)."""

    volumes: PodVolumes | None
    all_bound: bool


def pod_volumes(state: CycleState) -> PodVolumes | None:
    """The bindings Reserve chose for the pod's node; None when there is nothing to
    bind (or Reserve did not run)."""
    try:
        found: BindingState = state.read(STATE_KEY)
    except KeyError:
        return None
    return None if found.all_bound else found.volumes


# -- the plugin ----------------------------------------------------------------------------


def _shape_of(args: Any) -> Sequence[tuple[int, int]] | None:
    """The args' ``shape`` as (utilization, score) pairs, whatever model carries them."""
    points = getattr(args, "shape", None)
    if not points:
        return None
    out = []
    for point in points:
        if isinstance(point, Mapping):
            out.append((int(point["utilization"]), int(point["score"])))
        else:
            out.append((int(point.utilization), int(point.score)))
    return tuple(out)


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin
):
    """kube-scheduler's VolumeBinding: PreFilter, Filter, PreScore, Score, Reserve,
    PreBind (module docstring)."""

    name = NAME
    Args = pluginargs.VolumeBindingArgs
    #: The VolumeCapacityPriority feature gate (alpha in v1.30, off by default).
    volume_capacity_priority: ClassVar[bool] = pluginargs.VOLUME_CAPACITY_PRIORITY_DEFAULT
    #: PreBind's deadline: ``bindTimeoutSeconds``' default (the binder enforces the
    #: args' own value, :attr:`bind_timeout_seconds`).
    timeout_seconds: ClassVar[float] = 600.0

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        timeout = getattr(args, "bindTimeoutSeconds", None)
        self.bind_timeout_seconds = float(timeout if timeout is not None else 600)
        #: The policy's own bindTimeoutSeconds, when its pluginConfig gives one: its
        #: pods' volumes are waited for that long (else ``--volume-binding-timeout``).
        given = "bindTimeoutSeconds" in getattr(args, "model_fields_set", ())
        self.policy_bind_timeout: float | None = self.bind_timeout_seconds if given else None
        self.shape = scaled_shape(_shape_of(args)) if self.volume_capacity_priority else None

    # -- engine shapes

    def predicate(self) -> Predicate:
        return predicate

    def priority(self) -> Priority:
        shape = self.shape
        if shape is None:
            return mapped(_zero)

        def score(pod: Pod, node: NodeInfo, cycle: CycleState) -> int:
            return capacity_score(shape, pod_volumes_on(pod, node, cycle))

        return mapped(score)

    # -- the points

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        claims = _claims(pod, state)
        if claims.error is not None:
            return Status.unresolvable(claims.error)
        if claims.skip:
            return Status.skip()
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        return run_filter(check, state, pod, node)

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        if self.shape is None:
            return Status.skip()
        claims = _claims(pod, state)
        if claims.skip or not claims.to_bind:
            return Status.skip()  # no static binding on any node
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        if self.shape is None:
            return 0
        return capacity_score(self.shape, pod_volumes_on(pod, node_info(state, node), state))

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        info = state.cluster.nodes.get(node_name)
        volumes = pod_volumes_on(pod, info, state) if info is not None else None
        all_bound = volumes is None or not volumes.needs_binding
        state.write(STATE_KEY, BindingState(volumes, all_bound))
        if not all_bound and volumes is not None:
            ports_of(self.handle).assume_volumes(pod, volumes)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        try:
            found: BindingState = state.read(STATE_KEY)
        except KeyError:
            return
        if not found.all_bound:
            ports_of(self.handle).forget_volumes(pod)

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            found: BindingState = state.read(STATE_KEY)
        except KeyError:
            return Status.error(f"cannot read {go_quote(STATE_KEY)} from cycleState")
        if found.all_bound:
            return None
        if found.volumes is None:
            return Status.error(f"no pod volumes found for node {go_quote(node_name)}")
        # The scheduler's volume binder: the writes, then the wait for the PV controller
        # (it keeps bindTimeoutSeconds); offline (simulate) the assumption stands.
        return await ports_of(self.handle).bind_volumes(
            state, pod, found.volumes, timeout=self.policy_bind_timeout
        )

    def events_to_register(self) -> list[object]:
        """QueueingHints (v1.34): StorageClass, PVC, PV, CSINode, CSIDriver and
        CSIStorageCapacity changes, nodes added or relabelled (``_queueing``)."""
        from ._queueing import volume_binding_events

        return list(volume_binding_events())


def _zero(pod: Pod, node: NodeInfo, cycle: CycleState) -> int:
    return 0


hint(_zero, node_local=True, constant=lambda pod: 0)
