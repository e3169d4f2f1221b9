"""VolumeRestrictions (v1.30): upstream's volume_restrictions_test.go tables, as objects.

TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts
and TestAccessModeConflicts (the v1.29+ version: the ReadWriteOncePod conflict is
Filter's Unschedulable, not PreFilter's Unresolvable), plus a preemption that frees a
ReadWriteOncePod claim.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod, pvc
from intree_volume_support import SKIP, Case, check_case, unresolvable, unschedulable
from policy_scheduler.engine.intree.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)

DISK = unschedulable(ERR_REASON_DISK_CONFLICT)
RWOP = unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)

GCE_FOO = {"gcePersistentDisk": {"pdName": "foo"}}
GCE_BAR = {"gcePersistentDisk": {"pdName": "bar"}}
EBS_FOO = {"awsElasticBlockStore": {"volumeID": "foo"}}
EBS_BAR = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD_1 = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI_1 = {
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    }
}
ISCSI_2 = {"iscsi": {**ISCSI_1["iscsi"], "iqn": "iqn.2017-12.server:storage.target01"}}
NO_RESTRICTION = {"emptyDir": {}}


def with_volumes(
    name: str, *sources: dict[str, Any], node_name: str | None = None
) -> dict[str, Any]:
    volumes = [{"name": f"v{i}", **source} for i, source in enumerate(sources)]
    return pod(name, volumes=volumes, node_name=node_name)


def disk_cases(kind: str, same: dict[str, Any], other: dict[str, Any]) -> list[Any]:
    """One of upstream's four disk-conflict tables (identical but for the volumes)."""
    n1 = node("node-1")
    return [
        pytest.param(Case(pod("p"), [n1], pre_filter=SKIP, filter=[None]), id=f"{kind} nothing"),
        pytest.param(
            Case(
                pod("p"),
                [n1],
                [with_volumes("e", same, node_name="node-1")],
                pre_filter=SKIP,
                filter=[None],
            ),
            id=f"{kind} one state",
        ),
        pytest.param(
            Case(
                with_volumes("p", same),
                [n1],
                [with_volumes("e", same, node_name="node-1")],
                filter=[DISK],
            ),
            id=f"{kind} same state",
        ),
        pytest.param(
            Case(
                with_volumes("p", other),
                [n1],
                [with_volumes("e", same, node_name="node-1")],
                filter=[None],
            ),
            id=f"{kind} different state",
        ),
    ]


DISK_CASES = [
    *disk_cases("gce", GCE_FOO, GCE_BAR),
    *disk_cases("aws", EBS_FOO, EBS_BAR),
    *disk_cases("rbd", RBD_1, RBD_2),
    *disk_cases("iscsi", ISCSI_1, ISCSI_2),
    pytest.param(
        Case(with_volumes("p", NO_RESTRICTION), [node("node-1")], pre_filter=SKIP, filter=[None]),
        id="gce pod with a volume that doesn't have restrictions",
    ),
]

# TestAccessModeConflicts
RWOP_1 = pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", access_modes=["ReadWriteMany"])


def claims_pod(name: str, *claims: str, node_name: str | None = None) -> dict[str, Any]:
    volumes = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return pod(name, volumes=volumes, node_name=node_name)


WITH_ONE = claims_pod("pod-with-one-pvc", "claim-with-rwop-1", node_name="node-1")
WITH_TWO = claims_pod(
    "pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2", node_name="node-1"
)
WITH_RWX = claims_pod("pod-with-rwx", "claim-with-rwx", node_name="node-1")

ACCESS_MODE_CASES = [
    pytest.param(Case(pod("p"), [node("node-1")], pre_filter=SKIP, filter=[None]), id="nothing"),
    pytest.param(
        Case(
            claims_pod("pod-with-one-pvc", "claim-with-rwop-1"),
            [node("node-1")],
            pre_filter=unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found'),
            filter=[None],
        ),
        id="failed to get PVC",
    ),
    pytest.param(
        Case(
            claims_pod("pod-with-one-pvc", "claim-with-rwop-1"),
            [node("node-1")],
            [WITH_RWX],
            [RWOP_1, RWX],
            pre_filter=SKIP,
            filter=[None],
        ),
        id="no access mode conflict",
    ),
    pytest.param(
        Case(
            claims_pod("pod-with-one-conflict", "claim-with-rwop-1"),
            [node("node-1")],
            [WITH_ONE, WITH_RWX],
            [RWOP_1, RWX],
            filter=[RWOP],
        ),
        id="access mode conflict, unschedulable",
    ),
    pytest.param(
        Case(
            claims_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2"),
            [node("node-1")],
            [WITH_TWO, WITH_RWX],
            [RWOP_1, RWOP_2, RWX],
            filter=[RWOP],
        ),
        id="two conflicts, unschedulable",
    ),
    # Ours: the claim is in use on another node: every node is refused, since the pod
    # cannot share the claim anywhere (upstream counts the cluster's uses).
    pytest.param(
        Case(
            claims_pod("p", "claim-with-rwop-1"),
            [node("node-1"), node("node-2")],
            [WITH_ONE],
            [RWOP_1],
            filter=[RWOP, RWOP],
        ),
        id="claim in use on another node refuses every node",
    ),
    pytest.param(
        Case(
            pod(
                "p",
                volumes=[
                    {"name": "disk", **GCE_FOO},
                    {"name": "claim", "persistentVolumeClaim": {"claimName": "claim-with-rwop-1"}},
                ],
            ),
            [node("node-1")],
            [with_volumes("e", GCE_FOO, node_name="node-1"), WITH_ONE],
            [RWOP_1],
            filter=[DISK],
        ),
        id="disk conflict is checked before the claims",
    ),
]


@pytest.mark.parametrize("case", DISK_CASES + ACCESS_MODE_CASES)
def test_upstream_tables(case: Case) -> None:
    check_case(VolumeRestrictions(None, None), case)  # type: ignore[arg-type]
