"""The in-tree spread/affinity benchmark runs end to end on a small dump.

No timing is asserted (machines vary): each side is timed for every pending pod, the
legacy decision too when asked, the ratio is reported and the JSON file written; both
the default and the ``--hard`` workloads run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "intree_spread_bench.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("intree_spread_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("intree_spread_bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("hard", [False, True], ids=["default", "hard"])
def test_small_run_times_both_sides_for_every_pod(tmp_path: Path, hard: bool) -> None:
    bench = _load()
    report = tmp_path / "report.json"
    argv = ["--nodes", "120", "--running", "240", "--pending", "30", "--repeat", "1"]
    argv += ["--whole", "--json", str(report)]
    if hard:
        argv.append("--hard")
    rounds = bench.main(argv)
    assert len(rounds) == 1
    (only,) = rounds
    for side in ("legacy", "in-tree", "legacy decision"):
        assert only[side]["total_s"] >= 0
        assert only[side]["median_ms"] <= only[side]["p99_ms"] + 1e-9
    assert only["ratio"] > 0
    assert json.loads(report.read_text()) == rounds


def test_hard_makes_the_filters_work() -> None:
    bench = _load()
    dump = bench.generate(60, 120, 20)
    bench.harden(dump)
    pods = [item for item in dump["items"] if item["kind"] == "Pod"]
    anti = [
        p["spec"]["affinity"]["podAntiAffinity"]
        for p in pods
        if "podAntiAffinity" in p["spec"].get("affinity", {})
    ]
    spread = [c for p in pods for c in p["spec"].get("topologySpreadConstraints", [])]
    assert anti and all(set(a) == {"requiredDuringSchedulingIgnoredDuringExecution"} for a in anti)
    assert spread and {c["whenUnsatisfiable"] for c in spread} == {"DoNotSchedule"}
