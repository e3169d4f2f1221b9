"""The commands a plugin user runs offline, run in-process: ``simulate``, ``validate``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import pod
from policy_scheduler import cli

POLICY_API = "policyscheduler.io/v1alpha1"


def policy_doc(spec: Mapping[str, Any], name: str = "plugins") -> dict[str, Any]:
    return {
        "apiVersion": POLICY_API,
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": {"schedulerName": "policy-scheduler", **spec},
    }


def pending(name: str, second: int, **kwargs: Any) -> dict[str, Any]:
    """A pending pod of ours, queued ``second`` seconds after the first (queue order)."""
    obj = pod(name, namespace="ns", requests=kwargs.pop("requests", {"cpu": "100m"}), **kwargs)
    obj["spec"]["schedulerName"] = "policy-scheduler"
    obj["metadata"]["creationTimestamp"] = f"2024-05-01T10:00:{second:02d}Z"
    return obj


@dataclass
class Ran:
    code: int
    out: str
    err: str

    @property
    def decisions(self) -> dict[str, dict[str, Any]]:
        """``-o json``'s decisions by pod name (a pod decided twice: its last decision)."""
        return {d["pod"].split("/", 1)[1]: d for d in json.loads(self.out)["decisions"]}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def write(path: Path, documents: Sequence[Mapping[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return str(path)


def simulate(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    objects: Sequence[Mapping[str, Any]],
    spec: Mapping[str, Any],
    *options: str,
) -> Ran:
    cluster = write(tmp_path / "cluster.yaml", objects)
    policy = write(tmp_path / "policy.yaml", [policy_doc(spec)])
    return run(capsys, "simulate", "-f", cluster, "--policy", policy, *(options or ("-o", "json")))
