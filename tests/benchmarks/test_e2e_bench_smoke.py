"""The end-to-end benchmark runs (tiny size): the operator binds every pod, none twice."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_e2e_benchmark_reports_both_rates(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import e2e_bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out = tmp_path / "e2e.json"
    assert e2e_bench.main(["--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["pods"] == 100 and report["nodes"] == 50
    assert report["raw_bindings_per_s"] > 0 and report["operator_pods_per_s"] > 0
    assert report["ratio"] == round(report["operator_pods_per_s"] / report["raw_bindings_per_s"], 3)
