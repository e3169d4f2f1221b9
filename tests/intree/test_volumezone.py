"""VolumeZone (v1.30): upstream's volume_zone_test.go tables, as objects.

TestSingleZone, TestMultiZone and TestWithBinding. Two texts differ from the table,
which runs on fake listers: a missing StorageClass reads ``storageclass.storage.k8s.io
"Class_0" not found`` as the informer lister words it in a running scheduler (the
fake says ``storageclasses...``), and a class without ``volumeBindingMode`` does not
exist on a real API server (it defaults the field to Immediate), so that row is the
Immediate class's.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod, pv, pvc, storage_class
from intree_volume_support import SKIP, Case, check_case, unresolvable
from policy_scheduler.engine.intree.volumezone import ERR_REASON_CONFLICT, VolumeZone

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = unresolvable(ERR_REASON_CONFLICT)


def host(labels: dict[str, str] | None = None) -> dict[str, Any]:
    """upstream's "host1": no hostname label (the table's node has only these labels)."""
    obj = node("host1", labels=labels)
    obj["metadata"]["labels"] = dict(labels or {})
    return obj


def with_claim(claim: str) -> dict[str, Any]:
    return pod("pod_1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": claim}}])


SINGLE_ZONE_OBJECTS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_2", volume_name="Vol_2"),
    pvc("PVC_3", volume_name="Vol_3"),
    pvc("PVC_4", volume_name="Vol_not_exist"),
    pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
    pvc("PVC_Stable_3", volume_name="Vol_Stable_3"),
]


def single(name: str, claim: str | None, labels: dict[str, str] | None, want: Any) -> Any:
    the_pod = pod("pod_1") if claim is None else with_claim(claim)
    pre = SKIP if claim is None else None
    return pytest.param(
        Case(the_pod, [host(labels)], objects=SINGLE_ZONE_OBJECTS, pre_filter=pre, filter=[want]),
        id=name,
    )


USELESS = {"uselessLabel": "none"}
SINGLE_ZONE = [
    single("pod without volume", None, {BETA_ZONE: "us-west1-a"}, None),
    single("node without labels", "PVC_1", None, None),
    single("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", **USELESS}, None),
    single("beta region label matched", "PVC_2", {BETA_REGION: "us-west1", **USELESS}, None),
    single(
        "beta region label doesn't match",
        "PVC_2",
        {BETA_REGION: "no_us-west1", **USELESS},
        CONFLICT,
    ),
    single(
        "beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a", **USELESS}, CONFLICT
    ),
    single("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", **USELESS}, None),
    single("region label matched", "PVC_Stable_2", {REGION: "us-west1", **USELESS}, None),
    single(
        "region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1", **USELESS}, CONFLICT
    ),
    single(
        "zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", **USELESS}, CONFLICT
    ),
    single(
        "pv with zone and region, node with only zone",
        "PVC_Stable_3",
        {ZONE: "us-west1-a"},
        CONFLICT,
    ),
    single("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, CONFLICT),
    single("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None),
    single(
        "pv with beta label,node with ga label, don't match",
        "PVC_1",
        {ZONE: "us-west1-b"},
        CONFLICT,
    ),
    # Ours: a bound PV that is gone, and a claim that is missing.
    pytest.param(
        Case(
            with_claim("PVC_4"),
            [host({ZONE: "us-west1-a"})],
            objects=SINGLE_ZONE_OBJECTS,
            pre_filter=unresolvable('persistentvolume "Vol_not_exist" not found'),
            filter=[None],
        ),
        id="bound pv not found",
    ),
    pytest.param(
        Case(
            with_claim("PVC_missing"),
            [host({ZONE: "us-west1-a"})],
            objects=SINGLE_ZONE_OBJECTS,
            pre_filter=unresolvable('persistentvolumeclaim "PVC_missing" not found'),
            filter=[None],
        ),
        id="claim not found",
    ),
]

MULTI_ZONE_OBJECTS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_2", volume_name="Vol_2"),
    pvc("PVC_3", volume_name="Vol_3"),
    pvc("PVC_4", volume_name="Vol_not_exist"),
    pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
]


def multi(name: str, claim: str, labels: dict[str, str] | None, want: Any) -> Any:
    return pytest.param(
        Case(with_claim(claim), [host(labels)], objects=MULTI_ZONE_OBJECTS, filter=[want]),
        id=f"multi {name}",
    )


MULTI_ZONE = [
    multi("node without labels", "PVC_3", None, None),
    multi("beta zone label matched", "PVC_3", {BETA_ZONE: "us-west1-a", **USELESS}, None),
    multi("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "us-west1-b", **USELESS}, CONFLICT),
    multi("zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a", **USELESS}, None),
    multi("zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b", **USELESS}, CONFLICT),
]

BINDING_OBJECTS = [
    storage_class("Class_Immediate", mode="Immediate"),
    storage_class("Class_Wait", mode="WaitForFirstConsumer"),
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_NoSC", storage_class="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]
TEST_NODE = host({BETA_ZONE: "us-west1-a", **USELESS})


def binding(name: str, claim: str, pre: Any) -> Any:
    rejected = pre is not None and pre.is_rejected
    return pytest.param(
        Case(
            with_claim(claim),
            [TEST_NODE],
            objects=BINDING_OBJECTS,
            pre_filter=pre,
            filter=[pre if rejected else None],
        ),
        id=f"binding {name}",
    )


WITH_BINDING = [
    binding("label zone failure domain matched", "PVC_1", None),
    binding(
        "unbound volume empty storage class",
        "PVC_EmptySC",
        unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
    ),
    binding(
        "unbound volume no storage class",
        "PVC_NoSC",
        unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
    ),
    binding(
        "unbound volume immediate binding mode",
        "PVC_ImmediateSC",
        unresolvable("PersistentVolume had no name"),
    ),
    binding("unbound volume wait binding mode", "PVC_WaitSC", SKIP),
]


@pytest.mark.parametrize("case", SINGLE_ZONE + MULTI_ZONE + WITH_BINDING)
def test_upstream_tables(case: Case) -> None:
    check_case(VolumeZone(None, None), case)  # type: ignore[arg-type]
