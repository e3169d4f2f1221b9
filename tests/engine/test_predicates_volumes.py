"""Volume predicates: NoDiskConflict, NoVolumeZoneConflict, the MaxPD counts, MaxCSI.

Ported from upstream's TestGCEDiskConflicts / TestAWSDiskConflicts / TestRBDDiskConflicts /
TestISCSIDiskConflicts, TestVolumeZonePredicate (+ MultiZone, + WithVolumeBinding),
TestVolumeCountConflicts and TestCSIVolumeCountPredicate, plus end-to-end decisions.
The object helpers here (``pv``, ``pvc``, ``storage_class``, ``csi_node``) build the API
dicts the parsers read; the volume-binding tests reuse them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from builders import (
    claim_volume,
    cluster,
    csi_node,
    cycle,
    decide,
    node,
    pod,
    policy,
    pv,
    pvc,
    storage_class,
)
from policy_scheduler import names
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.functions import Predicate
from policy_scheduler.engine.predicates.volumes import (
    csi_attach_limit_key,
    max_azure_disk_volume_count,
    max_cinder_volume_count,
    max_csi_volume_count,
    max_ebs_volume_count,
    max_gce_pd_volume_count,
    no_disk_conflict,
    no_volume_zone_conflict,
)
from policy_scheduler.objects import parse_pod

DISK = "node(s) had no available disk"
ZONE = "node(s) had no available volume zone"
COUNT = "node(s) exceed max volume count"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"
BOUND = {"pv.kubernetes.io/bind-completed": "yes"}


def vol_pod(name: str, *volumes: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A pod with the given volume sources (each gets a name)."""
    vols = [{"name": f"v{i}", **v} if "name" not in v else dict(v) for i, v in enumerate(volumes)]
    return pod(name, volumes=vols, **kwargs)


def run(
    fn: Predicate,
    incoming: Mapping[str, Any],
    existing: Sequence[Mapping[str, Any]] = (),
    objects: Sequence[Mapping[str, Any]] = (),
    node_obj: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:
    """One predicate on one node holding ``existing`` pods; returns the reasons."""
    target = dict(node_obj) if node_obj is not None else node("n1")
    name = target["metadata"]["name"]
    placed = [dict(p, spec={**p["spec"], "nodeName": name}) for p in existing]
    state: ClusterState = cluster([target], placed, objects)
    the_pod = parse_pod(incoming)
    return tuple(fn(the_pod, state.nodes[name], cycle(the_pod, state)))


# -- NoDiskConflict ------------------------------------------------------------------------

GCE_FOO = {"gcePersistentDisk": {"pdName": "foo"}}
GCE_BAR = {"gcePersistentDisk": {"pdName": "bar"}}
GCE_FOO_RO = {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
EBS_FOO = {"awsElasticBlockStore": {"volumeID": "foo"}}
EBS_BAR = {"awsElasticBlockStore": {"volumeID": "bar"}}
EBS_FOO_RO = {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}
RBD_1 = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_1_SHARED = {"rbd": {"monitors": ["b", "x"], "pool": "foo", "image": "bar"}}
RBD_1_OTHER_POOL = {"rbd": {"monitors": ["a"], "pool": "baz", "image": "bar"}}
RBD_1_RO = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "readOnly": True}}
RBD_DEFAULT_POOL = {"rbd": {"monitors": ["a"], "image": "bar"}}
RBD_EXPLICIT_DEFAULT_POOL = {"rbd": {"monitors": ["a"], "pool": "rbd", "image": "bar"}}
ISCSI_1 = {
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    }
}
ISCSI_2 = {
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2017-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    }
}
ISCSI_1_RO = {"iscsi": {**ISCSI_1["iscsi"], "readOnly": True}}
ISCSI_1_OTHER_LUN = {"iscsi": {**ISCSI_1["iscsi"], "lun": 1}}


@pytest.mark.parametrize(
    ("incoming", "existing", "fits"),
    [
        pytest.param([], [], True, id="nothing"),
        pytest.param([], [[GCE_FOO]], True, id="pod without volumes"),
        pytest.param([GCE_FOO], [[GCE_FOO]], False, id="gce same disk"),
        pytest.param([GCE_BAR], [[GCE_FOO]], True, id="gce other disk"),
        pytest.param([GCE_FOO_RO], [[GCE_FOO_RO]], True, id="gce both read-only"),
        pytest.param([GCE_FOO_RO], [[GCE_FOO]], False, id="gce only new read-only"),
        pytest.param([GCE_FOO], [[GCE_FOO_RO]], False, id="gce only existing read-only"),
        pytest.param([GCE_BAR], [[GCE_BAR, GCE_FOO], []], False, id="gce among several"),
        pytest.param([EBS_FOO], [[EBS_FOO]], False, id="ebs same volume"),
        pytest.param([EBS_BAR], [[EBS_FOO]], True, id="ebs other volume"),
        pytest.param([EBS_FOO_RO], [[EBS_FOO_RO]], False, id="ebs read-only still conflicts"),
        pytest.param([RBD_1], [[RBD_1]], False, id="rbd same image"),
        pytest.param([RBD_2], [[RBD_1]], True, id="rbd no shared monitor"),
        pytest.param([RBD_1_SHARED], [[RBD_1]], False, id="rbd one shared monitor"),
        pytest.param([RBD_1_OTHER_POOL], [[RBD_1]], True, id="rbd other pool"),
        pytest.param([RBD_1_RO], [[RBD_1_RO]], True, id="rbd both read-only"),
        pytest.param([RBD_1_RO], [[RBD_1]], False, id="rbd one read-only"),
        pytest.param(
            [RBD_DEFAULT_POOL], [[RBD_EXPLICIT_DEFAULT_POOL]], False, id="rbd pool defaults to rbd"
        ),
        pytest.param([ISCSI_1], [[ISCSI_1]], False, id="iscsi same iqn"),
        pytest.param([ISCSI_2], [[ISCSI_1]], True, id="iscsi other iqn"),
        pytest.param([ISCSI_1_RO], [[ISCSI_1_RO]], True, id="iscsi both read-only"),
        pytest.param([ISCSI_1_RO], [[ISCSI_1]], False, id="iscsi one read-only"),
        pytest.param([ISCSI_1_OTHER_LUN], [[ISCSI_1]], False, id="iscsi lun is not compared"),
        pytest.param([GCE_FOO], [[EBS_FOO]], True, id="different kinds never conflict"),
        pytest.param(
            [{"hostPath": {"path": "/data"}}],
            [[{"hostPath": {"path": "/data"}}]],
            True,
            id="host paths are not checked",
        ),
    ],
)
def test_no_disk_conflict(
    incoming: list[dict[str, Any]], existing: list[list[dict[str, Any]]], fits: bool
) -> None:
    others = [vol_pod(f"e{i}", *vols) for i, vols in enumerate(existing)]
    reasons = run(no_disk_conflict, vol_pod("new", *incoming), others)
    assert reasons == (() if fits else (DISK,))


# -- NoVolumeZoneConflict ------------------------------------------------------------------

ZONE_OBJECTS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_REGION: "us-west1-c"}),
    pv("Vol_multi", labels={BETA_ZONE: "us-west1-b__us-west1-c"}),
    pv("Vol_spaced", labels={BETA_ZONE: " us-west1-b __ us-west1-c "}),
    pv("Vol_broken", labels={BETA_ZONE: "us-west1-b____us-west1-c"}),
    pv("Vol_ga", labels={GA_ZONE: "us-west1-a"}),
    pv("Vol_none", labels={"other": "x"}),
    pvc("PVC_1", volume_name="Vol_1", annotations=BOUND),
    pvc("PVC_2", volume_name="Vol_2", annotations=BOUND),
    pvc("PVC_3", volume_name="Vol_3", annotations=BOUND),
    pvc("PVC_4", volume_name="Vol_not_exist", annotations=BOUND),
    pvc("PVC_multi", volume_name="Vol_multi"),
    pvc("PVC_spaced", volume_name="Vol_spaced"),
    pvc("PVC_broken", volume_name="Vol_broken"),
    pvc("PVC_ga", volume_name="Vol_ga"),
    pvc("PVC_none", volume_name="Vol_none"),
    storage_class("Class_Wait", mode="WaitForFirstConsumer"),
    storage_class("Class_Immediate", mode="Immediate"),
    pvc("PVC_EmptySC", storage_class=""),
    pvc("PVC_NoSC", storage_class="Class_Missing"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]


@pytest.mark.parametrize(
    ("claims", "node_labels", "expected"),
    [
        pytest.param([], {BETA_ZONE: "us-west1-a"}, (), id="pod without volume"),
        pytest.param(["PVC_1"], {}, (), id="node without labels"),
        pytest.param(
            ["PVC_1"],
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            (),
            id="label zone failure domain matched",
        ),
        pytest.param(["PVC_2"], {BETA_REGION: "us-west1-b"}, (), id="label zone region matched"),
        pytest.param(
            ["PVC_2"], {BETA_REGION: "no_us-west1-b"}, (ZONE,), id="label zone region failed match"
        ),
        pytest.param(
            ["PVC_1"],
            {BETA_ZONE: "no_us-west1-a"},
            (ZONE,),
            id="label zone failure domain failed match",
        ),
        pytest.param(
            ["PVC_2"], {BETA_ZONE: "us-west1-a"}, (ZONE,), id="node lacks the pv's label key"
        ),
        pytest.param(
            ["PVC_1", "PVC_3"],
            {BETA_ZONE: "us-west1-a", BETA_REGION: "us-west1-c"},
            (),
            id="two volumes both matched",
        ),
        pytest.param(
            ["PVC_1", "PVC_2"],
            {BETA_ZONE: "us-west1-a", BETA_REGION: "us-west1-c"},
            (ZONE,),
            id="second volume mismatched",
        ),
        pytest.param(["PVC_multi"], {BETA_ZONE: "us-west1-c"}, (), id="multi-zone value matched"),
        pytest.param(
            ["PVC_multi"], {BETA_ZONE: "us-west1-a"}, (ZONE,), id="multi-zone value not matched"
        ),
        pytest.param(["PVC_spaced"], {BETA_ZONE: "us-west1-b"}, (), id="zones are trimmed"),
        pytest.param(
            ["PVC_broken"], {BETA_ZONE: "us-west1-a"}, (), id="unreadable zone label ignored"
        ),
        pytest.param(["PVC_ga"], {GA_ZONE: "us-west1-a"}, (), id="GA zone label matched"),
        pytest.param(["PVC_ga"], {GA_ZONE: "us-west1-b"}, (ZONE,), id="GA zone label mismatch"),
        pytest.param(
            ["PVC_ga"], {BETA_ZONE: "us-west1-a"}, (ZONE,), id="labels are compared key by key"
        ),
        pytest.param(["PVC_none"], {BETA_ZONE: "us-west1-a"}, (), id="pv without zone labels"),
        pytest.param(
            ["PVC_4"],
            {BETA_ZONE: "us-west1-a"},
            ('persistentvolume "Vol_not_exist" not found',),
            id="pv not found is an error",
        ),
        pytest.param(["PVC_4"], {"other": "x"}, (), id="pv not found on node without zone labels"),
        pytest.param(
            ["PVC_1", "PVC_4"],
            {BETA_ZONE: "elsewhere"},
            (ZONE,),
            id="conflict before a later error",
        ),
        pytest.param(
            ["missing"],
            {BETA_ZONE: "us-west1-a"},
            ('persistentvolumeclaim "missing" not found',),
            id="pvc not found is an error",
        ),
        # TestVolumeZonePredicateWithVolumeBinding
        pytest.param(
            ["PVC_EmptySC"],
            {BETA_ZONE: "us-west1-a"},
            ('PersistentVolumeClaim was not found: "PVC_EmptySC"',),
            id="unbound volume empty storage class",
        ),
        pytest.param(
            ["PVC_NoSC"],
            {BETA_ZONE: "us-west1-a"},
            ('PersistentVolumeClaim was not found: "PVC_NoSC"',),
            id="unbound volume no storage class",
        ),
        pytest.param(
            ["PVC_ImmediateSC"],
            {BETA_ZONE: "us-west1-a"},
            ('PersistentVolumeClaim was not found: "PVC_ImmediateSC"',),
            id="unbound volume immediate binding mode",
        ),
        pytest.param(
            ["PVC_WaitSC"], {BETA_ZONE: "us-west1-a"}, (), id="unbound volume wait binding mode"
        ),
    ],
)
def test_no_volume_zone_conflict(
    claims: list[str], node_labels: dict[str, str], expected: tuple[str, ...]
) -> None:
    incoming = vol_pod("new", *[claim_volume(c) for c in claims])
    target = node("n1", labels=node_labels)
    reasons = run(no_volume_zone_conflict, incoming, (), ZONE_OBJECTS, target)
    assert reasons == expected


def test_zone_ignores_inline_volumes() -> None:
    target = node("n1", labels={BETA_ZONE: "a"})
    reasons = run(no_volume_zone_conflict, vol_pod("new", GCE_FOO), (), (), target)
    assert reasons == ()


# -- MaxEBS / MaxGCEPD / MaxAzureDisk / MaxCinder ------------------------------------------

FILTERS = {
    "EBS": (
        max_ebs_volume_count,
        "awsElasticBlockStore",
        "volumeID",
        "kubernetes.io/aws-ebs",
        "attachable-volumes-aws-ebs",
    ),
    "GCE": (
        max_gce_pd_volume_count,
        "gcePersistentDisk",
        "pdName",
        "kubernetes.io/gce-pd",
        "attachable-volumes-gce-pd",
    ),
    "AzureDisk": (
        max_azure_disk_volume_count,
        "azureDisk",
        "diskName",
        "kubernetes.io/azure-disk",
        "attachable-volumes-azure-disk",
    ),
    "Cinder": (
        max_cinder_volume_count,
        "cinder",
        "volumeID",
        "kubernetes.io/cinder",
        "attachable-volumes-cinder",
    ),
}


def disk(kind: str, handle: str) -> dict[str, Any]:
    _, key, field, _, _ = FILTERS[kind]
    return {key: {field: handle}}


def count_objects(kind: str) -> list[dict[str, Any]]:
    """Upstream's fake listers: one PV of the kind, one of no kind, claims of every shape."""
    _, _, _, provisioner, _ = FILTERS[kind]
    return [
        storage_class(kind, provisioner),
        storage_class("standard-sc", "standard-sc"),
        pv(f"some{kind}Vol", source=disk(kind, f"{kind.lower()}Vol")),
        pv(f"someNon{kind}Vol", source={"nfs": {"server": "s", "path": "/"}}),
        pvc(f"some{kind}Vol", volume_name=f"some{kind}Vol", storage_class=kind),
        pvc(f"someNon{kind}Vol", volume_name=f"someNon{kind}Vol", storage_class=kind),
        pvc("pvcWithDeletedPV", volume_name="pvcWithDeletedPV", storage_class=kind),
        pvc("anotherPVCWithDeletedPV", volume_name="anotherPVCWithDeletedPV", storage_class=kind),
        pvc("unboundPVC", storage_class=kind),
        pvc("anotherUnboundPVC", storage_class=kind),
        pvc("unboundPVCwithDefaultSCPod", storage_class="standard-sc"),
        pvc("unboundPVCwithInvalidSCPod", storage_class="invalid-sc"),
    ]


# Pod shapes of upstream's TestVolumeCountConflicts, as (name, volumes) factories of a kind.
def shapes(kind: str) -> dict[str, list[dict[str, Any]]]:
    return {
        "oneVol": [disk(kind, "ovp")],
        "twoVol": [disk(kind, "tvp1"), disk(kind, "tvp2")],
        "splitVols": [{"hostPath": {"path": "/"}}, disk(kind, "svp")],
        "nonApplicable": [{"hostPath": {"path": "/"}}],
        "empty": [],
        "onePVC": [claim_volume(f"some{kind}Vol")],
        "splitPVC": [claim_volume(f"someNon{kind}Vol"), claim_volume(f"some{kind}Vol")],
        "deletedPVC": [claim_volume("deletedPVC")],
        "twoDeletedPVC": [claim_volume("deletedPVC"), claim_volume("anotherDeletedPVC")],
        "deletedPV": [claim_volume("pvcWithDeletedPV")],
        "anotherDeletedPV": [claim_volume("anotherPVCWithDeletedPV")],
        "unboundPVC": [claim_volume("unboundPVC")],
        "anotherUnboundPVC": [claim_volume("anotherUnboundPVC")],
        "unboundPVCwithInvalidSC": [claim_volume("unboundPVCwithInvalidSCPod")],
        "unboundPVCwithDefaultSC": [claim_volume("unboundPVCwithDefaultSCPod")],
    }


EBS_CASES = [
    ("oneVol", ["twoVol", "oneVol"], 4, True, "fits when node capacity >= new pod's volumes"),
    ("twoVol", ["oneVol"], 2, False, "doesn't fit when node capacity < new pod's volumes"),
    ("splitVols", ["twoVol"], 3, True, "new pod's count ignores other volumes"),
    (
        "twoVol",
        ["splitVols", "nonApplicable", "empty"],
        3,
        True,
        "existing pods' counts ignore other volumes",
    ),
    (
        "onePVC",
        ["splitVols", "nonApplicable", "empty"],
        3,
        True,
        "new pod's count considers PVCs backed by the kind",
    ),
    (
        "splitPVC",
        ["splitVols", "oneVol"],
        3,
        True,
        "new pod's count ignores PVCs not backed by the kind",
    ),
    ("twoVol", ["oneVol", "onePVC"], 3, False, "existing pods' counts consider PVCs"),
    ("twoVol", ["oneVol", "twoVol", "onePVC"], 4, True, "already-mounted volumes are ok"),
    (
        "splitVols",
        ["oneVol", "oneVol", "onePVC"],
        3,
        True,
        "the same volumes are not counted multiple times",
    ),
    ("onePVC", ["oneVol", "deletedPVC"], 1, False, "missing PVC is not counted (limit 1)"),
    ("onePVC", ["oneVol", "deletedPVC"], 2, True, "missing PVC is not counted (limit 2)"),
    ("onePVC", ["oneVol", "twoDeletedPVC"], 2, True, "two missing PVCs not counted twice"),
    ("unboundPVCwithInvalidSC", ["oneVol"], 1, True, "unbound PVC with invalid SC not counted"),
    (
        "unboundPVCwithDefaultSC",
        ["oneVol"],
        1,
        True,
        "unbound PVC from different provisioner not counted",
    ),
    ("onePVC", ["oneVol", "deletedPV"], 2, False, "pod with missing PV is counted (limit 2)"),
    ("onePVC", ["oneVol", "deletedPV"], 3, True, "pod with missing PV is counted (limit 3)"),
    ("deletedPV", ["oneVol", "deletedPV"], 2, True, "two pods missing the same PV counted once"),
    (
        "anotherDeletedPV",
        ["oneVol", "deletedPV"],
        2,
        False,
        "two pods missing different PVs counted twice",
    ),
    ("onePVC", ["oneVol", "unboundPVC"], 2, False, "pod with unbound PVC counted (limit 2)"),
    ("onePVC", ["oneVol", "unboundPVC"], 3, True, "pod with unbound PVC counted (limit 3)"),
    ("unboundPVC", ["oneVol", "unboundPVC"], 2, True, "the same unbound PVC counted once"),
    (
        "anotherUnboundPVC",
        ["oneVol", "unboundPVC"],
        2,
        False,
        "two different unbound PVCs count as two volumes",
    ),
]

# GCE, Azure and Cinder reuse the table: upstream's GCE/Azure expectations differ only
# because its fake PV is an EBS disk whatever the filter; ours is of the filter's kind.
COUNT_CASES = [
    pytest.param(kind, new, old, limit, fits, source, id=f"{kind}-{source}-{text}")
    for kind in FILTERS
    for source in ("env", "allocatable")
    for new, old, limit, fits, text in EBS_CASES
]


@pytest.mark.parametrize(("kind", "new", "existing", "limit", "fits", "source"), COUNT_CASES)
def test_max_pd_volume_count(
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    new: str,
    existing: list[str],
    limit: int,
    fits: bool,
    source: str,
) -> None:
    fn, _, _, _, limit_key = FILTERS[kind]
    pods = shapes(kind)
    if source == "env":
        monkeypatch.setenv("KUBE_MAX_PD_VOLS", str(limit))
        target = node("n1")
    else:
        monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
        target = node(
            "n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110, limit_key: str(limit)}
        )
    others = [vol_pod(f"e{i}", *pods[shape]) for i, shape in enumerate(existing)]
    reasons = run(fn, vol_pod("new", *pods[new]), others, count_objects(kind), target)
    assert reasons == (() if fits else (COUNT,))


def test_claims_of_other_namespaces_do_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", "1")
    objects = count_objects("EBS")
    existing = [vol_pod("e", disk("EBS", "ovp"))]
    # "someEBSVol" exists in "default" only: from namespace "other" it is a missing claim.
    incoming = vol_pod("new", claim_volume("someEBSVol"), namespace="other")
    assert run(max_ebs_volume_count, incoming, existing, objects) == ()
    incoming_same_ns = vol_pod("new", claim_volume("someEBSVol"))
    assert run(max_ebs_volume_count, incoming_same_ns, existing, objects) == (COUNT,)


def test_pvc_volume_and_inline_volume_of_the_same_disk_count_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", "1")
    # The PV "someEBSVol" is the EBS disk "ebsVol"; an existing pod mounts it inline.
    existing = [vol_pod("e", disk("EBS", "ebsVol"))]
    incoming = vol_pod("new", claim_volume("someEBSVol"))
    assert run(max_ebs_volume_count, incoming, existing, count_objects("EBS")) == ()


def test_claim_counts_only_by_spec_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """matchProvisioner reads spec.storageClassName only, never the beta annotation."""
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", "1")
    objects = [
        storage_class("EBS", "kubernetes.io/aws-ebs"),
        pvc("annotated", annotations={"volume.beta.kubernetes.io/storage-class": "EBS"}),
    ]
    existing = [vol_pod("e", disk("EBS", "ovp"))]
    assert (
        run(max_ebs_volume_count, vol_pod("new", claim_volume("annotated")), existing, objects)
        == ()
    )


@pytest.mark.parametrize(
    ("env", "volumes", "fits"),
    [
        pytest.param(None, 16, True, id="default 16 reached"),
        pytest.param(None, 17, False, id="default 16 exceeded"),
        pytest.param("20", 17, True, id="env raises the limit"),
        pytest.param("abc", 17, False, id="unparsable env ignored"),
        pytest.param("0", 17, False, id="zero env ignored"),
        pytest.param("-3", 17, False, id="negative env ignored"),
        pytest.param(" 20", 17, False, id="env with spaces ignored"),
    ],
)
def test_gce_default_limit_and_env(
    monkeypatch: pytest.MonkeyPatch, env: str | None, volumes: int, fits: bool
) -> None:
    if env is None:
        monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    else:
        monkeypatch.setenv("KUBE_MAX_PD_VOLS", env)
    existing = [vol_pod("e", *[disk("GCE", f"d{i}") for i in range(volumes - 1)])]
    reasons = run(max_gce_pd_volume_count, vol_pod("new", disk("GCE", "new")), existing)
    assert reasons == (() if fits else (COUNT,))


@pytest.mark.parametrize(
    ("instance_type", "volumes", "fits"),
    [
        pytest.param("m4.2xlarge", 39, True, id="m4 default 39"),
        pytest.param("m4.2xlarge", 40, False, id="m4 over 39"),
        pytest.param("m5.large", 25, True, id="m5 nitro 25"),
        pytest.param("m5.large", 26, False, id="m5 over 25"),
        pytest.param("t3.medium", 26, False, id="t3 nitro"),
        pytest.param("r5d.xlarge", 26, False, id="r5d nitro"),
        pytest.param("z1d.large", 26, False, id="z1d nitro"),
        pytest.param("", 39, True, id="no instance type"),
    ],
)
def test_ebs_default_limit_by_instance_type(
    monkeypatch: pytest.MonkeyPatch, instance_type: str, volumes: int, fits: bool
) -> None:
    monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    labels = {"beta.kubernetes.io/instance-type": instance_type} if instance_type else {}
    existing = [vol_pod("e", *[disk("EBS", f"d{i}") for i in range(volumes - 1)])]
    reasons = run(
        max_ebs_volume_count,
        vol_pod("new", disk("EBS", "new")),
        existing,
        (),
        node("n1", labels=labels),
    )
    assert reasons == (() if fits else (COUNT,))


def test_cinder_default_limit_is_256(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    full = [vol_pod("e", *[disk("Cinder", f"d{i}") for i in range(256)])]
    assert run(max_cinder_volume_count, vol_pod("new", disk("Cinder", "x")), full) == (COUNT,)
    assert run(max_cinder_volume_count, vol_pod("new", disk("Cinder", "d0")), full) == ()


def test_node_allocatable_limit_wins_over_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", "10")
    target = node("n1", allocatable={"cpu": "1", "attachable-volumes-azure-disk": "1"})
    existing = [vol_pod("e", disk("AzureDisk", "a"))]
    reasons = run(
        max_azure_disk_volume_count, vol_pod("new", disk("AzureDisk", "b")), existing, (), target
    )
    assert reasons == (COUNT,)


def test_claim_without_name_is_an_error() -> None:
    incoming = vol_pod("new", claim_volume(""))
    assert run(max_ebs_volume_count, incoming) == ("PersistentVolumeClaim had no name",)


# -- MaxCSIVolumeCountPred -----------------------------------------------------------------

EBS_CSI = "ebs.csi.aws.com"
GCE_CSI = "pd.csi.storage.gke.io"


def csi_objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        storage_class("csi-sc", EBS_CSI),
        storage_class("intree-sc", "kubernetes.io/aws-ebs"),
    ]
    for driver, prefix in ((EBS_CSI, "ebs"), (GCE_CSI, "gce")):
        for i in range(4):
            name = f"csi-{prefix}-{i}"
            objects.append(
                pv(name, source={"csi": {"driver": driver, "volumeHandle": f"{prefix}-{i}"}})
            )
            objects.append(pvc(name, volume_name=name, storage_class="csi-sc"))
    objects += [
        pv("intree", source={"awsElasticBlockStore": {"volumeID": "x"}}),
        pvc("intree", volume_name="intree"),
        pvc("unbound-0", storage_class="csi-sc"),
        pvc("unbound-1", storage_class="csi-sc"),
        pvc("unbound-intree", storage_class="intree-sc"),
        pvc("unbound-noclass"),
        pvc("pv-missing", volume_name="gone", storage_class="csi-sc"),
    ]
    return objects


def claims(*names_: str) -> list[dict[str, Any]]:
    return [claim_volume(n) for n in names_]


@pytest.mark.parametrize(
    ("new", "existing", "limits", "source", "fits"),
    [
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-2", "csi-ebs-3"]],
            {EBS_CSI: 4},
            "csinode",
            True,
            id="fits when node volume limit >= new pods CSI volume",
        ),
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-2", "csi-ebs-3"]],
            {EBS_CSI: 3},
            "csinode",
            False,
            id="doesn't when node volume limit <= pods CSI volume",
        ),
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-2", "csi-ebs-3"]],
            {EBS_CSI: 3},
            "node",
            False,
            id="limit from node allocatable",
        ),
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-2", "csi-ebs-3"]],
            {EBS_CSI: 3},
            "both",
            False,
            id="limit from both",
        ),
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-2", "csi-ebs-3"]],
            {EBS_CSI: 3},
            "csinode-with-no-limit",
            True,
            id="csinode without limit",
        ),
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-2", "csi-ebs-3"]],
            {EBS_CSI: 3},
            "none",
            True,
            id="no limits anywhere",
        ),
        pytest.param(
            ["csi-ebs-0", "csi-ebs-1"],
            [["csi-ebs-0", "csi-ebs-2"]],
            {EBS_CSI: 3},
            "csinode",
            True,
            id="already attached volume counted once",
        ),
        pytest.param(
            ["csi-ebs-0"],
            [["csi-gce-0", "csi-gce-1", "csi-gce-2"]],
            {EBS_CSI: 1, GCE_CSI: 3},
            "csinode",
            True,
            id="limits per driver",
        ),
        pytest.param(
            ["csi-gce-3"],
            [["csi-gce-0", "csi-gce-1", "csi-gce-2"]],
            {EBS_CSI: 10, GCE_CSI: 3},
            "csinode",
            False,
            id="other driver full",
        ),
        pytest.param(
            ["csi-gce-3"],
            [["csi-ebs-0"]],
            {EBS_CSI: 1},
            "csinode",
            True,
            id="driver without limit is unlimited",
        ),
        pytest.param(
            ["unbound-0"],
            [["csi-ebs-0"]],
            {EBS_CSI: 1},
            "csinode",
            False,
            id="unbound claim counts by class provisioner",
        ),
        pytest.param(
            ["unbound-0"],
            [["unbound-0"]],
            {EBS_CSI: 1},
            "csinode",
            True,
            id="same unbound claim counted once",
        ),
        pytest.param(
            ["unbound-1"],
            [["unbound-0"]],
            {EBS_CSI: 1},
            "csinode",
            False,
            id="two unbound claims count twice",
        ),
        pytest.param(
            ["pv-missing"],
            [["csi-ebs-0"]],
            {EBS_CSI: 1},
            "csinode",
            False,
            id="claim with missing pv counts by class",
        ),
        pytest.param(
            ["unbound-intree"],
            [["csi-ebs-0"]],
            {EBS_CSI: 1},
            "csinode",
            True,
            id="in-tree provisioner not counted without migration",
        ),
        pytest.param(
            ["unbound-noclass"],
            [["csi-ebs-0"]],
            {EBS_CSI: 1},
            "csinode",
            True,
            id="unbound claim without class not counted",
        ),
        pytest.param(
            ["intree"], [["csi-ebs-0"]], {EBS_CSI: 1}, "csinode", True, id="in-tree pv not counted"
        ),
        pytest.param(
            ["missing-claim"],
            [["csi-ebs-0"]],
            {EBS_CSI: 1},
            "csinode",
            True,
            id="missing claim not counted",
        ),
    ],
)
def test_max_csi_volume_count(
    new: list[str],
    existing: list[list[str]],
    limits: dict[str, int],
    source: str,
    fits: bool,
) -> None:
    objects = csi_objects()
    allocatable: dict[str, Any] = {"cpu": "4", "memory": "8Gi", "pods": 110}
    if source in ("node", "both"):
        for driver, count in limits.items():
            allocatable[csi_attach_limit_key(driver)] = str(count)
    if source in ("csinode", "both"):
        objects.append(csi_node("n1", dict(limits)))
    if source == "csinode-with-no-limit":
        objects.append(csi_node("n1", {driver: None for driver in limits}))
    others = [vol_pod(f"e{i}", *claims(*names_)) for i, names_ in enumerate(existing)]
    reasons = run(
        max_csi_volume_count,
        vol_pod("new", *claims(*new)),
        others,
        objects,
        node("n1", allocatable=allocatable),
    )
    assert reasons == (() if fits else (COUNT,))


def test_csi_limit_key_of_long_driver_names() -> None:
    assert csi_attach_limit_key(EBS_CSI) == f"attachable-volumes-csi-{EBS_CSI}"
    long_name = "a-very-long-csi-driver-name.storage.example.com"
    key = csi_attach_limit_key(long_name)
    assert len(key) == len("attachable-volumes-csi-") + 23 + 16
    assert key.startswith("attachable-volumes-csi-a-very-long-csi-drive")


# -- end to end ----------------------------------------------------------------------------


#: The default predicates in their legacy order, no priorities (scores are not the point).
DEFAULT_PREDICATES = policy(list(names.DEFAULT_PREDICATE_ORDER), [])


def zone_cluster(*objects: Mapping[str, Any]) -> ClusterState:
    return cluster(
        [node("node-a", labels={GA_ZONE: "a"}), node("node-b", labels={GA_ZONE: "b"})],
        [],
        objects,
    )


def test_pod_with_a_claim_bound_to_a_zone_a_pv_lands_in_zone_a() -> None:
    state = zone_cluster(
        pv("pv-a", labels={GA_ZONE: "a"}, storage_class="ssd", capacity="1Gi"),
        pvc("data", volume_name="pv-a", storage_class="ssd", annotations=BOUND),
    )
    for _ in range(3):  # whichever node the round-robin starts at
        incoming = pod("web", volumes=[claim_volume("data")])
        decision = decide(incoming, state, DEFAULT_PREDICATES)
        assert decision.node == "node-a"
        assert decision.failed == {"node-b": [ZONE]}


def test_missing_claim_stops_before_any_node() -> None:
    incoming = pod("web", volumes=[claim_volume("data")])
    decision = decide(incoming, zone_cluster(), DEFAULT_PREDICATES)
    assert decision.node is None
    assert decision.message == 'persistentvolumeclaim "data" not found'
    assert decision.failed == {}


def test_disk_conflict_end_to_end() -> None:
    state = cluster(
        [node("n1"), node("n2")],
        [vol_pod("db", GCE_FOO, node_name="n1")],
    )
    decision = decide(vol_pod("new", GCE_FOO), state, policy([names.NO_DISK_CONFLICT], []))
    assert decision.node == "n2"
    assert decision.failed == {"n1": [DISK]}


def test_volume_count_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", "2")
    state = cluster(
        [node("n1"), node("n2")],
        [
            vol_pod("a", disk("EBS", "x"), disk("EBS", "y"), node_name="n1"),
            vol_pod("b", disk("EBS", "z"), disk("EBS", "w"), node_name="n2"),
        ],
    )
    only_ebs = policy([names.MAX_EBS_VOLUME_COUNT], [])
    decision = decide(vol_pod("new", disk("EBS", "v")), state, only_ebs)
    assert decision.node is None
    assert decision.message == f"0/2 nodes are available: 2 {COUNT}."
    # Sharing a disk already on n2 adds nothing there.
    decision = decide(vol_pod("new", disk("EBS", "z")), state, only_ebs)
    assert decision.node == "n2"
