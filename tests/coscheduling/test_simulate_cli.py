"""``policy-scheduler simulate`` on a cluster with gangs: placed all or nothing, and the
table and the JSON say which group a decision was planned with and why it was not placed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy_scheduler.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gang-scheduling.yaml"
WHY_B = (
    'Coscheduling: pod group "ml/train-b": 1 of 3 members would fit; none is placed '
    "(ml/train-b-1: 0/2 nodes are available: 2 Insufficient cpu.)"
)


def test_json_names_the_gang_and_why_it_was_not_placed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", str(EXAMPLE), "-o", "json", "--detail", "none"]) == 0
    decisions = json.loads(capsys.readouterr().out)["decisions"]
    got = {d["pod"]: (d["node"], d["message"], d["gang"]) for d in decisions}
    train_a = {"name": "ml/train-a", "minMember": 3}
    train_b = {"name": "ml/train-b", "minMember": 3}
    assert [pod for pod, (node, _, _) in got.items() if node is not None] == [
        "ml/train-a-0",
        "ml/train-a-1",
        "ml/train-a-2",
    ]
    assert got["ml/train-a-0"][1:] == ("", train_a)
    for i in range(3):
        assert got[f"ml/train-b-{i}"] == (None, WHY_B, train_b)


def test_the_table_says_all_or_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("policy 'gangs': 3/6 pods scheduled\n")
    assert f"ml/train-b-0: not scheduled: {WHY_B}\n" in out
    assert out.count("  gang ml/train-b (minMember 3): all or nothing, none of it placed\n") == 3
    assert (
        out.count("  gang ml/train-a (minMember 3): all or nothing, placed with its group\n") == 3
    )


def test_summary_lines_carry_the_groups_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", str(EXAMPLE), "-o", "summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "ml/train-a-0 -> gpu-1",
        "ml/train-a-1 -> gpu-2",
        "ml/train-a-2 -> gpu-1",
        f"ml/train-b-0: {WHY_B}",
        f"ml/train-b-1: {WHY_B}",
        f"ml/train-b-2: {WHY_B}",
    ]
