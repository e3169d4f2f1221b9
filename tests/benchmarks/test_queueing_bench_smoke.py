"""The QueueingHints benchmark runs on a small cluster: before hints a storm of node
updates re-decides every unschedulable pod on each label change; with hints, none."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "queueing_bench.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("queueing_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("queueing_bench", module)
    spec.loader.exec_module(module)
    return module


def test_a_storm_costs_no_redecisions_with_hints() -> None:
    bench = _load()
    before, _ = bench.run(5, 40, 2, today=True)
    after, _ = bench.run(5, 40, 2, today=False)
    assert before == 2 * 40  # one irrelevant label change per round wakes every pod
    assert after == 0
