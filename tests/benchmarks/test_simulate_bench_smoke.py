"""The simulate benchmark's quick mode runs end to end on a kubectl-shaped dump.

No timing is asserted: what is checked is what a reader of docs/performance.md relies
on. The dump looks like ``kubectl get -o json`` (a List of Nodes, bound and pending
Pods owned by ReplicaSets, the ReplicaSets and Services), every command exits 0, the
summary has one line per pending pod, and ``--detail`` shrinks the JSON output.
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

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "simulate_bench.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simulate_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("simulate_bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("simulate-bench")
    report: dict[str, Any] = bench.main(
        ["--quick", "--json", str(out / "report.json"), "--keep", str(out / "work")]
    )
    report["_dir"] = out
    return report


def test_the_dump_is_a_kubectl_list(bench: ModuleType) -> None:
    dump = bench.generate(10, 40, 8)
    assert (dump["apiVersion"], dump["kind"]) == ("v1", "List")
    kinds = collections.Counter(item["kind"] for item in dump["items"])
    assert kinds["Node"] == 10 and kinds["Pod"] == 48
    assert kinds["ReplicaSet"] >= 1 and kinds["Service"] >= 1
    pods = [item for item in dump["items"] if item["kind"] == "Pod"]
    assert sum(1 for p in pods if "nodeName" not in p["spec"]) == 8
    for p in pods:
        (owner,) = p["metadata"]["ownerReferences"]
        assert owner["kind"] == "ReplicaSet" and owner["controller"] is True
        assert p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    # Deterministic: the same seed writes the same cluster.
    assert bench.generate(10, 40, 8) == dump


def test_quick_mode_loads_and_runs_every_command(quick: dict[str, Any]) -> None:
    load = quick["load"]
    assert (load["nodes"], load["pending"]) == (50, 20)
    assert load["read_seconds"] > 0 and load["seconds"] > 0
    assert quick["summary"]["exit_code"] == 0
    assert quick["summary"]["lines"] == 20
    assert set(quick["json"]) == {"all", "top=3", "none"}
    for row in (quick["summary"], *quick["json"].values()):
        assert row["exit_code"] == 0, row["stderr"]
        assert row["seconds"] > 0 and row["peak_rss_mib"] > 0


def test_detail_shrinks_the_json(quick: dict[str, Any]) -> None:
    sizes = {detail: row["output_bytes"] for detail, row in quick["json"].items()}
    assert sizes["all"] > sizes["top=3"] > sizes["none"] > 0
    work = quick["_dir"] / "work"
    for detail in ("all", "top3", "none"):
        report = json.loads((work / f"decisions-{detail}.json").read_text())
        assert len(report["decisions"]) == 20


def test_report_file_and_table(bench: ModuleType, quick: dict[str, Any]) -> None:
    written = json.loads((quick["_dir"] / "report.json").read_text())
    assert written["meta"]["config"] == {
        "nodes": 50,
        "running": 100,
        "pending": 20,
        "format": "json",
        "seed": 1,
        "policy": "legacy default",
    }
    table = bench.format_table(quick)
    assert "simulate -o summary" in table and "load (read, parse)" in table
    assert "-o json --detail none" in table


def test_the_yaml_dump_reads_the_same(bench: ModuleType, tmp_path: Path) -> None:
    report = bench.main(
        ["--nodes", "5", "--running", "10", "--pending", "3", "--yaml", "--keep", str(tmp_path)]
    )
    assert report["meta"]["config"]["format"] == "yaml"
    assert (report["load"]["nodes"], report["load"]["pending"]) == (5, 3)
    assert report["summary"]["lines"] == 3


def test_the_v130_profile_and_the_a_b(bench: ModuleType, tmp_path: Path) -> None:
    """``--v130`` decides with kube-scheduler v1.30's default profile; ``--ab`` runs both
    in alternating pairs and reports each side's CPU seconds."""
    small = ["--nodes", "8", "--running", "16", "--pending", "4"]
    report = bench.main([*small, "--v130", "--keep", str(tmp_path / "v130")])
    assert report["meta"]["config"]["policy"] == "kube-scheduler v1.30 default profile"
    assert report["summary"]["exit_code"] == 0, report["summary"]["stderr"]
    assert report["summary"]["lines"] == 4
    assert "NodeResourcesFit" in (tmp_path / "v130" / "decisions-all.json").read_text()
    ab = bench.main([*small, "--ab", "2", "--keep", str(tmp_path / "ab")])["ab"]
    assert ab["exit_codes"] == {"legacy": [0], "v1.30": [0]}
    assert {name: len(values) for name, values in ab["cpu_seconds"].items()} == {
        "legacy": 2,
        "v1.30": 2,
    }
    assert ab["placed"] == {"legacy": 4, "v1.30": 4}
    assert "v1.30 cheaper in" in bench.format_ab({"meta": report["meta"], "ab": ab})
