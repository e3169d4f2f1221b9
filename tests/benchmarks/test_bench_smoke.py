"""The engine benchmark's quick mode runs end to end and reports every pod it was given.

No timing is asserted (CI machines vary); what is checked is what a reader of the report
relies on: one run per workload, every requested pod decided, latencies and memory
figures present, and the JSON and plot files written.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_bench.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engine_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("engine_bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load()


@pytest.fixture(scope="module")
def quick(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench")
    argv = ["--quick", "--json", str(out / "report.json")]
    if importlib.util.find_spec("matplotlib") is not None:
        argv += ["--plot", str(out / "plot.png")]
    report: dict[str, Any] = bench.main(argv)
    report["_dir"] = out
    return report


def test_quick_mode_runs_every_workload_once(bench: ModuleType, quick: dict[str, Any]) -> None:
    assert [(r["nodes"], r["workload"]) for r in quick["runs"]] == [
        (100, workload) for workload in bench.WORKLOADS
    ]


@pytest.mark.parametrize(
    "workload",
    [
        pytest.param("basic", id="basic"),
        pytest.param("node-affinity", id="node-affinity"),
        pytest.param("anti-affinity", id="anti-affinity"),
        pytest.param("topology-spread", id="topology-spread"),
        pytest.param("churn", id="churn"),
    ],
)
def test_every_pod_is_decided_and_placed(quick: dict[str, Any], workload: str) -> None:
    (run,) = [r for r in quick["runs"] if r["workload"] == workload]
    assert run["decided"] == run["pods_requested"] > 0
    assert not run["budget_hit"]
    # The synthetic clusters have room for every pod of every workload.
    assert run["scheduled"] == run["decided"]
    assert run["unschedulable"] == 0
    latency = run["latency_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    assert run["pods_per_s"] > 0
    # 100 nodes, and during churn one newcomer at a time.
    assert 0 < run["feasible_mean"] <= run["nodes_evaluated_mean"] <= 101


def test_quick_requests_200_pods_except_where_hostnames_run_out(quick: dict[str, Any]) -> None:
    requested = {r["workload"]: r["pods_requested"] for r in quick["runs"]}
    # 100 nodes: 20 already hold an anti-affinity pod, 3 are tainted NoSchedule.
    assert requested == {
        "basic": 200,
        "node-affinity": 200,
        "anti-affinity": 77,
        "topology-spread": 200,
        "churn": 200,
    }


def test_node_affinity_pods_land_in_two_of_three_zones(quick: dict[str, Any]) -> None:
    (run,) = [r for r in quick["runs"] if r["workload"] == "node-affinity"]
    # zone-a and zone-b hold 67 of the 100 nodes, minus the NoSchedule-tainted ones.
    assert run["feasible_mean"] <= 67


def test_memory_is_measured_per_node_and_per_bound_pod(quick: dict[str, Any]) -> None:
    (memory,) = quick["memory"]
    assert memory["nodes"] == 100
    assert memory["bound_pods"] == 200
    assert memory["bytes_per_node"] > 0
    assert memory["bytes_per_bound_pod"] > 0
    assert memory["peak_rss_bytes"] > 0
    assert memory["node_sites"] and memory["pod_sites"]


def test_bound_series_keeps_nodes_and_raises_bound_pods(quick: dict[str, Any]) -> None:
    points = [(r["bound_per_node"], r["workload"]) for r in quick["bound_series"]]
    assert points == [(0, "basic"), (0, "anti-affinity"), (5, "basic"), (5, "anti-affinity")]
    for run in quick["bound_series"]:
        assert run["nodes"] == 100
        assert run["decided"] == run["pods_requested"]
    before = {r["bound_per_node"]: r["bound_pods_before"] for r in quick["bound_series"]}
    assert before[5] > before[0]


def test_json_report_is_written_with_meta(quick: dict[str, Any]) -> None:
    written = json.loads((quick["_dir"] / "report.json").read_text())
    assert written["runs"] == json.loads(json.dumps(quick["runs"]))
    meta = written["meta"]
    assert meta["machine"]["nproc"] >= 1
    assert meta["machine"]["python"]
    assert meta["date"]
    assert meta["config"]["sizes"] == [100]


def test_plot_is_a_png(quick: dict[str, Any]) -> None:
    path = quick["_dir"] / "plot.png"
    if not path.exists():
        pytest.skip("matplotlib is not installed (pip install -e '.[bench]')")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_names_targets_and_units(bench: ModuleType, quick: dict[str, Any]) -> None:
    table = bench.format_table(quick)
    assert "pods/s" in table and "p99 ms" in table and "B/bound pod" in table
    assert "basic" in table and "churn" in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--workloads", "basic,bogus"], "unknown workload", id="unknown-workload"),
        pytest.param(["--nodes", "100,x"], "comma-separated integers", id="bad-sizes"),
    ],
)
def test_bad_arguments_are_refused(
    bench: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        bench.parser().parse_args(argv)
    assert message in capsys.readouterr().err
