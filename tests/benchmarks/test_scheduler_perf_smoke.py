"""Our scheduler_perf's quick mode runs every workload with both policies.

No timing is asserted: what is checked is what a reader of docs/performance.md relies
on. Every workload runs with kube-scheduler v1.30's default profile and with the legacy
default policy, at scheduler_perf's counts divided by 50; every measured pod is decided
and reported; the workloads exercise what their names say (the anti-affinity pods keep
off the nodes of the init pods, the spreading pods stay within maxSkew over the three
zones, the preemptors place by evicting, the churn's large pods fit nowhere, the
daemonset pods all land on the node they name); the table prints each Go floor;
``-o json`` writes the outcomes per workload and policy.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "scheduler_perf.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scheduler_perf", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("scheduler_perf", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("scheduler-perf")
    report: dict[str, Any] = bench.main(
        ["--quick", "--json", str(out / "report.json"), "-o", "json", str(out / "outcomes.json")]
    )
    report["_outcomes"] = json.loads((out / "outcomes.json").read_text())
    report["_written"] = json.loads((out / "report.json").read_text())
    return report


def test_every_workload_runs_with_both_policies(bench: ModuleType, quick: dict[str, Any]) -> None:
    ran = {(r["workload"], r["policy"]) for r in quick["results"]}
    assert ran == {(w, p) for w in bench.WORKLOADS for p in ("v134", "legacy")}
    for row in quick["results"]:
        workload = bench.WORKLOADS[row["workload"]]
        assert row["measured_pods"] == workload.measure_pods // 50
        assert row["decisions"] >= row["measured_pods"]
        assert row["cpu_s"] > 0 and row["pods_per_s"] > 0
        outcomes = quick["_outcomes"][f"{row['workload']}/{row['policy']}"]
        measured = [name for name in outcomes if name.startswith("measure-")]
        assert len(measured) == row["measured_pods"]
    assert quick["_written"]["results"] == quick["results"]


def test_the_workloads_decide_what_their_names_say(quick: dict[str, Any]) -> None:
    outcomes = quick["_outcomes"]
    for policy in ("v134", "legacy"):
        # Every measured pod fits somewhere in these clusters (Unschedulable's init pods
        # are the ones that fit nowhere, and they are not measured).
        for name in (
            "SchedulingBasic",
            "SchedulingPodAntiAffinity",
            "SchedulingPodMatchingAntiAffinity",
            "SchedulingPodAffinity",
            "SchedulingNodeAffinity",
            "TopologySpreading",
            "Unschedulable",
            "PreemptionBasic",
            "SchedulingWithMixedChurn",
            "SchedulingDaemonset",
        ):
            decided = outcomes[f"{name}/{policy}"]
            placed = [node for pod, node in decided.items() if pod.startswith("measure-")]
            assert all(not node.startswith("- ") for node in placed), (name, policy)
        # The churn's 9-cpu pods fit no node and are decided among the measured pods.
        for name in ("Unschedulable", "SchedulingWithMixedChurn"):
            churned = [
                node
                for pod, node in outcomes[f"{name}/{policy}"].items()
                if pod.startswith("churn-pod-")
            ]
            assert churned and all(node.startswith("- ") for node in churned), (name, policy)
            assert all("Insufficient cpu" in node for node in churned)
        # Every daemonset pod goes to the one node its matchFields names.
        nodes = set(outcomes[f"SchedulingDaemonset/{policy}"].values())
        assert nodes == {"scheduler-perf-node"}, policy
        # The init pods (one each on nodes 0-19) repel the pods their terms match.
        held = {f"scheduler-perf-node-{i}" for i in range(20)}
        for name in ("SchedulingPodAntiAffinity", "SchedulingPodMatchingAntiAffinity"):
            nodes = list(outcomes[f"{name}/{policy}"].values())
            assert not held & set(nodes), (name, policy)
        # The anti-affinity pods repel each other too: one per hostname (the matching
        # variant's pods have no term of their own and may share a node).
        nodes = list(outcomes[f"SchedulingPodAntiAffinity/{policy}"].values())
        assert len(set(nodes)) == len(nodes)
        # maxSkew 5 over the three moon zones (node i is in zone i mod 3); the 100 init
        # pods are not blue, so the measured pods alone count.
        zones = collections.Counter(
            int(node.rsplit("-", 1)[1]) % 3
            for node in outcomes[f"TopologySpreading/{policy}"].values()
        )
        assert max(zones.values()) - min(zones.values()) <= 5


def test_the_preemptors_evict_to_place(quick: dict[str, Any]) -> None:
    """PreemptionBasic: 4 low-priority pods of 900m fill each 4-cpu node; a 3-cpu
    preemptor is placed only after its first decision evicted victims (two decisions)."""
    for row in quick["results"]:
        if row["workload"] == "PreemptionBasic":
            assert row["placed"] == row["measured_pods"] == 20
            assert row["decisions"] == 2 * row["measured_pods"]


def test_the_table_prints_each_floor(bench: ModuleType, quick: dict[str, Any]) -> None:
    table = bench.format_table(quick["results"], ["v134", "legacy"])
    assert "| SchedulingBasic | 100 | 20 | 200 |" in table
    assert "| SchedulingDaemonset | 300 | 0 | 600 |" in table
    assert table.splitlines()[0].endswith("| v134 pods/s | legacy pods/s | Go floor |")
    for name, floor in bench.FLOORS.items():
        (line,) = [row for row in table.splitlines() if row.startswith(f"| {name} |")]
        assert line.endswith(f"| {floor} |")


def test_an_unknown_workload_is_refused_naming_it(bench: ModuleType) -> None:
    with pytest.raises(SystemExit, match="unknown workload/policy: Nope"):
        bench.main(["--quick", "--workloads", "Nope"])
