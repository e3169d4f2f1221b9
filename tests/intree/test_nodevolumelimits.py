"""NodeVolumeLimits and the in-tree limit plugins (v1.30): csi_test.go and non_csi_test.go.

TestCSILimits (the v1.30 rows: the VolumeAttachment counting rows are v1.31's),
TestEphemeralLimits, TestAzureDiskLimits, TestEBSLimits, TestGCEPDLimits and
TestGetMaxVols, with their fixtures as objects. Upstream's fake listers word a missing
claim ``persistentvolumeclaims "abc-xyz" not found``; a running scheduler's informer
lister says ``persistentvolumeclaim``, which is what we expect.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import csi_node, node, pod, pv, pvc, storage_class
from intree_volume_support import SKIP, Case, check_case, error, unresolvable, unschedulable
from policy_scheduler.engine.intree.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    AzureDiskLimits,
    CinderLimits,
    EBSLimits,
    GCEPDLimits,
    NodeVolumeLimits,
)
from policy_scheduler.engine.predicates.volumes import max_volumes_from_env

EXCEEDED = unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
NODE = "node-for-max-pd-test-1"
EBS_CSI = "ebs.csi.aws.com"
GCE_CSI = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC = "csi-sc"
CONFIGMAP = {"configMap": {"name": "cm"}}
SECRET = {"secret": {"secretName": "s"}}


def a_pod(
    name: str,
    *claims: str,
    namespace: str = "default",
    uid: str | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod mounting ``claims`` (then ``volumes``); upstream's pods are all nameless."""
    vols = [
        {"name": f"c{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    vols += [{"name": f"v{i}", **v} if "name" not in v else v for i, v in enumerate(volumes or [])]
    obj = pod(name, namespace=namespace, volumes=vols)
    if uid is not None:
        obj["metadata"]["uid"] = uid
    return obj


def placed(*pods: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**p, "spec": {**p["spec"], "nodeName": NODE}} for p in pods]


def owned_claim(name: str, namespace: str, owner_uid: str | None, **kwargs: Any) -> dict[str, Any]:
    claim = pvc(name, namespace=namespace, **kwargs)
    if owner_uid is not None:
        claim["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": owner_uid, "controller": True}
        ]
    return claim


# -- TestCSILimits ---------------------------------------------------------------------------


def csi_fixtures(drivers: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVLister / getFakeCSIPVCLister / getFakeCSIStorageClassLister."""
    objects: list[dict[str, Any]] = []
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            if driver == EBS_IN_TREE:
                source: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": name}}
            elif driver == HOSTPATH_IN_TREE:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": name}}
            objects.append(pv(name, source=source))
            objects.append(pvc(name, volume_name=name))
    objects.append(pvc("csi-4", storage_class=SC))
    objects.append(pvc("csi-5"))
    objects.append(pvc("csi-6", storage_class=SC, volume_name="missing-in-action"))
    objects.append(storage_class(SC, drivers[0]))
    return objects


def csi_node_for(limit_source: str, drivers: list[str], limit: int) -> list[dict[str, Any]]:
    """getNodeWithPodAndVolumeLimits' CSINode: with per-driver limits, without, or none."""
    if limit_source == "csinode":
        return [csi_node(NODE, {d: limit for d in drivers})]
    if limit_source == "csinode-with-no-limit":
        return [csi_node(NODE, {d: None for d in drivers})]
    return []


RUNNING = a_pod("running", "csi-ebs.csi.aws.com-3")
PENDING_VOLUME = a_pod("pending-volume", "csi-4")
UNBOUND_PVC_2 = a_pod("unbound-pvc-2", "csi-4")
MISSING_PV = a_pod("missing-pv", "csi-6")
NO_SC_PVC = a_pod("no-sc-pvc", "csi-5")
GCE_TWO = a_pod("gce-two", "csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")
IN_TREE_ONE = a_pod("in-tree-one", "csi-kubernetes.io/aws-ebs-0")
IN_TREE_TWO = a_pod("in-tree-two", "csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2")
CSI_EBS_ONE = a_pod("csi-ebs-one", "csi-ebs.csi.aws.com-0")
CSI_EBS_TWO = a_pod("csi-ebs-two", "csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
NON_MIGRATABLE_ONE = a_pod("non-migratable", "csi-kubernetes.io/hostpath-0")
EPHEMERAL = a_pod("abc", namespace="test", uid="12345", volumes=[{"name": "xyz", "ephemeral": {}}])
EPHEMERAL_CLAIM = owned_claim("abc-xyz", "test", "12345", storage_class=SC)
CONFLICTING_CLAIM = owned_claim("abc-xyz", "test", None, storage_class=SC)
EPHEMERAL_TWO = a_pod(
    "abc",
    namespace="test",
    uid="12345II",
    volumes=[{"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}],
)
EPHEMERAL_CLAIM_X = owned_claim("abc-x", "test", "12345II", storage_class=SC)
EPHEMERAL_CLAIM_Y = owned_claim("abc-y", "test", "12345II", storage_class=SC)
IN_TREE_INLINE = a_pod(
    "in-tree-inline", volumes=[{"awsElasticBlockStore": {"volumeID": "aws-inline1"}}]
)
IN_TREE_INLINE_SAME_ID = a_pod(
    "in-tree-inline-same", volumes=[{"awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}]
)
ONLY_CONFIGMAP_AND_SECRET = a_pod("cm-secret", volumes=[CONFIGMAP, SECRET])
PVC_WITH_CONFIGMAP_AND_SECRET = a_pod(
    "pvc-cm-secret", "csi-ebs.csi.aws.com-0", volumes=[CONFIGMAP, SECRET]
)
EPHEMERAL_WITH_CONFIGMAP_AND_SECRET = a_pod(
    "abc", namespace="test", volumes=[CONFIGMAP, SECRET, {"name": "xyz", "ephemeral": {}}]
)
INLINE_MIGRATABLE_WITH_CONFIGMAP_AND_SECRET = a_pod(
    "inline-cm-secret",
    volumes=[CONFIGMAP, SECRET, {"awsElasticBlockStore": {"volumeID": "aws-inline1"}}],
)
MISSING_EPHEMERAL = unresolvable(
    'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'
)


def csi(
    name: str,
    new: dict[str, Any],
    existing: list[dict[str, Any]],
    drivers: list[str],
    limit_source: str,
    max_vols: int = 0,
    want: Any = None,
    *,
    extra: list[dict[str, Any]] | None = None,
    pre_filter: Any = None,
) -> Any:
    objects = csi_fixtures(drivers) + csi_node_for(limit_source, drivers, max_vols) + (extra or [])
    case = Case(new, [node(NODE)], placed(*existing), objects, pre_filter=pre_filter, filter=[want])
    return pytest.param(case, id=name)


MIGRATED = [EBS_IN_TREE, EBS_CSI]
CSI_CASES = [
    csi(
        "fits when node volume limit >= new pods CSI volume",
        CSI_EBS_ONE,
        [RUNNING, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        4,
    ),
    csi(
        "doesn't when node volume limit <= pods CSI volume",
        CSI_EBS_ONE,
        [RUNNING, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "should when driver does not support volume limits",
        CSI_EBS_ONE,
        [RUNNING, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode-with-no-limit",
        2,
    ),
    csi(
        "count pending PVCs towards volume limit <= pods CSI volume",
        CSI_EBS_ONE,
        [PENDING_VOLUME, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        CSI_EBS_ONE,
        [PENDING_VOLUME, UNBOUND_PVC_2, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        4,
    ),
    csi(
        "should count PVCs with invalid PV name but valid SC",
        CSI_EBS_ONE,
        [MISSING_PV, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "don't count pvcs with missing SC towards volume limit",
        CSI_EBS_ONE,
        [RUNNING, NO_SC_PVC],
        [EBS_CSI],
        "csinode",
        2,
    ),
    csi(
        "count pvcs with the same type towards volume limit",
        CSI_EBS_ONE,
        [GCE_TWO, CSI_EBS_TWO],
        [EBS_CSI, GCE_CSI],
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "don't count pvcs with different type towards volume limit",
        GCE_TWO,
        [CSI_EBS_TWO, RUNNING],
        [EBS_CSI, GCE_CSI],
        "csinode",
        2,
    ),
    csi(
        "should count in-tree volumes if migration is enabled",
        IN_TREE_ONE,
        [IN_TREE_TWO],
        MIGRATED,
        "csinode",
        2,
        EXCEEDED,
    ),
    csi("nil csi node", IN_TREE_INLINE, [IN_TREE_TWO], MIGRATED, ""),
    csi(
        "should count unbound in-tree volumes if migration is enabled",
        PENDING_VOLUME,
        [IN_TREE_TWO],
        MIGRATED,
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "should not limit pod if volume used does not report limits",
        IN_TREE_ONE,
        [IN_TREE_TWO],
        MIGRATED,
        "csinode-with-no-limit",
        2,
    ),
    csi(
        "should not count non-migratable in-tree volumes",
        NON_MIGRATABLE_ONE,
        [CSI_EBS_TWO],
        [HOSTPATH_IN_TREE, EBS_CSI],
        "csinode",
        2,
    ),
    csi(
        "should count in-tree inline volumes if migration is enabled",
        IN_TREE_INLINE,
        [IN_TREE_TWO],
        MIGRATED,
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "should count in-tree and csi volumes if migration is enabled (when "
        "scheduling in-tree volumes)",
        IN_TREE_ONE,
        [CSI_EBS_TWO],
        MIGRATED,
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "should count in-tree, inline and csi volumes if migration is enabled "
        "(when scheduling in-tree volumes)",
        IN_TREE_INLINE,
        [CSI_EBS_TWO, IN_TREE_ONE],
        MIGRATED,
        "csinode",
        3,
        EXCEEDED,
    ),
    csi(
        "should not count in-tree, inline and csi volumes if migration is "
        "enabled (when scheduling in-tree volumes)",
        IN_TREE_INLINE_SAME_ID,
        [CSI_EBS_TWO, IN_TREE_ONE],
        MIGRATED,
        "csinode",
        3,
    ),
    csi(
        "should count in-tree and csi volumes if migration is enabled (when "
        "scheduling csi volumes)",
        CSI_EBS_ONE,
        [IN_TREE_TWO],
        MIGRATED,
        "csinode",
        2,
        EXCEEDED,
    ),
    csi(
        "ephemeral volume missing",
        EPHEMERAL,
        [],
        [EBS_CSI],
        "csinode-with-no-limit",
        want=MISSING_EPHEMERAL,
    ),
    csi(
        "ephemeral volume not owned",
        EPHEMERAL,
        [],
        [EBS_CSI],
        "csinode-with-no-limit",
        want=error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
        extra=[CONFLICTING_CLAIM],
    ),
    csi(
        "ephemeral volume unbound",
        EPHEMERAL,
        [],
        [EBS_CSI],
        "csinode-with-no-limit",
        extra=[EPHEMERAL_CLAIM],
    ),
    csi(
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        EPHEMERAL,
        [RUNNING, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        2,
        EXCEEDED,
        extra=[EPHEMERAL_CLAIM],
    ),
    csi(
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        CSI_EBS_ONE,
        [RUNNING, EPHEMERAL_TWO],
        [EBS_CSI],
        "csinode",
        2,
        EXCEEDED,
        extra=[EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y],
    ),
    csi(
        "persistent doesn't when node volume limit <= pods ephemeral CSI "
        "volume + persistent volume",
        CSI_EBS_ONE,
        [RUNNING, EPHEMERAL, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        3,
        EXCEEDED,
        extra=[EPHEMERAL_CLAIM],
    ),
    csi(
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        CSI_EBS_ONE,
        [RUNNING, EPHEMERAL, CSI_EBS_TWO],
        [EBS_CSI],
        "csinode",
        5,
        extra=[EPHEMERAL_CLAIM],
    ),
    csi(
        "skip Filter when the pod only uses secrets and configmaps",
        ONLY_CONFIGMAP_AND_SECRET,
        [],
        [EBS_CSI],
        "csinode",
        2,
        pre_filter=SKIP,
    ),
    csi(
        "don't skip Filter when the pod has pvcs",
        PVC_WITH_CONFIGMAP_AND_SECRET,
        [],
        [EBS_CSI],
        "csinode",
        2,
    ),
    csi(
        "don't skip Filter when the pod has ephemeral volumes",
        EPHEMERAL_WITH_CONFIGMAP_AND_SECRET,
        [],
        [EBS_CSI],
        "csinode-with-no-limit",
        want=MISSING_EPHEMERAL,
    ),
    csi(
        "don't skip Filter when the pod has inline migratable volumes",
        INLINE_MIGRATABLE_WITH_CONFIGMAP_AND_SECRET,
        [IN_TREE_TWO],
        MIGRATED,
        "csinode",
        2,
        EXCEEDED,
    ),
    # Ours: the node's own attachable-volumes-csi-<driver> still counts in v1.30.
    pytest.param(
        Case(
            CSI_EBS_ONE,
            [node(NODE, allocatable={"cpu": "1", "attachable-volumes-csi-ebs.csi.aws.com": "2"})],
            placed(CSI_EBS_TWO),
            csi_fixtures([EBS_CSI]),
            filter=[EXCEEDED],
        ),
        id="node allocatable limit without a CSINode",
    ),
]


@pytest.mark.parametrize("case", CSI_CASES)
def test_csi_limits(case: Case) -> None:
    check_case(NodeVolumeLimits(None, None), case)  # type: ignore[arg-type]


# -- the in-tree limit plugins ---------------------------------------------------------------

LIMIT_KEYS = {
    "EBS": "attachable-volumes-aws-ebs",
    "GCE": "attachable-volumes-gce-pd",
    "AzureDisk": "attachable-volumes-azure-disk",
    "Cinder": "attachable-volumes-cinder",
}
PLUGINS = {
    "EBS": EBSLimits,
    "GCE": GCEPDLimits,
    "AzureDisk": AzureDiskLimits,
    "Cinder": CinderLimits,
}


def in_tree_fixtures(filter_name: str, provisioner: str) -> list[dict[str, Any]]:
    """getFakePVLister / getFakePVCLister / the class named after the filter: both PVs
    are EBS or nothing, whatever the filter (so GCE and Azure count them not)."""
    f = filter_name
    return [
        storage_class(f, provisioner),
        pv(f"some{f}Vol", source={"awsElasticBlockStore": {"volumeID": f"{f.lower()}Vol"}}),
        pv(f"someNon{f}Vol"),
        pvc(f"some{f}Vol", volume_name=f"some{f}Vol", storage_class=f),
        pvc(f"someNon{f}Vol", volume_name=f"someNon{f}Vol", storage_class=f),
        pvc("pvcWithDeletedPV", volume_name="pvcWithDeletedPV", storage_class=f),
        pvc("anotherPVCWithDeletedPV", volume_name="anotherPVCWithDeletedPV", storage_class=f),
        pvc("unboundPVC", storage_class=f),
        pvc("anotherUnboundPVC", storage_class=f),
        pvc("unboundPVCWithDefaultSCPod", storage_class="standard-sc"),
        pvc("unboundPVCWithInvalidSCPod", storage_class="invalid-sc"),
    ]


def limit_node(filter_name: str, max_vols: int) -> dict[str, Any]:
    """getNodeWithPodAndVolumeLimits("node", ...): the limit as the node's allocatable."""
    return node(NODE, allocatable={"cpu": "1", LIMIT_KEYS[filter_name]: str(max_vols)})


def in_tree_case(
    filter_name: str,
    provisioner: str,
    name: str,
    new: dict[str, Any],
    existing: list[dict[str, Any]],
    max_vols: int,
    want: Any = None,
    *,
    pre_filter: Any = None,
    extra: list[dict[str, Any]] | None = None,
) -> Any:
    case = Case(
        new,
        [limit_node(filter_name, max_vols)],
        placed(*existing),
        in_tree_fixtures(filter_name, provisioner) + (extra or []),
        pre_filter=pre_filter,
        filter=[want],
    )
    return pytest.param(filter_name, case, id=f"{filter_name}: {name}")


def kind_pods(
    kind: str, handle_key: str, handles: tuple[str, str, str, str]
) -> dict[str, dict[str, Any]]:
    """oneVolPod, twoVolPod, splitVolsPod of one kind."""
    one, two_a, two_b, split = handles

    def src(handle: str) -> dict[str, Any]:
        return {kind: {handle_key: handle}}

    return {
        "one": a_pod("one", volumes=[src(one)]),
        "two": a_pod("two", volumes=[src(two_a), src(two_b)]),
        "split": a_pod("split", volumes=[{"hostPath": {"path": "/"}}, src(split)]),
        "with_cm": a_pod("kind-cm-secret", volumes=[src(one), CONFIGMAP, SECRET]),
    }


NON_APPLICABLE = a_pod("non-applicable", volumes=[{"hostPath": {"path": "/"}}])
EMPTY = a_pod("empty")
DELETED_PVC = a_pod("deleted-pvc", "deletedPVC")
TWO_DELETED_PVC = a_pod("two-deleted-pvc", "deletedPVC", "anotherDeletedPVC")
DELETED_PV = a_pod("deleted-pv", "pvcWithDeletedPV")
DELETED_PV_2 = a_pod("deleted-pv-2", "pvcWithDeletedPV")
ANOTHER_DELETED_PV = a_pod("another-deleted-pv", "anotherPVCWithDeletedPV")
UNBOUND = a_pod("unbound", "unboundPVC")
UNBOUND_2 = a_pod("unbound-2", "unboundPVC")
ANOTHER_UNBOUND = a_pod("another-unbound", "anotherUnboundPVC")
ONLY_CM_SECRET = a_pod("only-cm-secret", volumes=[CONFIGMAP, SECRET])
PVC_CM_SECRET = a_pod("pvc-cm-secret", "pvcWithDeletedPV", volumes=[CONFIGMAP, SECRET])


def one_pvc(f: str) -> dict[str, Any]:
    return a_pod("one-pvc", f"some{f}Vol")


def split_pvc(f: str) -> dict[str, Any]:
    return a_pod("split-pvc", f"someNon{f}Vol", f"some{f}Vol")


def common_rows(
    f: str, provisioner: str, pods: dict[str, dict[str, Any]], wants: dict[str, Any]
) -> list[Any]:
    """The rows TestAzureDiskLimits, TestEBSLimits and TestGCEPDLimits share; ``wants``
    gives the rows whose expectation differs from "fits"."""
    one, two, split = pods["one"], pods["two"], pods["split"]
    rows = [
        ("fits when node capacity >= new pod's volumes", one, [two, one], 4),
        ("doesn't fit when node capacity < new pod's volumes", two, [one], 2),
        ("new pod's count ignores non-kind volumes", split, [two], 3),
        ("existing pods' counts ignore non-kind volumes", two, [split, NON_APPLICABLE, EMPTY], 3),
        (
            "new pod's count considers PVCs backed by kind volumes",
            one_pvc(f),
            [split, NON_APPLICABLE, EMPTY],
            3,
        ),
        ("new pod's count ignores PVCs not backed by kind volumes", split_pvc(f), [split, one], 3),
        ("existing pods' counts considers PVCs backed by kind volumes", two, [one, one_pvc(f)], 3),
        ("already-mounted volumes are always ok to allow", two, [one, two, one_pvc(f)], 4),
        ("the same volumes are not counted multiple times", split, [one, one, one_pvc(f)], 3),
        ("missing PVC is not counted towards the PV limit (1)", one_pvc(f), [one, DELETED_PVC], 1),
        ("missing PVC is not counted towards the PV limit (2)", one_pvc(f), [one, DELETED_PVC], 2),
        (
            "two missing PVCs are not counted towards the PV limit twice",
            one_pvc(f),
            [one, TWO_DELETED_PVC],
            2,
        ),
        (
            "pod with missing PV is counted towards the PV limit (2)",
            one_pvc(f),
            [one, DELETED_PV],
            2,
        ),
        (
            "pod with missing PV is counted towards the PV limit (3)",
            one_pvc(f),
            [one, DELETED_PV],
            3,
        ),
        (
            "two pods missing the same PV are counted towards the PV limit only once",
            DELETED_PV_2,
            [one, DELETED_PV],
            2,
        ),
        (
            "two pods missing different PVs are counted towards the PV limit twice",
            ANOTHER_DELETED_PV,
            [one, DELETED_PV],
            2,
        ),
        ("pod with unbound PVC is counted towards the PV limit (2)", one_pvc(f), [one, UNBOUND], 2),
        ("pod with unbound PVC is counted towards the PV limit (3)", one_pvc(f), [one, UNBOUND], 3),
        (
            "the same unbound PVC in multiple pods is counted towards the PV limit only once",
            UNBOUND_2,
            [one, UNBOUND],
            2,
        ),
        (
            "two different unbound PVCs are counted towards the PV limit as two volumes",
            ANOTHER_UNBOUND,
            [one, UNBOUND],
            2,
        ),
        ("don't skip Filter when the pod has pvcs", PVC_CM_SECRET, [one, DELETED_PV], 2),
        ("don't skip Filter when the pod has kind volumes", pods["with_cm"], [two, one], 4),
    ]
    out = [in_tree_case(f, provisioner, n, new, ex, m, wants.get(n)) for n, new, ex, m in rows]
    out.append(
        in_tree_case(
            f,
            provisioner,
            "skip Filter when the pod only uses secrets and configmaps",
            ONLY_CM_SECRET,
            [two, one],
            4,
            pre_filter=SKIP,
        )
    )
    return out


EBS_PODS = kind_pods("awsElasticBlockStore", "volumeID", ("ovp", "tvp1", "tvp2", "svp"))
# Upstream's Azure and GCE pods have nameless disks: all of one pod's count as one.
AZURE_PODS = kind_pods("azureDisk", "diskName", ("", "", "", ""))
GCE_PODS = kind_pods("gcePersistentDisk", "pdName", ("", "", "", ""))

EBS_ROWS = [
    *common_rows(
        "EBS",
        EBS_IN_TREE,
        EBS_PODS,
        {
            "doesn't fit when node capacity < new pod's volumes": EXCEEDED,
            "existing pods' counts considers PVCs backed by kind volumes": EXCEEDED,
            "missing PVC is not counted towards the PV limit (1)": EXCEEDED,
            "pod with missing PV is counted towards the PV limit (2)": EXCEEDED,
            "two pods missing different PVs are counted towards the PV limit twice": EXCEEDED,
            "pod with unbound PVC is counted towards the PV limit (2)": EXCEEDED,
            "two different unbound PVCs are counted towards the PV limit as two volumes": EXCEEDED,
        },
    ),
    in_tree_case(
        "EBS",
        EBS_IN_TREE,
        "unbound PVC with invalid SC is not counted towards the PV limit",
        a_pod("invalid-sc", "unboundPVCWithInvalidSCPod"),
        [EBS_PODS["one"]],
        1,
    ),
    in_tree_case(
        "EBS",
        EBS_IN_TREE,
        "unbound PVC from different provisioner is not counted towards the PV limit",
        a_pod("default-sc", "unboundPVCWithDefaultSCPod"),
        [EBS_PODS["one"]],
        1,
    ),
]
AZURE_ROWS = common_rows("AzureDisk", "", AZURE_PODS, {})
GCE_ROWS = common_rows("GCE", "", GCE_PODS, {})

# TestEphemeralLimits (with the GCE PD filter, as upstream).
EPHEMERAL_GCE_CLAIM = owned_claim(
    "abc-xyz", "test", "12345", storage_class="GCE", volume_name="missing"
)
EPHEMERAL_GCE_CONFLICTING = owned_claim(
    "abc-xyz", "test", None, storage_class="GCE", volume_name="missing"
)
GCE_PD = "kubernetes.io/gce-pd"
EPHEMERAL_ROWS = [
    in_tree_case("GCE", GCE_PD, "volume missing", EPHEMERAL, [], 0, MISSING_EPHEMERAL),
    in_tree_case(
        "GCE",
        GCE_PD,
        "volume not owned",
        EPHEMERAL,
        [],
        0,
        error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
        extra=[EPHEMERAL_GCE_CONFLICTING],
    ),
    in_tree_case(
        "GCE", GCE_PD, "volume unbound, allowed", EPHEMERAL, [], 1, extra=[EPHEMERAL_GCE_CLAIM]
    ),
    in_tree_case(
        "GCE",
        GCE_PD,
        "volume unbound, exceeds limit",
        EPHEMERAL,
        [],
        0,
        EXCEEDED,
        extra=[EPHEMERAL_GCE_CLAIM],
    ),
    in_tree_case(
        "GCE",
        GCE_PD,
        "skip Filter when the pod only uses secrets and configmaps",
        ONLY_CM_SECRET,
        [],
        1,
        pre_filter=SKIP,
        extra=[EPHEMERAL_GCE_CLAIM],
    ),
    in_tree_case(
        "GCE",
        GCE_PD,
        "don't skip Filter when the pods has ephemeral volumes",
        a_pod(
            "abc",
            namespace="test",
            uid="12345",
            volumes=[{"name": "xyz", "ephemeral": {}}, CONFIGMAP, SECRET],
        ),
        [],
        1,
        extra=[EPHEMERAL_GCE_CLAIM],
    ),
]

CINDER_PODS = kind_pods("cinder", "volumeID", ("c1", "c2", "c3", "c4"))
CINDER_ROWS = [
    in_tree_case(
        "Cinder",
        "kubernetes.io/cinder",
        "cinder volumes count",
        CINDER_PODS["two"],
        [CINDER_PODS["one"]],
        2,
        EXCEEDED,
    ),
    in_tree_case(
        "Cinder",
        "kubernetes.io/cinder",
        "cinder volumes fit",
        CINDER_PODS["two"],
        [CINDER_PODS["one"]],
        3,
    ),
]


@pytest.mark.parametrize(
    ("filter_name", "case"), EBS_ROWS + AZURE_ROWS + GCE_ROWS + EPHEMERAL_ROWS + CINDER_ROWS
)
def test_in_tree_limits(filter_name: str, case: Case) -> None:
    check_case(PLUGINS[filter_name](None, None), case)  # type: ignore[arg-type]


def test_a_node_with_a_csinode_is_left_to_node_volume_limits() -> None:
    """v1.30: the EBS migration is on wherever a CSINode exists, whatever it lists."""
    pods = EBS_PODS
    case = Case(
        pods["two"],
        [limit_node("EBS", 1)],
        placed(pods["one"]),
        [*in_tree_fixtures("EBS", EBS_IN_TREE), csi_node(NODE, {})],
        filter=[None],
    )
    check_case(EBSLimits(None, None), case)  # type: ignore[arg-type]


# -- the default limits, KUBE_MAX_PD_VOLS ------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            "invalid", None, id="Unable to parse maximum PD volumes value, using default value"
        ),
        pytest.param(
            "-2", None, id="Maximum PD volumes must be a positive value, using default value"
        ),
        pytest.param("40", 40, id="Parse maximum PD volumes value from env"),
    ],
)
def test_get_max_vols(monkeypatch: pytest.MonkeyPatch, raw: str, expected: int | None) -> None:
    monkeypatch.setenv("KUBE_MAX_PD_VOLS", raw)
    assert max_volumes_from_env() == expected


def ebs_pod(count: int, name: str = "many") -> dict[str, Any]:
    return a_pod(
        name, volumes=[{"awsElasticBlockStore": {"volumeID": f"vol-{i}"}} for i in range(count)]
    )


@pytest.mark.parametrize(
    ("labels", "env", "count", "fits"),
    [
        pytest.param({}, None, 39, True, id="EBS default 39"),
        pytest.param({}, None, 40, False, id="EBS default 39 exceeded"),
        pytest.param(
            {"node.kubernetes.io/instance-type": "m5.large"},
            None,
            26,
            False,
            id="nitro by the GA label: 25",
        ),
        pytest.param(
            {"beta.kubernetes.io/instance-type": "t3.small"},
            None,
            25,
            True,
            id="nitro by the beta label: 25",
        ),
        pytest.param({}, "5", 6, False, id="KUBE_MAX_PD_VOLS 5"),
        pytest.param(
            {"node.kubernetes.io/instance-type": "m5.large"},
            "30",
            30,
            True,
            id="KUBE_MAX_PD_VOLS over nitro",
        ),
    ],
)
def test_ebs_default_limits(
    monkeypatch: pytest.MonkeyPatch, labels: dict[str, str], env: str | None, count: int, fits: bool
) -> None:
    if env is None:
        monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    else:
        monkeypatch.setenv("KUBE_MAX_PD_VOLS", env)
    case = Case(ebs_pod(count), [node(NODE, labels=labels)], filter=[None if fits else EXCEEDED])
    check_case(EBSLimits(None, None), case)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("plugin", "kind", "key", "default"),
    [
        pytest.param(GCEPDLimits, "gcePersistentDisk", "pdName", 16, id="GCE PD 16"),
        pytest.param(AzureDiskLimits, "azureDisk", "diskName", 16, id="Azure Disk 16"),
        pytest.param(CinderLimits, "cinder", "volumeID", 256, id="Cinder 256"),
    ],
)
def test_other_default_limits(
    monkeypatch: pytest.MonkeyPatch, plugin: Any, kind: str, key: str, default: int
) -> None:
    monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    at_limit = a_pod("at", volumes=[{kind: {key: f"d{i}"}} for i in range(default)])
    over = a_pod("over", volumes=[{kind: {key: f"d{i}"}} for i in range(default + 1)])
    check_case(plugin(None, None), Case(at_limit, [node(NODE)], filter=[None]))
    check_case(plugin(None, None), Case(over, [node(NODE)], filter=[EXCEEDED]))
