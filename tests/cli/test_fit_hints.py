"""``simulate`` tells what would make an unscheduled pod fit: the JSON key and the table lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod
from policy_scheduler.cli import main


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: Any, json_out: bool
) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(objects)))
    # The test pods keep the API's default schedulerName: the default policy serves it here.
    argv = ["simulate", "-f", str(path), "--scheduler-name", "default-scheduler"]
    argv += ["-o", "json"] if json_out else []
    assert main(argv) == 0
    return capsys.readouterr().out


def running(name: str, node_name: str, cpu: str) -> dict[str, Any]:
    return pod(name, node_name=node_name, requests={"cpu": cpu})


TAINTED = node("gpu-1", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
#: n1 with 500m of its 2 cpus left, and a tainted node with room.
BUSY = [node("n1", cpu="2"), running("batch", "n1", "1500m"), TAINTED]


def test_json_carries_hints_for_a_pod_that_fits_nowhere_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = simulate(
        tmp_path,
        capsys,
        *BUSY,
        node("n2", cpu="2"),
        running("batch2", "n2", "1500m"),
        pod("small", requests={"cpu": "100m"}),
        pod("web", requests={"cpu": "4"}),
        json_out=True,
    )
    decisions = {d["pod"]: d for d in json.loads(out)["decisions"]}
    assert "hints" not in decisions["default/small"]
    assert decisions["default/web"]["node"] is None
    # "small" was assumed on n1 first: the hints see its 100m.
    assert decisions["default/small"]["node"] == "n1"
    # The least change first: a toleration, then the smallest cut of the request.
    assert decisions["default/web"]["hints"] == [
        {"change": "tolerate dedicated=gpu:NoSchedule", "nodes": ["gpu-1"]},
        {"change": "cpu request <= 500m", "nodes": ["n2"]},
        {"change": "cpu request <= 400m", "nodes": ["n1", "n2"]},
    ]


def test_json_hints_are_an_empty_list_when_no_single_change_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = simulate(
        tmp_path,
        capsys,
        node("n1", cpu="1", taints=TAINTED["spec"]["taints"]),
        pod("web", requests={"cpu": "2"}),
        json_out=True,
    )
    [decision] = json.loads(out)["decisions"]
    assert decision["node"] is None and decision["hints"] == []


def test_the_table_shows_one_hint_line_per_change_under_the_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = simulate(tmp_path, capsys, *BUSY, pod("web", requests={"cpu": "1"}), json_out=False)
    lines = out.splitlines()
    assert lines[-2:] == [
        "  hint: tolerate dedicated=gpu:NoSchedule would fit gpu-1",
        "  hint: cpu request <= 500m would fit n1",
    ]


def test_the_table_says_when_no_hint_was_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = simulate(
        tmp_path,
        capsys,
        node("n1", pods=0),
        pod("web"),
        json_out=False,
    )
    assert out.splitlines()[-1] == "  no hint: no single change found that makes it fit"


def test_the_table_shortens_long_hints_and_json_keeps_them_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seven nodes fixed by one label; twelve nodes with twelve different cpu room.
    labelled = [node(f"l{i}") for i in range(7)]
    objects: list[Any] = [*labelled, pod("picky", node_selector={"disk": "ssd"})]
    table = simulate(tmp_path, capsys, *objects, json_out=False)
    assert "  hint: label disk=ssd would fit l0, l1, l2, l3, l4 and 2 more" in table.splitlines()

    crowded = [node(f"c{i:02}", cpu="2") for i in range(12)]
    busy = [running(f"b{i}", f"c{i:02}", f"{1000 + 10 * i}m") for i in range(12)]
    objects = [*crowded, *busy, pod("web", requests={"cpu": "2"})]
    table = simulate(tmp_path, capsys, *objects, json_out=False)
    hint_lines = [line for line in table.splitlines() if line.startswith("  hint: ")]
    assert len(hint_lines) == 10
    assert table.splitlines()[-1] == "  ... 2 more hints (-o json lists them)"
    [decision] = json.loads(simulate(tmp_path, capsys, *objects, json_out=True))["decisions"]
    assert len(decision["hints"]) == 12
    # The smallest cut first, though it fits only the node with most room; the largest
    # cut fits every node.
    assert decision["hints"][0] == {"change": "cpu request <= 1", "nodes": ["c00"]}
    assert decision["hints"][-1] == {
        "change": "cpu request <= 890m",
        "nodes": [f"c{i:02}" for i in range(12)],
    }


def test_the_gpu_example_first_hints_a_toleration_not_relabelling_cpu_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Under the GPU policy, a pod of the example cluster fits nowhere: the tainted GPU
    # node wants a toleration, the CPU nodes the accelerator label. Labelling CPU nodes
    # as GPU nodes changes what they claim to be: it comes last.
    root = Path(__file__).resolve().parents[2]
    cluster = root / "examples" / "cluster.yaml"
    gpu = root / "examples" / "policies" / "gpu.yaml"
    assert main(["simulate", "-f", str(cluster), "--policy", str(gpu), "-o", "json"]) == 0
    decisions = {d["pod"]: d for d in json.loads(capsys.readouterr().out)["decisions"]}
    hints = decisions["shop/payments-api"]["hints"]
    assert hints == [
        {"change": "tolerate nvidia.com/gpu=present:NoSchedule", "nodes": ["node-b2"]},
        {
            "change": "label accelerator=nvidia-t4",
            "nodes": ["node-a1", "node-a2", "node-b1", "node-c1"],
        },
    ]
