"""QueueingHints: what a storm of node updates costs with thousands of unschedulable pods.

How it works
------------
The command builds ``--nodes`` nodes labelled ``zone: b`` and ``--pods`` pending pods
whose nodeSelector asks ``zone: a``, served by a SchedulingPolicy of framework plugins
(NodeAffinity, NodeResourcesFit, TaintToleration). Each pod is decided once, for real
(no node fits), and filed unschedulable, as the operator files it: with the plugins
that rejected it (v1.34's QueueingHints), or, with ``--today``, without them (the
behaviour before hints: every scheduling-relevant change wakes every pod).

Then a storm reaches the world's door (:meth:`World.observe`, as the watch feeds it):
``--storm`` rounds, each a status-only update (a heartbeat) of every node and a label
change of one node (a label no pod asks for). After each update every pod the queue
made ready is decided again (that is the cost a wake-up causes: a FailedScheduling
event and a decision each). The clock is a fake one, moved 11 s per round so backoff
never hides a re-decision; the 60 s flush is set beyond the storm.

It prints, for both modes, the re-decisions and the CPU time of the storm (the world's
handling of the updates plus the re-decisions).

Usage::

    python benchmarks/queueing_bench.py [--nodes 100] [--pods 3000] [--storm 5]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from builders import node, pod
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.engine.rejections import rejecting_plugins
from policy_scheduler.state.cache import SchedulerCache
from policy_scheduler.state.queueing import SchedulingQueue
from policy_scheduler.state.world import World

NAME = "hinted"
POLICY: dict[str, Any] = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "p", "uid": "uid-p", "creationTimestamp": "2024-01-01T00:00:00Z"},
    "spec": {
        "schedulerName": NAME,
        "predicates": [
            {"name": "NodeAffinity"},
            {"name": "NodeResourcesFit"},
            {"name": "TaintToleration"},
        ],
        "priorities": [],
    },
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(nodes: int, pods: int, storm: int, *, today: bool) -> tuple[int, float]:
    """Re-decisions and CPU seconds of the storm."""
    clock = Clock()
    queue = SchedulingQueue(clock=clock, unschedulable_timeout=1e9)
    world = World(cache=SchedulerCache(clock=clock), queue=queue)
    world.observe("ADDED", POLICY)
    raws = [node(f"n{i}", labels={"zone": "b"}, conditions={"Ready": "True"}) for i in range(nodes)]
    for raw in raws:
        world.observe("ADDED", copy.deepcopy(raw))
    for k in range(pods):
        raw = pod(f"p{k}", node_selector={"zone": "a"}, requests={"cpu": "100m"})
        raw["spec"]["schedulerName"] = NAME
        world.observe("ADDED", raw)
    scheduler = Scheduler()
    compiled = world.book.policy_for(NAME)
    assert compiled is not None

    def decide_ready() -> int:
        count = 0
        while (queued := queue.pop_nowait()) is not None:
            decision = asyncio.run(scheduler.schedule(queued.pod, world.cache.cluster, compiled))
            assert decision.node is None
            rejected = (
                None if today else rejecting_plugins(compiled, decision, world.cache.cluster.nodes)
            )
            queue.unschedulable(queued, rejected)
            count += 1
        return count

    decide_ready()  # the first decisions: not the storm's
    clock.now += 11
    redecided = 0
    start = time.process_time()
    for round_ in range(storm):
        for raw in raws:
            beat = copy.deepcopy(raw)
            beat["status"]["conditions"][0]["lastHeartbeatTime"] = f"2024-05-01T12:{round_:02d}:00Z"
            world.observe("MODIFIED", beat)
            redecided += decide_ready()
        relabelled = copy.deepcopy(raws[round_ % nodes])
        relabelled["metadata"]["labels"]["rack"] = f"r{round_}"
        world.observe("MODIFIED", relabelled)
        clock.now += 11
        redecided += decide_ready()
    return redecided, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--storm", type=int, default=5)
    args = parser.parse_args()
    updates = args.storm * (args.nodes + 1)
    print(f"{args.pods} unschedulable pods, {args.nodes} nodes, {updates} node updates")
    for today in (True, False):
        redecided, cpu = run(args.nodes, args.pods, args.storm, today=today)
        mode = "before hints (today)" if today else "QueueingHints (v1.34)"
        print(f"{mode:24} re-decisions {redecided:7d}  CPU {cpu:7.2f} s")


if __name__ == "__main__":
    main()
