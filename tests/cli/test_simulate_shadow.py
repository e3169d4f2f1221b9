"""``simulate`` with a Shadow policy among its inputs: it never decides a pod as if it
were active; each pod gets the shadow's decision beside the active one (``shadow`` in
the JSON, a line in the table) and the table ends with the shadow's counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from policy_scheduler.cli import main

NAME = "policy-scheduler"


def disk_policy(name: str, presence: bool, **spec: Any) -> dict[str, Any]:
    preference = {"labelPreference": {"label": "disk", "presence": presence}}
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": NAME,
            "priorities": [{"name": "PreferDisk", "weight": 1, "argument": preference}],
            **spec,
        },
    }


def our_pod(name: str, **kw: Any) -> dict[str, Any]:
    return pod(name, requests={"cpu": "100m"}, schedulerName=NAME, **kw)


NODES = [node("ssd", labels={"disk": "ssd"}), node("hdd")]
PODS = [
    our_pod("web"),
    our_pod("pinned", node_selector={"disk": "ssd"}),
    pod("huge", requests={"cpu": "64"}, schedulerName=NAME),
]


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: Any, json_out: bool
) -> tuple[str, str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(objects)))
    argv = ["simulate", "-f", str(path)] + (["-o", "json"] if json_out else [])
    assert main(argv) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_json_carries_each_shadows_decision_beside_the_active_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = simulate(
        tmp_path,
        capsys,
        *NODES,
        *PODS,
        disk_policy("trial", False, mode="Shadow"),
        disk_policy("active", True),
        json_out=True,
    )
    report = json.loads(out)
    assert report["policy"] == "active"  # the shadow decides no pod as if it were active
    decisions = {d["pod"]: d for d in report["decisions"]}
    assert {pod: d["node"] for pod, d in decisions.items()} == {
        "default/web": "ssd",
        "default/pinned": "ssd",
        "default/huge": None,
    }
    assert decisions["default/web"]["shadow"] == [{"policy": "trial", "node": "hdd", "message": ""}]
    assert decisions["default/pinned"]["shadow"] == [
        {"policy": "trial", "node": "ssd", "message": ""}
    ]
    [huge] = decisions["default/huge"]["shadow"]
    assert huge["node"] is None and huge["message"].startswith("0/2 nodes are available")


def test_without_shadows_decisions_have_no_shadow_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = simulate(tmp_path, capsys, *NODES, *PODS, disk_policy("active", True), json_out=True)
    assert all("shadow" not in d for d in json.loads(out)["decisions"])


def test_the_table_shows_the_shadows_node_and_its_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = simulate(
        tmp_path,
        capsys,
        *NODES,
        *PODS,
        disk_policy("active", True),
        disk_policy("trial", False, mode="Shadow"),
        json_out=False,
    )
    lines = out.splitlines()
    web = lines.index("default/web -> ssd  (2 feasible of 2 evaluated, 2 nodes)")
    assert lines[web + 1] == "  shadow 'trial' -> hdd"
    assert "  shadow 'trial' fits nowhere: 0/2 nodes are available: 2 Insufficient cpu." in lines
    assert lines[-1] == (
        "shadow policy 'trial': 3 pod(s) compared: 1 on the same node, 1 on another node, "
        "0 placed by the active policy only, 0 by the shadow only, 1 by neither"
    )


def test_a_shadow_alone_decides_nothing_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trial = disk_policy("trial", False, mode="Shadow", schedulerName="gpu")
    out, err = simulate(
        tmp_path, capsys, *NODES, pod("web", schedulerName="gpu"), trial, json_out=True
    )
    assert json.loads(out)["decisions"] == []
    assert (
        "warning: Shadow policy 'trial' decides nothing: no active SchedulingPolicy serves "
        'schedulerName "gpu": nothing to compare with (its pods wait for one)'
    ) in err.splitlines()
    assert "note: skipping 1 pending pod(s) of schedulerName 'gpu': no policy serves it" in err


def test_policy_flag_decides_every_pod_with_a_shadow_policy_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --policy previews one policy alone, whatever its mode.
    policy_file = tmp_path / "trial.yaml"
    policy_file.write_text(yaml.safe_dump(disk_policy("trial", False, mode="Shadow")))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([*NODES, our_pod("web")]))
    assert main(["simulate", "-f", str(cluster), "--policy", str(policy_file), "-o", "json"]) == 0
    [decision] = json.loads(capsys.readouterr().out)["decisions"]
    assert decision["node"] == "hdd" and "shadow" not in decision


def test_the_summary_stays_one_line_per_pod_and_counts_shadows_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    trial = disk_policy("trial", False, mode="Shadow")
    path.write_text(yaml.safe_dump_all([*NODES, *PODS, disk_policy("active", True), trial]))
    assert main(["simulate", "-f", str(path), "-o", "summary"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[:2] == ["default/web -> ssd", "default/pinned -> ssd"]
    assert len(out.splitlines()) == 3
    assert err.splitlines()[-1] == (
        "shadow policy 'trial': 3 pod(s) compared: 1 on the same node, 1 on another node, "
        "0 placed by the active policy only, 0 by the shadow only, 1 by neither"
    )
