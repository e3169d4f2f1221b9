"""VolumeBinding (v1.30): volume_binding_test.go's TestVolumeBinding table, as objects,
with the binder's rules (binder_test.go's FindPodVolumes themes) and Reserve, Unreserve
and PreBind against the legacy binder's assume/bind.

TestVolumeBinding's "all bound with local volumes" row expected a PreFilterResult
naming the node of the local PVs: that was added in v1.27 and taken out again in the
v1.30 patch releases (the vendored v1.30 plugin returns none), so it is ported without.
Its scoring rows run with the VolumeCapacityPriority gate on, as upstream runs them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from builders import cluster, csi_node, cycle, node, pod, pv, pvc, storage_class
from intree_volume_support import SKIP, Case, check_case, error, unresolvable
from policy_scheduler import pluginargs
from policy_scheduler.engine.functions import CycleState
from policy_scheduler.engine.handles import Ports
from policy_scheduler.engine.interface import Status
from policy_scheduler.engine.intree.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinding,
    pod_volumes,
)
from policy_scheduler.engine.predicates.volumes import PodVolumes, find_pod_volumes
from policy_scheduler.objects import (
    Pod,
    parse_csi_driver,
    parse_csi_storage_capacity,
    parse_pod,
)

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BOUND = {"pv.kubernetes.io/bind-completed": "yes"}
SELECTED = "volume.kubernetes.io/selected-node"
BIND_CONFLICT = unresolvable(ERR_REASON_BIND_CONFLICT)

CLASSES = [
    storage_class("immediate-sc", mode="Immediate"),
    storage_class("wait-sc", mode="WaitForFirstConsumer"),
    storage_class("wait-hdd-sc", mode="WaitForFirstConsumer"),
]


def make_pod(*claims: str, name: str = "pod-a") -> dict[str, Any]:
    return pod(
        name,
        volumes=[
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        ],
    )


def make_pvc(
    name: str, sc: str, *, bound_pv: str = "", request: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    """upstream's makePVC(...).withBoundPV(pv): a bound claim has the bind-completed mark."""
    annotations = dict(kwargs.pop("annotations", {}))
    if bound_pv:
        annotations.update(BOUND)
    obj = pvc(
        name,
        storage_class=sc,
        volume_name=bound_pv,
        request=request,
        annotations=annotations,
        **kwargs,
    )
    return obj


def with_phase(obj: dict[str, Any], phase: str) -> dict[str, Any]:
    return {**obj, "status": {"phase": phase}}


def make_pv(
    name: str,
    sc: str,
    *,
    capacity: str | None = None,
    affinity: dict[str, list[str]] | None = None,
    phase: str = "Available",
    **kwargs: Any,
) -> dict[str, Any]:
    return pv(name, storage_class=sc, capacity=capacity, affinity=affinity, phase=phase, **kwargs)


def local_pvs(
    prefix: str, sc: str, capacity: str, host: str, count: int = 2, start: int = 0
) -> list[dict[str, Any]]:
    return [
        make_pv(f"{prefix}-{start + i}", sc, capacity=capacity, affinity={HOSTNAME: [host]})
        for i in range(count)
    ]


def zonal_pvs(prefix: str, capacity: str, region: str, zone: str) -> list[dict[str, Any]]:
    return [
        make_pv(
            f"{prefix}-{i}", "wait-sc", capacity=capacity, affinity={REGION: [region], ZONE: [zone]}
        )
        for i in range(2)
    ]


def zone_nodes() -> list[dict[str, Any]]:
    return [
        node(f"zone-{z}-node-{n}", labels={REGION: f"region-{z}", ZONE: f"zone-{z}"})
        for z in "abc"
        for n in "ab"
    ]


@dataclass(frozen=True)
class ScoredCase:
    case: Case
    scores: list[int] = field(default_factory=list)
    shape: list[dict[str, int]] | None = None


TABLE = [
    pytest.param(
        ScoredCase(Case(make_pod(), [node("node-a")], pre_filter=SKIP, filter=[None])),
        id="pod has not pvcs",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a")],
                objects=[
                    *CLASSES,
                    make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                    make_pv("pv-a", "wait-sc"),
                ],
                filter=[None],
            )
        ),
        id="all bound",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a", "pvc-b"),
                [node("node-a")],
                objects=[
                    *CLASSES,
                    make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                    make_pvc("pvc-b", "wait-sc", bound_pv="pv-b"),
                    make_pv("pv-a", "wait-sc", phase="Bound", affinity={HOSTNAME: ["node-a"]}),
                    make_pv("pv-b", "wait-sc", phase="Bound", affinity={HOSTNAME: ["node-a"]}),
                ],
                filter=[None],
            )
        ),
        id="all bound with local volumes",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a")],
                objects=CLASSES,
                pre_filter=unresolvable('persistentvolumeclaim "pvc-a" not found'),
                filter=[None],
            )
        ),
        id="PVC does not exist",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a", "pvc-b"),
                [node("node-a")],
                objects=[*CLASSES, make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
                pre_filter=unresolvable('persistentvolumeclaim "pvc-b" not found'),
                filter=[None],
            )
        ),
        id="Part of PVCs do not exist",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a")],
                objects=[*CLASSES, make_pvc("pvc-a", "immediate-sc")],
                pre_filter=unresolvable("pod has unbound immediate PersistentVolumeClaims"),
                filter=[None],
            )
        ),
        id="immediate claims not bound",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a")],
                objects=[*CLASSES, make_pvc("pvc-a", "wait-sc")],
                filter=[BIND_CONFLICT],
            )
        ),
        id="unbound claims no matches",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a", "pvc-b"),
                [node("node-a", labels={"foo": "barbar"})],
                objects=[
                    *CLASSES,
                    make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                    make_pvc("pvc-b", "wait-sc"),
                    make_pv("pv-a", "wait-sc", affinity={"foo": ["bar"]}),
                ],
                filter=[unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
            )
        ),
        id="bound and unbound unsatisfied",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a")],
                objects=[*CLASSES, make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
                filter=[unresolvable(ERR_REASON_PV_NOT_EXIST)],
            )
        ),
        id="pv not found",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a")],
                objects=[
                    *CLASSES,
                    with_phase(make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"), "Lost"),
                ],
                pre_filter=unresolvable(
                    'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'
                ),
                filter=[None],
            )
        ),
        id="pv not found claim lost",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                [node("node-a"), node("node-b"), node("node-c")],
                objects=[
                    *CLASSES,
                    make_pvc("pvc-a", "wait-sc", request="50Gi"),
                    *local_pvs("pv-a", "wait-sc", "200Gi", "node-a"),
                    *local_pvs("pv-b", "wait-sc", "100Gi", "node-b"),
                ],
                filter=[None, None, BIND_CONFLICT],
            ),
            scores=[25, 50, 0],
        ),
        id="local volumes with close capacity are preferred",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-0", "pvc-1"),
                [node("node-a"), node("node-b"), node("node-c")],
                objects=[
                    *CLASSES,
                    make_pvc("pvc-0", "wait-sc", request="50Gi"),
                    make_pvc("pvc-1", "wait-hdd-sc", request="100Gi"),
                    *local_pvs("pv-a", "wait-sc", "200Gi", "node-a"),
                    *local_pvs("pv-a", "wait-hdd-sc", "200Gi", "node-a", start=2),
                    *local_pvs("pv-b", "wait-sc", "100Gi", "node-b"),
                    *local_pvs("pv-b", "wait-hdd-sc", "100Gi", "node-b", start=2),
                ],
                filter=[None, None, BIND_CONFLICT],
            ),
            scores=[38, 75, 0],
        ),
        id="local volumes with close capacity are preferred (multiple pvcs)",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                zone_nodes(),
                objects=[
                    *CLASSES,
                    make_pvc("pvc-a", "wait-sc", request="50Gi"),
                    *zonal_pvs("pv-a", "200Gi", "region-a", "zone-a"),
                    *zonal_pvs("pv-b", "100Gi", "region-b", "zone-b"),
                ],
                filter=[None, None, None, None, BIND_CONFLICT, BIND_CONFLICT],
            ),
            scores=[25, 25, 50, 50, 0, 0],
        ),
        id="zonal volumes with close capacity are preferred",
    ),
    pytest.param(
        ScoredCase(
            Case(
                make_pod("pvc-a"),
                zone_nodes(),
                objects=[
                    *CLASSES,
                    make_pvc("pvc-a", "wait-sc", request="50Gi"),
                    *zonal_pvs("pv-a", "200Gi", "region-a", "zone-a"),
                    *zonal_pvs("pv-b", "100Gi", "region-b", "zone-b"),
                ],
                filter=[None, None, None, None, BIND_CONFLICT, BIND_CONFLICT],
            ),
            scores=[15, 15, 30, 30, 0, 0],
            shape=[
                {"utilization": 0, "score": 0},
                {"utilization": 50, "score": 3},
                {"utilization": 100, "score": 5},
            ],
        ),
        id="zonal volumes with close capacity are preferred (custom shape)",
    ),
]


class GatedVolumeBinding(VolumeBinding):
    """With the VolumeCapacityPriority gate on, as upstream's scoring rows run."""

    volume_capacity_priority = True


def volume_binding_args(shape: list[dict[str, int]] | None) -> pluginargs.VolumeBindingArgs:
    """The args model as a profile's pluginConfig decodes it (shape given or not)."""
    if shape is None:
        return pluginargs.VolumeBindingArgs()
    points = [pluginargs.UtilizationShapePoint(**point) for point in shape]
    return pluginargs.VolumeBindingArgs(shape=points)


@pytest.mark.parametrize("scored", TABLE)
def test_volume_binding_table(scored: ScoredCase) -> None:
    check_case(VolumeBinding(None, None), scored.case)  # type: ignore[arg-type]
    if not scored.scores:
        return
    gated = GatedVolumeBinding(volume_binding_args(scored.shape), None)  # type: ignore[arg-type]
    state = cluster(scored.case.nodes, scored.case.pods, scored.case.objects)
    the_pod = parse_pod(scored.case.pod)
    nodes = [state.nodes[n["metadata"]["name"]] for n in scored.case.nodes]
    assert gated.priority()(the_pod, nodes, cycle(the_pod, state)) == scored.scores
    public = cycle(the_pod, state)
    assert gated.pre_score(public, the_pod, nodes) is None
    assert [gated.score(public, the_pod, info) for info in nodes] == scored.scores


def test_the_args_model_sets_the_bind_timeout() -> None:
    plugin = VolumeBinding(pluginargs.VolumeBindingArgs(bindTimeoutSeconds=30), None)  # type: ignore[arg-type]
    assert plugin.bind_timeout_seconds == 30
    assert VolumeBinding.Args is pluginargs.VolumeBindingArgs


def test_without_the_gate_no_score() -> None:
    case = TABLE[10].values[0].case
    state = cluster(case.nodes, case.pods, case.objects)
    the_pod = parse_pod(case.pod)
    nodes = [state.nodes[n["metadata"]["name"]] for n in case.nodes]
    plugin = VolumeBinding(None, None)  # type: ignore[arg-type]
    assert plugin.priority()(the_pod, nodes, cycle(the_pod, state)) == [0, 0, 0]
    assert plugin.pre_score(cycle(the_pod, state), the_pod, nodes) == SKIP


# -- the binder's rules ---------------------------------------------------------------------

PROVISIONER = "csi.example.com"


def binder_case(
    claims: list[dict[str, Any]],
    extra: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want: list[Any],
    *,
    pre_filter: Any = None,
    the_pod: dict[str, Any] | None = None,
) -> Case:
    the_pod = the_pod or make_pod(*(c["metadata"]["name"] for c in claims))
    return Case(
        the_pod, nodes, objects=[*CLASSES, *claims, *extra], pre_filter=pre_filter, filter=want
    )


PROVISION_SC = storage_class("provision-sc", PROVISIONER, mode="WaitForFirstConsumer")
TOPOLOGY_SC = storage_class(
    "topology-sc", PROVISIONER, mode="WaitForFirstConsumer", topologies=[{ZONE: ["zone-a"]}]
)
EPHEMERAL_POD = pod("eph", volumes=[{"name": "scratch", "ephemeral": {}}])
EPHEMERAL_POD["metadata"]["uid"] = "eph-uid"


def ephemeral_claim(owner: str | None) -> dict[str, Any]:
    claim = make_pvc("eph-scratch", "provision-sc")
    if owner is not None:
        claim["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "eph", "uid": owner, "controller": True}
        ]
    return claim


def deleting(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}


BINDER = [
    pytest.param(
        binder_case([make_pvc("c", "provision-sc")], [PROVISION_SC], [node("node-a")], [None]),
        id="unbound claim of a provisioning class: provisioned",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "wait-sc")],
            [make_pv("pv", "wait-sc", capacity="1Gi")],
            [node("node-a")],
            [None],
        ),
        id="unbound claim matches an available PV",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "wait-sc", request="5Gi")],
            [make_pv("pv", "wait-sc", capacity="1Gi")],
            [node("node-a")],
            [BIND_CONFLICT],
        ),
        id="available PV too small and no provisioner",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "topology-sc")],
            [TOPOLOGY_SC],
            [node("node-a", labels={ZONE: "zone-a"}), node("node-b", labels={ZONE: "zone-b"})],
            [None, BIND_CONFLICT],
        ),
        id="allowedTopologies admit only some nodes",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "provision-sc", annotations={SELECTED: "node-b"})],
            [PROVISION_SC],
            [node("node-a"), node("node-b")],
            [BIND_CONFLICT, None],
        ),
        id="provisioning already started for another node",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "wait-sc", request="1Gi")],
            [
                make_pv(
                    "mine",
                    "wait-sc",
                    capacity="1Gi",
                    claim=("default", "c"),
                    phase="Bound",
                    affinity={HOSTNAME: ["node-b"]},
                ),
                make_pv("any", "wait-sc", capacity="1Gi"),
            ],
            [node("node-a"), node("node-b")],
            [BIND_CONFLICT, None],
        ),
        id="a PV pre-bound to the claim that cannot reach the node rules the node out",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "ann-sc")],
            [
                {
                    **make_pv("pv", "", capacity="1Gi"),
                    "metadata": {
                        "name": "pv",
                        "annotations": {"volume.beta.kubernetes.io/storage-class": "ann-sc"},
                    },
                },
                storage_class("ann-sc", mode="WaitForFirstConsumer"),
            ],
            [node("node-a")],
            [None],
        ),
        id="a PV of the class by its beta annotation is a candidate (v1.30's class index)",
    ),
    pytest.param(
        binder_case(
            [deleting(make_pvc("c", "wait-sc"))],
            [],
            [node("node-a")],
            [None],
            pre_filter=unresolvable('persistentvolumeclaim "c" is being deleted'),
        ),
        id="claim being deleted",
    ),
    pytest.param(
        binder_case(
            [],
            [PROVISION_SC],
            [node("node-a")],
            [None],
            the_pod=EPHEMERAL_POD,
            pre_filter=unresolvable(
                "waiting for ephemeral volume controller to create the "
                'persistentvolumeclaim "eph-scratch"'
            ),
        ),
        id="ephemeral volume's claim not created yet",
    ),
    pytest.param(
        binder_case(
            [ephemeral_claim(None)],
            [PROVISION_SC],
            [node("node-a")],
            [None],
            the_pod=EPHEMERAL_POD,
            pre_filter=unresolvable(
                "PVC default/eph-scratch was not created for pod default/eph (pod is not owner)"
            ),
        ),
        id="ephemeral volume's claim not owned",
    ),
    pytest.param(
        binder_case(
            [ephemeral_claim("eph-uid")],
            [PROVISION_SC],
            [node("node-a")],
            [None],
            the_pod=EPHEMERAL_POD,
        ),
        id="ephemeral volume provisioned",
    ),
    pytest.param(
        binder_case(
            [make_pvc("c", "gone-sc", annotations={SELECTED: "node-a"})],
            [storage_class("gone-sc", mode="WaitForFirstConsumer")],
            [node("node-a")],
            [BIND_CONFLICT],
        ),
        id="claim to provision with a class without provisioner",
    ),
]


@pytest.mark.parametrize("case", BINDER)
def test_binder_rules(case: Case) -> None:
    check_case(VolumeBinding(None, None), case)  # type: ignore[arg-type]


def test_an_unknown_class_to_provision_is_an_error() -> None:
    """checkVolumeProvisions' error (the class vanished after PreFilter): an Error
    status, and an Unresolvable reason to the engine (no preemption)."""
    claim = make_pvc("c", "wait-sc", annotations={SELECTED: "node-a"})
    state = cluster([node("node-a")], [], [*CLASSES, claim])
    the_pod = parse_pod(make_pod("c"))
    plugin = VolumeBinding(None, None)  # type: ignore[arg-type]
    public = cycle(the_pod, state)
    assert plugin.pre_filter(public, the_pod) is None
    del state.storage_classes["wait-sc"]
    got = plugin.filter(public, the_pod, state.nodes["node-a"])
    assert got == error('failed to find storage class "wait-sc"')


# -- storage capacity ------------------------------------------------------------------------


def capacity(
    name: str,
    sc: str,
    *,
    size: str | None,
    max_size: str | None = None,
    topology: dict[str, Any] | None = None,
) -> Any:
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": sc,
    }
    if size is not None:
        raw["capacity"] = size
    if max_size is not None:
        raw["maximumVolumeSize"] = max_size
    if topology is not None:
        raw["nodeTopology"] = topology
    return parse_csi_storage_capacity(raw)


def driver(storage_capacity: bool | None) -> Any:
    spec = {} if storage_capacity is None else {"storageCapacity": storage_capacity}
    return parse_csi_driver(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": PROVISIONER},
            "spec": spec,
        }
    )


ZONE_A = {"matchLabels": {ZONE: "zone-a"}}


@pytest.mark.parametrize(
    ("csi_driver", "capacities", "fits"),
    [
        pytest.param(None, [], True, id="no CSIDriver: no capacity check"),
        pytest.param(driver(None), [], True, id="driver without storageCapacity"),
        pytest.param(driver(True), [], False, id="capacity tracked, none published"),
        pytest.param(
            driver(True),
            [capacity("c1", "provision-sc", size="10Gi", topology=ZONE_A)],
            True,
            id="enough",
        ),
        pytest.param(
            driver(True),
            [capacity("c1", "provision-sc", size="1Gi", topology=ZONE_A)],
            False,
            id="too little",
        ),
        pytest.param(
            driver(True),
            [capacity("c1", "provision-sc", size="10Gi", max_size="1Gi", topology=ZONE_A)],
            False,
            id="maximumVolumeSize wins over capacity",
        ),
        pytest.param(
            driver(True),
            [capacity("c1", "other-sc", size="10Gi", topology=ZONE_A)],
            False,
            id="other class",
        ),
        pytest.param(
            driver(True),
            [capacity("c1", "provision-sc", size="10Gi")],
            False,
            id="no nodeTopology reaches no node",
        ),
        pytest.param(
            driver(True),
            [
                capacity(
                    "c1", "provision-sc", size="10Gi", topology={"matchLabels": {ZONE: "zone-b"}}
                )
            ],
            False,
            id="topology elsewhere",
        ),
        pytest.param(
            driver(True),
            [capacity("c1", "provision-sc", size="10Gi", topology={})],
            True,
            id="empty nodeTopology reaches every node",
        ),
    ],
)
def test_storage_capacity(csi_driver: Any, capacities: list[Any], fits: bool) -> None:
    case = binder_case(
        [make_pvc("c", "provision-sc", request="2Gi")],
        [PROVISION_SC],
        [node("node-a", labels={ZONE: "zone-a"})],
        [None if fits else unresolvable(ERR_REASON_NOT_ENOUGH_SPACE)],
    )
    state = cluster(case.nodes, case.pods, case.objects)
    if csi_driver is not None:
        state.set_csi_driver(csi_driver)
    for c in capacities:
        state.set_storage_capacity(c)
    check_case(VolumeBinding(None, None), case, state)  # type: ignore[arg-type]


# -- CSI migration of a bound PV's topology ----------------------------------------------------

EBS_PV = make_pv(
    "ebs",
    "wait-sc",
    labels={ZONE: "us-east-1a"},
    source={"awsElasticBlockStore": {"volumeID": "vol-1"}},
)
EBS_TOPOLOGY = "topology.ebs.csi.aws.com/zone"


def migrated(annotated: bool) -> dict[str, Any]:
    obj = csi_node("node-a", {"ebs.csi.aws.com": None})
    if annotated:
        obj["metadata"]["annotations"] = {
            "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"
        }
    return obj


@pytest.mark.parametrize(
    ("labels", "annotated", "fits"),
    [
        pytest.param(
            {ZONE: "us-east-1a"}, False, True, id="not migrated on the node: the PV as it is"
        ),
        pytest.param(
            {ZONE: "us-east-1a"}, True, False, id="migrated: the zone moves to the driver's key"
        ),
        pytest.param(
            {EBS_TOPOLOGY: "us-east-1a"}, True, True, id="migrated, node labelled by the driver"
        ),
        pytest.param({EBS_TOPOLOGY: "us-east-1b"}, True, False, id="migrated, other zone"),
    ],
)
def test_migrated_pv_topology(labels: dict[str, str], annotated: bool, fits: bool) -> None:
    ebs_pv = {**EBS_PV, "spec": {**EBS_PV["spec"], "nodeAffinity": None}}
    case = binder_case(
        [make_pvc("c", "wait-sc", bound_pv="ebs")],
        [ebs_pv, migrated(annotated)],
        [node("node-a", labels=labels)],
        [None if fits else unresolvable(ERR_REASON_NODE_CONFLICT)],
    )
    check_case(VolumeBinding(None, None), case)  # type: ignore[arg-type]


# -- Reserve, Unreserve, PreBind ------------------------------------------------------------


class FakeBinder(Ports):
    """The handle's ports: record what the plugin asks of them."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.timeouts: list[float | None] = []
        self.fail = fail

    def assume_volumes(self, pod: Pod, volumes: PodVolumes) -> None:
        self.calls.append(("assume", (pod.uid, volumes)))

    def forget_volumes(self, pod: Pod) -> None:
        self.calls.append(("forget", pod.uid))

    async def bind_volumes(
        self, state: Any, pod: Pod, volumes: PodVolumes, *, timeout: float | None = None
    ) -> Status | None:
        self.calls.append(("bind", (pod.uid, volumes)))
        self.timeouts.append(timeout)
        if self.fail is not None:
            return Status.unschedulable(f"binding volumes: {self.fail}")
        return None


@dataclass
class FakeHandle:
    ports: FakeBinder


def reserve_world() -> tuple[Any, Pod, CycleState]:
    objects = [
        *CLASSES,
        PROVISION_SC,
        make_pvc("bound", "wait-sc", bound_pv="pv-bound"),
        make_pv("pv-bound", "wait-sc", phase="Bound"),
        make_pvc("match", "wait-sc", request="1Gi"),
        make_pv("small", "wait-sc", capacity="1Gi"),
        make_pv("big", "wait-sc", capacity="10Gi"),
        make_pvc("new", "provision-sc"),
    ]
    state = cluster([node("node-a")], [], objects)
    the_pod = parse_pod(make_pod("bound", "match", "new"))
    return state, the_pod, cycle(the_pod, state)


def test_reserve_assumes_what_the_legacy_binder_would() -> None:
    state, the_pod, public = reserve_world()
    binder = FakeBinder()
    plugin = VolumeBinding(None, FakeHandle(binder))  # type: ignore[arg-type]
    assert plugin.pre_filter(public, the_pod) is None
    assert plugin.filter(public, the_pod, state.nodes["node-a"]) is None
    assert plugin.reserve(public, the_pod, "node-a") is None
    volumes = pod_volumes(public)
    assert volumes is not None
    assert [(c.name, p.name) for c, p in volumes.matched] == [("match", "small")]
    assert [c.name for c in volumes.provisioned] == ["new"]
    assert [(c.name, p.name) for c, p in volumes.bound] == [("bound", "pv-bound")]
    # The same bindings as the legacy CheckVolumeBinding finds for the node.
    legacy = find_pod_volumes(the_pod, state.nodes["node-a"], cycle(the_pod, state))
    assert legacy == volumes
    assert binder.calls == [("assume", (the_pod.uid, volumes))]

    assert asyncio.run(plugin.pre_bind(public, the_pod, "node-a")) is None
    assert binder.calls[-1] == ("bind", (the_pod.uid, volumes))
    plugin.unreserve(public, the_pod, "node-a")
    assert binder.calls[-1] == ("forget", the_pod.uid)


def test_a_failed_binding_is_the_binders_status() -> None:
    _state, the_pod, public = reserve_world()
    binder = FakeBinder(fail='PersistentVolume "small" changed')
    plugin = VolumeBinding(None, FakeHandle(binder))  # type: ignore[arg-type]
    plugin.reserve(public, the_pod, "node-a")
    got = asyncio.run(plugin.pre_bind(public, the_pod, "node-a"))
    assert got == Status.unschedulable('binding volumes: PersistentVolume "small" changed')


@pytest.mark.parametrize(
    ("args", "timeout"),
    [
        pytest.param({"bindTimeoutSeconds": 7}, 7.0, id="the-policys-own"),
        pytest.param({}, None, id="none-given-the-operators-flag"),
    ],
)
def test_the_policys_bind_timeout_is_what_the_binder_waits(
    args: dict[str, Any], timeout: float | None
) -> None:
    _state, the_pod, public = reserve_world()
    binder = FakeBinder()
    parsed = pluginargs.VolumeBindingArgs.model_validate(args)
    plugin = VolumeBinding(parsed, FakeHandle(binder))  # type: ignore[arg-type]
    plugin.reserve(public, the_pod, "node-a")
    assert asyncio.run(plugin.pre_bind(public, the_pod, "node-a")) is None
    assert binder.timeouts == [timeout]


def test_all_bound_claims_need_no_binder() -> None:
    state = cluster(
        [node("node-a")],
        [],
        [
            *CLASSES,
            make_pvc("bound", "wait-sc", bound_pv="pv-bound"),
            make_pv("pv-bound", "wait-sc"),
        ],
    )
    the_pod = parse_pod(make_pod("bound"))
    public = cycle(the_pod, state)
    binder = FakeBinder()
    plugin = VolumeBinding(None, FakeHandle(binder))  # type: ignore[arg-type]
    assert plugin.reserve(public, the_pod, "node-a") is None
    assert pod_volumes(public) is None
    assert asyncio.run(plugin.pre_bind(public, the_pod, "node-a")) is None
    plugin.unreserve(public, the_pod, "node-a")
    assert binder.calls == []


def test_offline_prebind_lets_the_assumption_stand() -> None:
    # simulate's handle binds nothing: the volumes assumed at Reserve are its answer.
    _state, the_pod, public = reserve_world()
    plugin = VolumeBinding(None, None)  # type: ignore[arg-type]
    assert plugin.reserve(public, the_pod, "node-a") is None
    assert pod_volumes(public) is not None
    assert asyncio.run(plugin.pre_bind(public, the_pod, "node-a")) is None
