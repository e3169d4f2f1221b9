"""``simulate`` preempts as the operator would: the JSON key, the table line, the story.

A pod that fits nowhere evicts lower-priority pods: its decision has ``"node": null``
and ``"preemption": {"node", "victims"}``, the victims leave the simulated cluster, and
the same pod is decided again at its place in the queue (a later decision). Every other
decision has ``"preemption": null``. PriorityClasses, PodDisruptionBudgets (policy/v1
and v1beta1) and pending pods' ``status.nominatedNodeName`` are read from the inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod, pod_disruption_budget, priority_class
from policy_scheduler.cli import main

SCHEDULER = "policy-scheduler"


def running(name: str, node_name: str, priority: int, cpu: str = "1500m", **kw: Any) -> dict:
    obj = pod(name, node_name=node_name, requests={"cpu": cpu}, priority=priority, **kw)
    obj["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    return obj


def pending(name: str, cpu: str = "1500m", **spec: Any) -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu}, schedulerName=SCHEDULER, **spec)


#: Two full 2-CPU nodes: n1 runs a priority-10 pod, n2 a priority-0 pod.
FULL = [
    node("n1", cpu="2"),
    node("n2", cpu="2"),
    running("batch-1", "n1", 10, labels={"app": "batch"}),
    running("batch-2", "n2", 0, labels={"app": "batch"}),
]


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: Any, policy: Any = None
) -> list[dict[str, Any]]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(objects)))
    argv = ["simulate", "-f", str(path), "-o", "json"]
    if policy is not None:
        policy_path = tmp_path / "policy.yaml"
        policy_path.write_text(yaml.safe_dump(policy))
        argv += ["--policy", str(policy_path)]
    assert main(argv) == 0
    return list(json.loads(capsys.readouterr().out)["decisions"])


def story(decisions: list[dict[str, Any]]) -> list[tuple[str, str | None, Any]]:
    return [(d["pod"], d["node"], d["preemption"]) for d in decisions]


def test_a_preemptor_is_decided_twice_and_its_victims_leave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decisions = simulate(
        tmp_path, capsys, *FULL, pending("urgent", priority=1000), pending("later", cpu="1")
    )
    assert story(decisions) == [
        ("default/urgent", None, {"node": "n2", "victims": ["default/batch-2"]}),
        ("default/urgent", "n2", None),
        # batch-2 is gone, urgent took its place: nothing left for "later" (priority 0).
        ("default/later", None, None),
    ]
    first = decisions[0]
    assert first["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert list(first)[-1] == "preemption"


def test_the_table_says_whom_it_would_preempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*FULL, pending("urgent", priority=1000)]))
    assert main(["simulate", "-f", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  would preempt default/batch-2 on n2\n" in out
    assert "default/urgent -> n2" in out
    # Two decisions, one pod: the headline counts pods by their last decision.
    assert out.startswith("policy 'default': 1/1 pods scheduled\n")


@pytest.mark.parametrize(
    ("extra", "spec", "reason"),
    [
        pytest.param([], {"priority": 0}, "no node has lower-priority pods", id="no-lower-pods"),
        pytest.param(
            [],
            {"priority": 1000, "preemptionPolicy": "Never"},
            "its preemptionPolicy is Never",
            id="preemption-policy-never",
        ),
        pytest.param(
            [priority_class("polite", 1000, preemption_policy="Never")],
            {"priorityClassName": "polite"},
            "its preemptionPolicy is Never",
            id="class-preemption-policy-never",
        ),
    ],
)
def test_a_pod_that_does_not_preempt_says_why(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[Any],
    spec: dict[str, Any],
    reason: str,
) -> None:
    objects = [*extra, *FULL, pending("p", **spec)]
    assert story(simulate(tmp_path, capsys, *objects)) == [("default/p", None, None)]
    path = tmp_path / "table.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    assert main(["simulate", "-f", str(path)]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if "preempt" in x]
    assert line.startswith("  no preemption: ") and reason in line


def test_a_policy_can_disable_preemption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calm = {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "calm"},
        "spec": {"disablePreemption": True},
    }
    decisions = simulate(tmp_path, capsys, *FULL, pending("urgent", priority=1000), policy=calm)
    assert story(decisions) == [("default/urgent", None, None)]


def test_priority_classes_give_pods_their_priority_wherever_they_are_in_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decisions = simulate(
        tmp_path,
        capsys,
        *FULL,
        pending("urgent", priorityClassName="critical"),
        priority_class("critical", 1000),
        priority_class("everyday", 5, global_default=True),
        # No class named: the global default's 5, which beats batch-2's 0 only.
        pending("routine", cpu="1"),
    )
    assert story(decisions) == [
        ("default/urgent", None, {"node": "n2", "victims": ["default/batch-2"]}),
        ("default/urgent", "n2", None),
        ("default/routine", None, None),  # 5 does not beat batch-1's 10
    ]


def test_a_pod_of_an_unknown_priority_class_is_skipped_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The API server's Priority admission refuses such a pod; the operator reports it and
    # decides the rest, and so does simulate (tests/cli/test_unreadable_pods.py).
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*FULL, pending("p", priorityClassName="gold")]))
    assert main(["simulate", "-f", str(path)]) == 0
    assert (
        f"note: skipping a pod that cannot be read: {path}: "
        "Pod \"default/p\": spec.priorityClassName: no PriorityClass 'gold' found\n"
    ) in capsys.readouterr().err


@pytest.mark.parametrize("version", ["policy/v1", "policy/v1beta1"])
def test_a_budget_protects_its_pods_when_another_node_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    # Without the budget, batch-2 (priority 0) is the cheaper victim; with it, batch-1.
    decisions = simulate(
        tmp_path,
        capsys,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        running("web-1", "n1", 10, labels={"app": "web"}),
        running("db-1", "n2", 0, labels={"app": "db"}),
        pod_disruption_budget("db", {"app": "db"}, 0, api_version=version),
        pending("urgent", priority=1000),
    )
    assert decisions[0]["preemption"] == {"node": "n1", "victims": ["default/web-1"]}


def test_a_pending_pods_nomination_keeps_its_room(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Another scheduler's preemptor is nominated to n1 and waits there with priority
    # 500: our priority-100 pod may not take n1's room, nor preempt there for it.
    theirs = pod("theirs", requests={"cpu": "1500m"}, priority=500)
    theirs["status"] = {"nominatedNodeName": "n1"}
    decisions = simulate(
        tmp_path,
        capsys,
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        running("idle", "n2", 0, cpu="1500m"),
        theirs,
        pending("ours", cpu="1", priority=100),
    )
    assert story(decisions) == [
        ("default/ours", None, {"node": "n2", "victims": ["default/idle"]}),
        ("default/ours", "n2", None),
    ]
    assert decisions[0]["failedPredicates"] == {
        "n1": ["Insufficient cpu"],
        "n2": ["Insufficient cpu"],
    }
