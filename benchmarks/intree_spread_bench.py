"""In-tree PodTopologySpread and InterPodAffinity against their legacy counterparts.

How it works
------------
kube-scheduler v1.30's default profile replaces the legacy default policy's
SelectorSpreadPriority with PodTopologySpread (system default constraints: every pod
owned by a ReplicaSet or selected by a Service is spread over hostnames and zones) and
MatchInterPodAffinity / InterPodAffinityPriority with InterPodAffinity. This benchmark
times exactly those parts, on ``simulate_bench``'s generated dump (``--nodes`` nodes,
``--running`` bound pods, ``--pending`` pods to decide, ReplicaSets and Services, some
deployments with preferred anti-affinity and topology spread), pod after pod:

* **legacy**: MatchInterPodAffinity over the nodes as the engine's plan calls it
  (skipped when its ``fits_everywhere`` hint says so, else on the screened positions of
  the sampled nodes), then InterPodAffinityPriority and SelectorSpreadPriority over them;
* **in-tree**: InterPodAffinity's and PodTopologySpread's predicates the same way
  (``never_fails`` first), then their priorities.

The sampled nodes are the next ``num_feasible_nodes_to_find`` nodes (500 of 5000 with
the adaptive percentage) of the NodeTree order, in rotation, as a decision that finds
every node feasible samples them. Both sides run on the same cluster, alternating which
goes first from pod to pod (same-minute A/B); then the pod is placed on its sample's
first node, so that later pods see it (``--whole`` also times the legacy default
policy's whole decision of the pod, for scale). Each side gets a fresh :class:`CycleState`
(per-pod work included in its time). Reported: total CPU seconds per side, per-pod
median and 99th percentile, and the ratio; ``--repeat`` runs the whole queue again on a
fresh cluster and reports each round.

``--hard`` turns the deployments' preferred anti-affinity into required terms and their
topology spread into DoNotSchedule, so that the Filters work too (the legacy side then
also runs the EvenPodsSpread predicate).

Usage::

    python benchmarks/intree_spread_bench.py [--nodes 5000] [--running 10000]
        [--pending 1000] [--repeat 3] [--hard] [--json FILE] [--profile in-tree|legacy]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

try:
    import policy_scheduler  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate_bench import generate

from policy_scheduler import names
from policy_scheduler.engine import catalogue  # noqa: F401  (registers the legacy names)
from policy_scheduler.engine.algorithm import Scheduler, num_feasible_nodes_to_find
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.functions import (
    REGISTRY,
    CycleState,
    PolicySettings,
    Predicate,
    Priority,
    hints_of,
)
from policy_scheduler.engine.intree.interpodaffinity import InterPodAffinity
from policy_scheduler.engine.intree.podtopologyspread import PodTopologySpread
from policy_scheduler.engine.nodeinfo import NodeInfo
from policy_scheduler.objects import (
    WORKLOAD_KINDS,
    Pod,
    parse_node,
    parse_pod,
    parse_workload,
)
from policy_scheduler.policy import default_policy

SETTINGS = PolicySettings()
Side = tuple[list[Predicate], list[Priority]]


def build(dump: dict[str, Any]) -> tuple[ClusterState, list[Pod]]:
    state = ClusterState()
    pending: list[Pod] = []
    for item in dump["items"]:
        kind = item["kind"]
        if kind == "Node":
            state.set_node(parse_node(item))
        elif kind in WORKLOAD_KINDS:
            state.set_workload(parse_workload(item))
    for item in dump["items"]:
        if item["kind"] == "Pod":
            pod = parse_pod(item)
            if pod.node_name:
                state.add_pod(pod)
            else:
                pending.append(pod)
    return state, pending


def harden(dump: dict[str, Any]) -> None:
    """``--hard``: the deployments' preferred anti-affinity becomes required and their
    topology spread DoNotSchedule, so that both Filters have work (in place)."""
    for item in dump["items"]:
        if item["kind"] != "Pod":
            continue
        spec = item["spec"]
        anti = spec.get("affinity", {}).get("podAntiAffinity")
        if anti and "preferredDuringSchedulingIgnoredDuringExecution" in anti:
            preferred = anti.pop("preferredDuringSchedulingIgnoredDuringExecution")
            anti["requiredDuringSchedulingIgnoredDuringExecution"] = [
                p["podAffinityTerm"] for p in preferred
            ]
        for constraint in spec.get("topologySpreadConstraints", []):
            constraint["whenUnsatisfiable"] = "DoNotSchedule"


def sides(hard: bool) -> dict[str, Side]:
    spread = PodTopologySpread(None, None)  # type: ignore[arg-type]
    affinity = InterPodAffinity(None, None)  # type: ignore[arg-type]
    # With --hard the legacy side also filters topology spread (EvenPodsSpread), as the
    # in-tree PodTopologySpread does.
    extra = [REGISTRY.predicates[names.EVEN_PODS_SPREAD]] if hard else []
    return {
        "legacy": (
            [REGISTRY.predicates[names.MATCH_INTER_POD_AFFINITY], *extra],
            [
                REGISTRY.priorities[names.INTER_POD_AFFINITY],
                REGISTRY.priorities[names.SELECTOR_SPREAD],
            ],
        ),
        "in-tree": (
            [affinity.predicate(), spread.predicate()],
            [affinity.priority(), spread.priority()],
        ),
    }


def decide(side: Side, pod: Pod, state: ClusterState, sample: Sequence[NodeInfo]) -> None:
    """The side's filter on the sample (as the plan calls it), then its priorities."""
    predicates, priorities = side
    cycle = CycleState(pod, state, SETTINGS)
    for predicate in predicates:
        hints = hints_of(predicate)
        if hints.never_fails is not None and hints.never_fails(pod):
            continue
        if hints.fits_everywhere is not None and hints.fits_everywhere(pod, cycle):
            continue
        positions = (
            hints.screen(pod, sample, cycle) if hints.screen is not None else range(len(sample))
        )
        for k in positions:
            predicate(pod, sample[k], cycle)
    for priority in priorities:
        priority(pod, sample, cycle)


def run_round(
    dump: dict[str, Any], profile: str | None, hard: bool, whole: bool
) -> tuple[dict[str, list[float]], cProfile.Profile | None]:
    state, pending = build(dump)
    ordered = state.ordered_nodes()
    wanted = num_feasible_nodes_to_find(len(ordered), 0)
    all_sides = sides(hard)
    times: dict[str, list[float]] = {name: [] for name in all_sides}
    reference = (Scheduler(), compile_policy(default_policy())) if whole else None
    profiler = cProfile.Profile() if profile else None
    start = 0
    gc.collect()
    gc.disable()
    try:
        for i, pod in enumerate(pending):
            sample = [ordered[(start + k) % len(ordered)] for k in range(wanted)]
            start = (start + wanted) % len(ordered)
            order = list(all_sides) if i % 2 == 0 else list(reversed(all_sides))
            for name in order:
                if profiler is not None and name == profile:
                    profiler.enable()
                began = time.process_time()
                decide(all_sides[name], pod, state, sample)
                times[name].append(time.process_time() - began)
                if profiler is not None and name == profile:
                    profiler.disable()
            if reference is not None:
                # The whole legacy default policy's decision, for scale (not in the ratio).
                began = time.process_time()
                asyncio.run(reference[0].schedule(pod, state, reference[1]))
                times.setdefault("legacy decision", []).append(time.process_time() - began)
            state.add_pod(replace(pod, node_name=sample[0].name))
    finally:
        gc.enable()
    return times, profiler


def summarize(times: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, values in times.items():
        ordered = sorted(values)
        out[name] = {
            "total_s": round(sum(values), 3),
            "median_ms": round(statistics.median(values) * 1000, 3),
            "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
        }
    out["ratio"] = round(out["in-tree"]["total_s"] / max(out["legacy"]["total_s"], 1e-9), 3)
    return out


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=10000)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", choices=("in-tree", "legacy"))
    parser.add_argument("--hard", action="store_true", help="required anti-affinity, DoNotSchedule")
    parser.add_argument(
        "--whole", action="store_true", help="also time the legacy default policy's decision"
    )
    args = parser.parse_args(argv)
    dump = generate(args.nodes, args.running, args.pending)
    if args.hard:
        harden(dump)
    rounds = []
    for round_no in range(args.repeat):
        times, profiler = run_round(
            dump, args.profile if round_no == 0 else None, args.hard, args.whole
        )
        report = summarize(times)
        rounds.append(report)
        print(json.dumps({"round": round_no + 1, **report}), flush=True)
        if profiler is not None:
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=2) + "\n")
    return rounds


_: Callable[..., Any] = main

if __name__ == "__main__":
    main()
