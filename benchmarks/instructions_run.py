"""One run for ``instructions_ab.sh``: build engine_bench's cluster, decide PODS pods.

Run from the checkout being measured (its ``benchmarks/engine_bench.py`` and its
``operator/`` on PYTHONPATH); ``PODS`` 0 decides nothing (the build alone).
"""

from __future__ import annotations

import asyncio
import gc
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd() / "benchmarks"))
import engine_bench


def main() -> None:
    nodes, pods, workload = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    random.seed(1)
    spec = engine_bench.ClusterSpec(nodes=nodes, bound_per_node=2)
    plan = engine_bench.prepare(workload, spec, max(pods, 1), engine_bench.policies(), 1)
    plan.pods[:] = plan.pods[:pods]
    gc.collect()
    gc.freeze()  # no collector pass may land in one side's decisions only
    gc.disable()
    asyncio.run(engine_bench.drive(plan, 1e9, None))


if __name__ == "__main__":
    main()
