"""The seeds' own dialect: seed 003's sample Policy converts and simulates.

The file (``corpus/valid/seed-003-ordered-policy.json``, verbatim from the seed) writes an
``order`` on each predicate and names HostName by its old name, PodFitsHost. kube-scheduler
ignored ``order``; the seeds describe it as the way to override the fixed order, so
``convert`` keeps it, and the file's order decides which failure a node reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from policy_scheduler.cli import main
from policy_scheduler.legacy import convert_legacy, load_legacy

SEED_003 = Path(__file__).parent / "corpus" / "valid" / "seed-003-ordered-policy.json"


def test_seed_003_converts_with_its_own_order_and_todays_names() -> None:
    result = convert_legacy(load_legacy(SEED_003.read_text()))
    ordered = result.policy.ordered_predicates()
    assert ordered is not None
    assert [(entry.name, entry.order) for entry in ordered] == [
        ("HostName", 1),
        ("PodFitsHostPorts", 2),
        ("PodFitsResources", 3),
        ("PodToleratesNodeTaints", 4),
        ("NoDiskConflict", 5),
        ("MatchNodeSelector", 6),
    ]
    assert [(p.name, p.weight) for p in result.policy.spec.priorities or ()] == [
        ("LeastRequestedPriority", 1),
        ("BalancedResourceAllocation", 1),
        ("ServiceSpreadingPriority", 1),
        ("EqualPriority", 1),
    ]
    assert result.policy.spec.hardPodAffinitySymmetricWeight == 10


PD = {"name": "data", "gcePersistentDisk": {"pdName": "pd-1"}}


def write(tmp_path: Path, *docs: Any) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def test_seed_003_simulates_and_its_order_picks_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "both" fails PodToleratesNodeTaints (order 4) and NoDiskConflict (order 5): the
    # file's order reports the taint; kube-scheduler's fixed order would report the disk.
    cluster = write(
        tmp_path,
        node("both", taints=[{"key": "dedicated", "effect": "NoSchedule"}]),
        node("free"),
        pod("holder", node_name="both", volumes=[PD]),
        pod("web", requests={"cpu": "100m"}, volumes=[PD]),
    )
    code = main(["simulate", "-f", cluster, "--policy", str(SEED_003), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    [decision] = json.loads(out)["decisions"]
    assert decision["node"] == "free"
    assert decision["failedPredicates"] == {
        "both": ["node(s) had taints that the pod didn't tolerate"]
    }
    assert set(decision["scores"]["free"]["priorities"]) == {
        "LeastRequestedPriority",
        "BalancedResourceAllocation",
        "ServiceSpreadingPriority",
        "EqualPriority",
    }
