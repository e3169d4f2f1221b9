"""The DRA benchmark runs end to end on a small cluster, and under its load no device is
given twice: more pods than devices, each pod placed holds its own."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "dra_bench.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dra_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("dra_bench", module)
    spec.loader.exec_module(module)
    return module


def test_more_pods_than_devices_get_each_its_own() -> None:
    # 12 nodes x 2 GPUs, of which the odd ones have 80Gi: the claims (>= 40Gi) fit both.
    report = _load().main(["--nodes", "12", "--devices", "2", "--pods", "40"])
    assert report["decided"] == 40
    assert report["placed"] == report["devices_given"] == 24
    assert report["given_twice"] == 0


def test_without_claims_every_pod_is_placed() -> None:
    report = _load().main(["--nodes", "12", "--devices", "2", "--pods", "40", "--without-claims"])
    assert report["placed"] == 40 and report["devices_given"] == 0
