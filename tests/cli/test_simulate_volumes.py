"""``simulate`` with WaitForFirstConsumer claims: each decision says how its claims bind
on the chosen node, and a free PV matched by one pod is taken for the rest of the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import claim_volume, node, pod, pv, pvc, storage_class
from policy_scheduler.cli import main

NO_PV = "node(s) didn't find available persistent volumes to bind"
HOSTNAME = "kubernetes.io/hostname"


def ours(name: str, *claims: str, created: str) -> dict[str, Any]:
    obj = pod(name, schedulerName="policy-scheduler", volumes=[claim_volume(c) for c in claims])
    obj["metadata"]["creationTimestamp"] = created  # queue order: older first
    return obj


def local_pv(name: str, node_name: str, capacity: str = "10Gi") -> dict[str, Any]:
    return pv(name, storage_class="local", capacity=capacity, affinity={HOSTNAME: [node_name]})


CLUSTER = [
    node("n1", labels={HOSTNAME: "n1"}),
    node("n2", labels={HOSTNAME: "n2"}),
    storage_class("local", mode="WaitForFirstConsumer"),
    storage_class("fast", "csi.example.com", mode="WaitForFirstConsumer"),
]


def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: Any) -> list[Any]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*CLUSTER, *docs]))
    assert main(["simulate", "-f", str(path), "-o", "json"]) == 0
    decisions: list[Any] = json.loads(capsys.readouterr().out)["decisions"]
    return decisions


def test_one_free_pv_serves_one_claim_per_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = simulate(
        tmp_path,
        capsys,
        local_pv("pv-1", "n1"),
        pvc("data-a", storage_class="local", request="1Gi"),
        pvc("data-b", storage_class="local", request="1Gi"),
        ours("a", "data-a", created="2024-01-01T00:00:00Z"),
        ours("b", "data-b", created="2024-01-01T00:00:01Z"),
    )
    assert (first["pod"], first["node"], first["volumes"]) == (
        "default/a",
        "n1",
        {"data-a": {"pv": "pv-1"}},
    )
    assert (second["pod"], second["node"]) == ("default/b", None)
    assert second["failedPredicates"] == {"n1": [NO_PV], "n2": [NO_PV]}
    assert "volumes" not in second


def test_matched_provisioned_and_bound_claims_are_told_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bound_pv = local_pv("pv-logs", "n2")
    bound_pv["spec"]["claimRef"] = {"namespace": "default", "name": "logs"}
    bound_pv["status"]["phase"] = "Bound"
    [decision] = simulate(
        tmp_path,
        capsys,
        local_pv("pv-small", "n2", "2Gi"),
        local_pv("pv-big", "n2", "50Gi"),
        bound_pv,
        pvc("data", storage_class="local", request="1Gi"),
        pvc("cache", storage_class="fast", request="1Gi"),
        pvc(
            "logs",
            storage_class="local",
            request="1Gi",
            volume_name="pv-logs",
            annotations={"pv.kubernetes.io/bind-completed": "yes"},
        ),
        ours("db", "data", "cache", "logs", created="2024-01-01T00:00:00Z"),
    )
    assert decision["node"] == "n2"
    assert decision["volumes"] == {
        "logs": {"pv": "pv-logs", "bound": True},
        "data": {"pv": "pv-small"},
        "cache": {"provision": True},
    }


def test_the_table_says_how_each_claim_binds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    docs = [
        *CLUSTER,
        local_pv("pv-1", "n1"),
        pvc("data", storage_class="local", request="1Gi"),
        pvc("cache", storage_class="fast", request="1Gi"),
        ours("db", "data", "cache", created="2024-01-01T00:00:00Z"),
    ]
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["simulate", "-f", str(path)]) == 0
    out = capsys.readouterr().out
    assert "default/db -> n1  (" in out
    assert "  volumes: data -> pv-1, cache -> provisioned on n1\n" in out
