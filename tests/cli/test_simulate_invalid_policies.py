"""``simulate`` with an invalid policy among its inputs does what the operator does.

The operator refuses an invalid SchedulingPolicy (``Accepted=False``, reason
``Invalid``) and goes on with the others: the policies that are valid serve their
names, and the built-in default serves the default name. ``simulate`` skips it with a
warning naming the file and the field, and decides every pending pod the rest serve
(troubleshooting's "reproduce it offline" feeds it a dump of the cluster, policies
included). A policy given with ``--policy`` is the one the user asked for: invalid, it
is an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node, pod, policy
from policy_scheduler.cli import main

WEIGHT_ZERO = 'SchedulingPolicy "broken": spec.priorities[0].weight: must be a positive integer'


def write(tmp_path: Path, name: str, *docs: Any) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def named(body: dict[str, Any], name: str) -> dict[str, Any]:
    body["metadata"] = {"name": name}
    return body


def broken_policy() -> dict[str, Any]:
    """Claims the default name, with a zero weight: the operator refuses it."""
    return named(policy(priorities=[("MostRequestedPriority", 0)]), "broken")


def gpu_policy() -> dict[str, Any]:
    return named(policy(priorities=[("MostRequestedPriority", 1)], schedulerName="gpu"), "gpu")


def cluster() -> list[dict[str, Any]]:
    return [
        node("n1", cpu="4"),
        pod("web", requests={"cpu": "1"}, schedulerName="policy-scheduler"),
        pod("train", requests={"cpu": "1"}, schedulerName="gpu"),
    ]


@pytest.mark.parametrize("together", [True, False], ids=["one-file", "own-file"])
def test_an_invalid_policy_is_skipped_with_a_warning_and_the_rest_decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], together: bool
) -> None:
    if together:
        files = [write(tmp_path, "dump.yaml", *cluster(), broken_policy(), gpu_policy())]
    else:
        files = [
            write(tmp_path, "dump.yaml", *cluster()),
            write(tmp_path, "broken.yaml", broken_policy()),
            write(tmp_path, "gpu.yaml", gpu_policy()),
        ]
    argv = ["simulate", "-o", "json"] + [arg for path in files for arg in ("-f", path)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    decisions = {d["pod"]: d for d in json.loads(out)["decisions"]}
    # The built-in default serves the default name, as when the operator refuses it.
    assert decisions["default/web"]["node"] == "n1"
    assert decisions["default/train"]["node"] == "n1"
    assert "MostRequestedPriority" in decisions["default/train"]["scores"]["n1"]["priorities"]
    assert "LeastRequestedPriority" in decisions["default/web"]["scores"]["n1"]["priorities"]
    source = files[0] if together else files[1]
    [warning] = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warning.startswith(
        f"warning: {source}: skipping an invalid policy, as the operator refuses it "
        "(Accepted=False, reason Invalid): "
    )
    assert WEIGHT_ZERO in warning


def test_an_invalid_legacy_policy_is_skipped_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "NoSuchPredicate"}]}
    path = write(tmp_path, "dump.yaml", *cluster(), legacy)
    assert main(["simulate", "-f", path, "-o", "summary"]) == 0
    out, err = capsys.readouterr()
    assert "default/web -> n1" in out
    assert 'unknown predicate "NoSuchPredicate"' in err


def test_an_invalid_policy_given_with_policy_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = write(tmp_path, "dump.yaml", *cluster())
    chosen = write(tmp_path, "broken.yaml", broken_policy())
    assert main(["simulate", "-f", dump, "--policy", chosen]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ") and WEIGHT_ZERO in err
