"""The end-to-end benchmark runs (tiny size): the operator binds every pod, none twice,
the no-op operator with the two writes binds its own pod stream, and the report holds
every figure docs/performance.md quotes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_e2e_benchmark_reports_the_operator_beside_its_floors(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import e2e_bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out = tmp_path / "e2e.json"
    assert e2e_bench.main(["--quick", "--no-writes-floor", "--json", str(out)]) == 0
    [report] = json.loads(out.read_text())  # one cluster size with --quick
    assert report["pods"] == 100 and report["nodes"] == 50 and report["bound_pods"] == 100
    for figure in (
        "operator_cpu_ms_per_pod",
        "operator_pods_per_s",
        "operator_rss_mib",
        "kopf_floor_cpu_ms_per_event",
        "raw_bindings_per_s",
        "raw_client_cpu_ms_per_binding",
    ):
        assert report[figure] > 0, figure
    assert report["ratio"] == report["operator_pods_per_s"] / report["raw_bindings_per_s"]
    assert report["event_loop"] == "uvloop"  # installed with the project: what runs


def test_the_own_stack_floor_binds_each_pod_once_and_reports_its_cpu() -> None:
    """noop_operator.py --writes: Kopf doing only the binding and the Scheduled event
    of each pending pod binds every pod of the stream, none twice."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import e2e_bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    report = asyncio.run(e2e_bench.writes_floor_alone(nodes=10, pods=40))
    assert report["bound"] == 40 and report["most_bindings_of_a_pod"] == 1
    assert report["writes_floor_cpu_ms_per_pod"] > 0
