"""One scheduling decision: filter the nodes, score the feasible ones, pick the best.

This is kube-scheduler's legacy ``genericScheduler.Schedule`` (v1.13-v1.17):

1. **Basic checks** — every PVC the pod mounts must exist and not be being deleted.
2. **Filter** — nodes are visited in NodeTree order starting where the previous attempt
   stopped (``next_start``), so every node gets its turn across pods. Each node runs the
   policy's predicates in order, stopping at the first failure unless
   ``alwaysCheckAllPredicates``. The search stops once ``numFeasibleNodesToFind`` nodes fit
   (adaptive: 50% minus 1% per 125 nodes, at least 5% and at least 100 nodes; or the
   policy's fixed percentage). The visit runs in chunks through
   :func:`~.parallel.parallelize_until`, yielding to the event loop between chunks.
3. **Score** — every priority scores every feasible node 0..10 (map, then reduce); the
   total is the sum of weight x score, computed here and nowhere else. With no
   priorities every node totals 0.
4. **Select** — among the nodes with the highest total, round-robin
   (``lastNodeIndex``), in the order the nodes were found.

"Doesn't fit" is a reason, a bug is an error: a predicate that raises propagates.
No node fitting is not an error either: the :class:`Decision` carries kube-scheduler's
summary, ``0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had taints that the
pod didn't tolerate.``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Final

from ..objects import Pod
from .cluster import ClusterState
from .compiler import CompiledPolicy
from .framework import CycleState
from .nodeinfo import NodeInfo
from .parallel import parallelize_until

MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"


@dataclass(slots=True)
class NodeScore:
    total: int
    priorities: dict[str, int]


@dataclass(slots=True)
class Decision:
    pod: Pod
    node: str | None
    feasible: list[str] = field(default_factory=list)
    failed: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, NodeScore] = field(default_factory=dict)
    message: str = ""
    #: Nodes in the cluster when deciding, and how many were looked at.
    num_all_nodes: int = 0
    evaluated: int = 0
    #: Time spent filtering and scoring (the engine's two phases).
    filter_seconds: float = 0.0
    score_seconds: float = 0.0

    @property
    def scheduled(self) -> bool:
        return self.node is not None


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes are enough (numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = 50 - num_all_nodes // 125
        if adaptive < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            adaptive = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    found = num_all_nodes * adaptive // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


def fit_error_message(num_all_nodes: int, failed: dict[str, list[str]]) -> str:
    """FitError.Error(): reasons counted over nodes, sorted as strings."""
    histogram: Counter[str] = Counter()
    for reasons in failed.values():
        histogram.update(reasons)
    parts = sorted(f"{n} {reason}" for reason, n in histogram.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(parts)}."


def basic_checks(pod: Pod, cluster: ClusterState) -> str | None:
    """podPassesBasicChecks: the pod's PVCs exist and are not being deleted."""
    for volume in pod.volumes:
        if volume.kind != "persistentVolumeClaim":
            continue
        claim = cluster.claims.get(f"{pod.namespace}/{volume.handle}")
        if claim is None:
            return f'persistentvolumeclaim "{volume.handle}" not found'
        if claim.deleting:
            return f'persistentvolumeclaim "{volume.handle}" is being deleted'
    return None


class Scheduler:
    """Decides pods one at a time; remembers where to start and whose turn a tie is."""

    def __init__(self, *, chunk_size: int = 64, workers: int = 16) -> None:
        self.next_start = 0
        self.last_node_index = 0
        self.chunk_size = chunk_size
        self.workers = workers

    async def schedule(self, pod: Pod, cluster: ClusterState, policy: CompiledPolicy) -> Decision:
        nodes = cluster.ordered_nodes()
        decision = Decision(pod=pod, node=None, num_all_nodes=len(nodes))
        problem = basic_checks(pod, cluster)
        if problem is not None:
            decision.message = problem
            return decision
        if not nodes:
            decision.message = NO_NODES_AVAILABLE
            return decision

        cycle = CycleState(pod, cluster, policy.settings)
        started = perf_counter()
        feasible = await self._filter(pod, nodes, cycle, policy, decision)
        decision.filter_seconds = perf_counter() - started
        decision.feasible = [info.name for info in feasible]
        if not feasible:
            decision.message = fit_error_message(len(nodes), decision.failed)
            return decision

        started = perf_counter()
        totals = await self._score(pod, feasible, cycle, policy, decision)
        decision.score_seconds = perf_counter() - started
        if len(feasible) == 1:
            # kube-scheduler takes a lone feasible node without consulting priorities
            # (nor the round-robin); the scores above are only for people to read.
            decision.node = feasible[0].name
        else:
            decision.node = self._select(feasible, totals)
        return decision

    async def _filter(
        self,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
    ) -> list[NodeInfo]:
        all_nodes = len(nodes)
        if not policy.predicates:
            return list(nodes)
        wanted = num_feasible_nodes_to_find(all_nodes, policy.percentage_of_nodes_to_score)
        start = self.next_start % all_nodes
        predicates = policy.predicates
        check_all = policy.always_check_all_predicates
        feasible: list[NodeInfo] = []
        failed = decision.failed
        processed = 0

        def check(lo: int, hi: int) -> bool:
            nonlocal processed
            for i in range(lo, hi):
                info = nodes[(start + i) % all_nodes]
                reasons: list[str] = []
                for _, fn in predicates:
                    result = fn(pod, info, cycle)
                    if result:
                        reasons.extend(result)
                        if not check_all:
                            break
                processed = i + 1
                if reasons:
                    failed[info.name] = reasons
                else:
                    feasible.append(info)
                    if len(feasible) >= wanted:
                        return False
            return True

        await parallelize_until(all_nodes, check, chunk_size=self.chunk_size, workers=self.workers)
        self.next_start = (start + processed) % all_nodes
        decision.evaluated = processed
        return feasible

    async def _score(
        self,
        pod: Pod,
        feasible: list[NodeInfo],
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
    ) -> list[int]:
        totals = [0] * len(feasible)
        per_node: list[dict[str, int]] = [{} for _ in feasible]
        for name, weight, fn in policy.priorities:
            scores = fn(pod, feasible, cycle)
            for i, score in enumerate(scores):
                per_node[i][name] = score
                totals[i] += weight * score
            # A big cluster is scored over several turns of the loop, not in one block.
            if len(feasible) > self.chunk_size:
                await asyncio.sleep(0)
        for i, info in enumerate(feasible):
            decision.scores[info.name] = NodeScore(totals[i], per_node[i])
        return totals

    def _select(self, feasible: list[NodeInfo], totals: list[int]) -> str:
        best = max(totals)
        tied = [i for i, total in enumerate(totals) if total == best]
        pick = tied[self.last_node_index % len(tied)]
        self.last_node_index += 1
        return feasible[pick].name
