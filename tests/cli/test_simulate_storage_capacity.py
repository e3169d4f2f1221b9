"""``simulate`` reads CSIDrivers and CSIStorageCapacities: a WaitForFirstConsumer claim of
a driver that publishes its storage capacity (``spec.storageCapacity: true``) is
provisioned only on a node a CSIStorageCapacity of the claim's class reaches with room
enough, as kube-scheduler v1.30's VolumeBinding checks it (``hasEnoughCapacity``):
``maximumVolumeSize`` before ``capacity``, the node matched by ``nodeTopology``, the
object's namespace irrelevant, claims already bound not checked; otherwise the node gets
``node(s) did not have enough free storage``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import (
    claim_volume,
    csi_driver,
    csi_storage_capacity,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)
from policy_scheduler.cli import main

SCHEDULER = "policy-scheduler"
DRIVER = "csi.example.com"
ZONE = "topology.example.com/zone"
NOT_ENOUGH = "node(s) did not have enough free storage"
#: kube-scheduler v1.30's defaults, serving our pods (VolumeBinding checks capacity).
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": SCHEDULER}],
}
NODES = [node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "b"})]
FAST = storage_class("fast", DRIVER, mode="WaitForFirstConsumer")


def claimer(size: str = "100Gi", **claim: Any) -> list[dict[str, Any]]:
    """A claim of ``size`` in class fast and a pod of ours using it."""
    return [
        pvc("data", storage_class="fast", request=size, **claim),
        pod("db", schedulerName=SCHEDULER, volumes=[claim_volume("data")]),
    ]


def in_zone(zone: str, capacity: str | None, **fields: Any) -> dict[str, Any]:
    return csi_storage_capacity(
        f"fast-{zone}", "fast", capacity=capacity, node_labels={ZONE: zone}, **fields
    )


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: dict[str, Any]
) -> tuple[int, str, str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([*NODES, FAST, *docs]))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    code = main(["simulate", "-f", str(cluster), "--config", str(config), "-o", "json"])
    out, err = capsys.readouterr()
    return code, out, err


def decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: dict[str, Any]
) -> dict[str, Any]:
    code, out, err = simulate(tmp_path, capsys, *docs)
    assert code == 0, err
    [decision] = json.loads(out)["decisions"]
    assert "ignoring" not in err
    return dict(decision)


def test_a_100gi_claim_is_refused_by_a_node_whose_storage_has_1gi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decision = decide(
        tmp_path,
        capsys,
        csi_driver(DRIVER),
        in_zone("a", "1Gi"),
        in_zone("b", "1Gi"),
        *claimer("100Gi"),
    )
    assert decision["node"] is None
    assert decision["failedPredicates"] == {"n1": [NOT_ENOUGH], "n2": [NOT_ENOUGH]}
    assert decision["message"].startswith(
        f"0/2 nodes are available: 2 {NOT_ENOUGH}. no new claims to deallocate, preemption: "
        "0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("objects", "placed", "refused"),
    [
        pytest.param(
            [csi_driver(DRIVER), in_zone("a", "200Gi"), in_zone("b", "1Gi")],
            "n1",
            ["n2"],
            id="enough capacity on one node only",
        ),
        pytest.param(
            [csi_driver(DRIVER), in_zone("a", "200Gi", maximum_volume_size="50Gi")],
            None,
            ["n1", "n2"],
            id="maximumVolumeSize preferred over capacity",
        ),
        pytest.param(
            [csi_driver(DRIVER), in_zone("a", "1Gi", maximum_volume_size="100Gi")],
            "n1",
            ["n2"],
            id="maximumVolumeSize holds although capacity is less",
        ),
        pytest.param(
            [csi_driver(DRIVER), in_zone("b", "1Gi"), in_zone("b2", "200Gi")],
            None,
            ["n1", "n2"],
            id="capacity whose topology matches no node",
        ),
        pytest.param(
            [
                csi_driver(DRIVER),
                csi_storage_capacity("other", "slow", capacity="200Gi", node_labels={ZONE: "a"}),
            ],
            None,
            ["n1", "n2"],
            id="capacity of another class",
        ),
        pytest.param(
            [
                csi_driver(DRIVER),
                csi_storage_capacity(
                    "elsewhere", "fast", capacity="200Gi", node_labels={ZONE: "b"}, namespace="x"
                ),
            ],
            "n2",
            ["n1"],
            id="any namespace counts",
        ),
        pytest.param(
            [csi_driver(DRIVER, storage_capacity=False), in_zone("a", "1Gi")],
            "n1",
            [],
            id="driver without storageCapacity: not checked",
        ),
        pytest.param(
            [csi_driver(DRIVER, storage_capacity=None), in_zone("a", "1Gi")],
            "n1",
            [],
            id="driver with storageCapacity unset: not checked",
        ),
        pytest.param([in_zone("a", "1Gi")], "n1", [], id="no CSIDriver: not checked"),
        pytest.param([csi_driver(DRIVER)], None, ["n1", "n2"], id="no capacity published"),
    ],
)
def test_storage_capacity_decides_where_a_claim_is_provisioned(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    objects: list[dict[str, Any]],
    placed: str | None,
    refused: list[str],
) -> None:
    decision = decide(tmp_path, capsys, *objects, *claimer("100Gi"))
    assert decision["node"] == placed
    assert decision["failedPredicates"] == {name: [NOT_ENOUGH] for name in refused}
    if placed is not None:
        assert decision["volumes"] == {"data": {"provision": True}}


def test_a_claim_already_bound_is_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bound = pv("pv-data", storage_class="fast", capacity="100Gi", claim=("default", "data"))
    bound["status"]["phase"] = "Bound"
    decision = decide(
        tmp_path,
        capsys,
        csi_driver(DRIVER),
        in_zone("a", "1Gi"),
        bound,
        *claimer(
            "100Gi",
            volume_name="pv-data",
            annotations={"pv.kubernetes.io/bind-completed": "yes"},
        ),
    )
    assert decision["node"] in ("n1", "n2")
    assert decision["failedPredicates"] == {}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        pytest.param(
            in_zone("a", "lots"), 'CSIStorageCapacity "kube-system/fast-a": capacity', id="capacity"
        ),
        pytest.param(
            {**in_zone("a", "1Gi"), "nodeTopology": {"matchLabels": "zone"}},
            'CSIStorageCapacity "kube-system/fast-a": nodeTopology',
            id="nodeTopology",
        ),
        pytest.param(
            {**csi_driver(DRIVER), "spec": {"storageCapacity": "yes"}},
            f'CSIDriver "{DRIVER}": spec.storageCapacity',
            id="storageCapacity",
        ),
    ],
)
def test_a_malformed_capacity_object_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, Any], message: str
) -> None:
    code, _, err = simulate(tmp_path, capsys, bad, *claimer())
    assert code == 1
    [line] = err.strip().splitlines()
    assert message in line
