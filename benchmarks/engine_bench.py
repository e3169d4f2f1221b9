"""Engine benchmark: synthetic clusters in the manner of scheduler_perf, scheduled in-process.

How it works
------------
For each cluster size (``--nodes``) the command builds a :class:`ClusterState` from
API-shaped dicts, passed through a JSON round trip (so every object owns its strings, as
objects decoded from a watch do) and parsed by the real parsers ``parse_node`` /
``parse_pod``. The node template is scheduler_perf's ``node-default.yaml`` (4 cpu, 32Gi,
110 pods) in a few shapes, spread over 3 zones of one region, with hostname, instance
type and disk labels, images, and taints on 5% of the nodes (half ``NoSchedule``, half
``PreferNoSchedule``). ``--bound-per-node`` pods (scheduler_perf's ``pod-default.yaml``,
100m / 500Mi) are already bound on every node.

Each workload then schedules ``--pods`` pods, pre-parsed, through the real engine:
``Scheduler().schedule(pod, cluster, compiled_policy)`` and, when a node was chosen,
``cluster.add_pod`` of the pod placed there (the assume step). Only that loop is timed
(cluster construction and parsing are not), per pod and in total:

* ``basic`` — pod-default (requests only), SchedulingBasic;
* ``node-affinity`` — required zone In [zone-a, zone-b] plus a preferred ``disk=ssd``;
* ``anti-affinity`` — required anti-affinity to its own label on ``kubernetes.io/hostname``,
  with a fifth of the nodes already holding such a pod (SchedulingPodAntiAffinity); the
  pod count is capped at the nodes that can still take one;
* ``topology-spread`` — maxSkew 1 on zone (DoNotSchedule) and on hostname
  (ScheduleAnyway); the default policy plus EvenPodsSpread and EvenPodsSpreadPriority, as
  the legacy DefaultProvider did with the EvenPodsSpread feature gate on;
* ``churn`` — ReplicaSet-owned pods (SelectorSpreadPriority has work) while the cache
  changes: every second pod one placed churn pod is deleted, every 25th a node status
  update arrives, every 100th a node joins and the previous newcomer leaves. Pods/s
  counts the whole loop, cache changes included; latency is the decision alone.

Every run uses a fresh cluster and a fresh :class:`Scheduler`, and stops early when its
time budget (``--budget`` seconds) is spent: pods/s is then decided pods over elapsed
time, and the report says how many of the requested pods were decided.

Memory: ``tracemalloc`` counts the bytes still allocated after adding N nodes to an empty
``ClusterState`` (bytes per node: Node, NodeInfo, indexes) and after then binding M pods
(bytes per bound pod: Pod with everything it references, cache entries). Peak RSS is
``getrusage`` of the process that ran the size: each size runs in a forked child so that
sizes do not inherit each other's peak (``--no-isolate`` runs in-process).

The "bound series" (``--series-bound``) keeps the node count fixed and raises the pods
already bound per node, to show whether a decision's cost follows the nodes sampled or
the pods in the cache.

Usage::

    python benchmarks/engine_bench.py [--nodes 100,1000,5000,15000] [--pods N]
        [--workloads basic,node-affinity,anti-affinity,topology-spread,churn]
        [--json FILE] [--plot FILE.png] [--quick] [--profile FILE.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import datetime as dt
import gc
import importlib
import json
import math
import os
import pkgutil
import platform
import pstats
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

try:
    import policy_scheduler  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from policy_scheduler import names
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import (
    CompiledPolicy,
    NotImplementedPolicyError,
    compile_policy,
)
from policy_scheduler.objects import Node, Pod, parse_node, parse_pod, parse_workload
from policy_scheduler.policy import SchedulingPolicy, parse_spec

WORKLOADS = ("basic", "node-affinity", "anti-affinity", "topology-spread", "churn")
DEFAULT_SIZES = (100, 1000, 5000, 15000)

ZONES = ("zone-a", "zone-b", "zone-c")
REGION = "region-1"
#: (instance type, cpu, memory, share of nodes in percent): node-default.yaml first.
SHAPES = (
    ("standard-4", "4", "32Gi", 70),
    ("highmem-8", "8", "64Gi", 20),
    ("large-16", "16", "128Gi", 10),
)
PAUSE_IMAGE = "registry.k8s.io/pause:3.1"

#: Targets on this machine (default policy) and the Go anchor they are set against.
TARGETS: dict[tuple[str, int], dict[str, Any]] = {
    ("basic", 5000): {
        "target_pods_per_s": 680,
        "moonshot_pods_per_s": 1000,
        "anchor": "kube-scheduler scheduler_perf SchedulingBasic 5000 nodes: >= 680 pods/s (Go)",
    },
    ("basic", 15000): {"target_pods_per_s": 400, "anchor": "target only"},
    ("anti-affinity", 5000): {"target_pods_per_s": 100, "anchor": "target only"},
}
TARGET_BYTES_PER_POD = 1024
TARGET_BYTES_PER_NODE = 20 * 1024


# -- synthetic objects, API-shaped ------------------------------------------------------


def _wire(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a watch would deliver it: decoded from JSON, owning all its strings."""
    result: dict[str, Any] = json.loads(json.dumps(obj))
    return result


def _shape(index: int) -> tuple[str, str, str]:
    slot = index % 100
    for kind, cpu, memory, share in SHAPES:
        if slot < share:
            return kind, cpu, memory
        slot -= share
    return SHAPES[0][:3]


def node_object(index: int, *, extra_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Node ``index`` of a synthetic cluster (scheduler_perf node-default.yaml, in shapes)."""
    name = f"node-{index}"
    kind, cpu, memory = _shape(index)
    zone = ZONES[index % len(ZONES)]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": REGION,
        "topology.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/region": REGION,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": kind,
        "disk": "ssd" if index % 2 == 0 else "hdd",
        **(extra_labels or {}),
    }
    spec: dict[str, Any] = {}
    # 5% of the nodes are tainted: 2.5% reserved (NoSchedule), 2.5% draining (PreferNoSchedule).
    if index % 40 == 7:
        spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    elif index % 40 == 27:
        spec["taints"] = [
            {"key": "example.com/maintenance", "value": "true", "effect": "PreferNoSchedule"}
        ]
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-uid-{index}", "labels": labels},
        "spec": spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "MemoryPressure", "status": "False"},
                {"type": "DiskPressure", "status": "False"},
                {"type": "PIDPressure", "status": "False"},
            ],
            "images": [
                {"names": [PAUSE_IMAGE], "sizeBytes": 742472},
                {"names": [f"registry.example/app-{index % 7}:1.0"], "sizeBytes": 250_000_000},
                {"names": ["registry.example/sidecar:2.3"], "sizeBytes": 40_000_000},
            ],
        },
    }


def node_schedulable_by_default(index: int) -> bool:
    """Whether node ``index`` takes a pod without tolerations (no NoSchedule taint)."""
    return index % 40 != 7


def pod_object(
    name: str,
    *,
    cpu: str = "100m",
    memory: str = "500Mi",
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    spread: list[dict[str, Any]] | None = None,
    owner: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """scheduler_perf's pod-default.yaml (pause, port 80, requests = limits), with extras."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if labels:
        metadata["labels"] = labels
    if owner is not None:
        kind, owner_name = owner
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{kind}-{owner_name}",
                "controller": True,
            }
        ]
    resources = {"cpu": cpu, "memory": memory}
    spec: dict[str, Any] = {
        "schedulerName": names.DEFAULT_SCHEDULER_NAME,
        "containers": [
            {
                "name": "pause",
                "image": PAUSE_IMAGE,
                "ports": [{"containerPort": 80}],
                "resources": {"requests": resources, "limits": dict(resources)},
            }
        ],
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    if affinity is not None:
        spec["affinity"] = affinity
    if spread is not None:
        spec["topologySpreadConstraints"] = spread
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if node_name is not None:
        obj["status"] = {"phase": "Running"}
    return obj


def workload_pod(workload: str, index: int) -> dict[str, Any]:
    """Pod ``index`` of a measured workload, as scheduler_perf's templates shape them."""
    name = f"{workload}-{index}"
    if workload == "basic":
        return pod_object(name)
    if workload == "node-affinity":
        return pod_object(
            name,
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["zone-a", "zone-b"],
                                    }
                                ]
                            }
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "disk", "operator": "In", "values": ["ssd"]}
                                ]
                            },
                        }
                    ],
                }
            },
        )
    if workload == "anti-affinity":
        return anti_affinity_pod(name)
    if workload == "topology-spread":
        selector = {"matchLabels": {"color": "blue"}}
        return pod_object(
            name,
            labels={"color": "blue"},
            spread=[
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": selector,
                },
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": selector,
                },
            ],
        )
    if workload == "churn":
        replica_set = f"churn-{index % 10}"
        return pod_object(
            name,
            labels={"app": replica_set, "tier": "churn"},
            owner=("ReplicaSet", replica_set),
        )
    raise ValueError(f"unknown workload {workload!r}")


def anti_affinity_pod(name: str, node_name: str | None = None) -> dict[str, Any]:
    """pod-with-pod-anti-affinity.yaml: one such pod per hostname."""
    return pod_object(
        name,
        node_name=node_name,
        labels={"color": "green", "name": "test"},
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "color", "operator": "In", "values": ["green"]}
                            ]
                        },
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )


def churn_workloads() -> Iterator[dict[str, Any]]:
    for k in range(10):
        yield {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": f"churn-{k}", "namespace": "default", "uid": f"uid-rs-{k}"},
            "spec": {"selector": {"matchLabels": {"app": f"churn-{k}"}}},
        }
    yield {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "churn", "namespace": "default", "uid": "uid-svc-churn"},
        "spec": {"selector": {"tier": "churn"}},
    }


# -- clusters -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSpec:
    nodes: int
    bound_per_node: int
    #: Requests of the already bound pods; the bound series uses small ones so that 100
    #: pods fit on a 4-cpu node.
    bound_cpu: str = "100m"
    bound_memory: str = "500Mi"


def add_nodes(cluster: ClusterState, spec: ClusterSpec) -> None:
    for i in range(spec.nodes):
        cluster.set_node(parse_node(_wire(node_object(i))))


def add_bound_pods(cluster: ClusterState, spec: ClusterSpec) -> int:
    count = 0
    for i in range(spec.nodes):
        for j in range(spec.bound_per_node):
            raw = pod_object(
                f"existing-{i}-{j}",
                cpu=spec.bound_cpu,
                memory=spec.bound_memory,
                node_name=f"node-{i}",
                labels={"app": f"existing-{(i + j) % 50}"},
            )
            cluster.add_pod(parse_pod(_wire(raw)))
            count += 1
    return count


def build_cluster(spec: ClusterSpec) -> ClusterState:
    cluster = ClusterState()
    add_nodes(cluster, spec)
    add_bound_pods(cluster, spec)
    return cluster


# -- policies -----------------------------------------------------------------------------


def load_all_families() -> None:
    """Import every predicate and priority module so each registers its names.

    ``engine/catalogue.py`` lists the families for the compiler; a family being written
    may not be listed yet, and the default policy needs all of them.
    """
    from policy_scheduler.engine import predicates, priorities

    for package in (predicates, priorities):
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")


@dataclass
class Policies:
    default: CompiledPolicy
    spread: CompiledPolicy
    #: Default entries this build cannot run (left out, and said so in the report).
    missing: list[str] = field(default_factory=list)


def _spec_policy(
    name: str, predicates: Sequence[str], priorities: Sequence[tuple[str, int]]
) -> SchedulingPolicy:
    return parse_spec(
        {
            "predicates": [{"name": p} for p in predicates],
            "priorities": [{"name": p, "weight": w} for p, w in priorities],
        },
        name=name,
    )


def _compile_available(
    name: str, predicates: Sequence[str], priorities: Sequence[tuple[str, int]]
) -> tuple[CompiledPolicy, list[str]]:
    """The policy, or, when some entries are not implemented yet, the policy without them."""
    try:
        return compile_policy(_spec_policy(name, predicates, priorities)), []
    except NotImplementedPolicyError:
        from policy_scheduler.engine.functions import REGISTRY

        kept_pred = [p for p in predicates if p in REGISTRY.predicates]
        kept_prio = [(p, w) for p, w in priorities if p in REGISTRY.priorities]
        missing = [p for p in predicates if p not in REGISTRY.predicates]
        missing += [p for p, _ in priorities if p not in REGISTRY.priorities]
        return compile_policy(_spec_policy(name, kept_pred, kept_prio)), missing


def policies() -> Policies:
    """The policies the published figures (docs/performance.md) were measured with.

    Those runs predate the v1.22 default policy, so the benchmark keeps measuring the
    v1.13 DefaultProvider (``names.LEGACY_V1_13_*``) for every workload but
    topology-spread, which adds EvenPodsSpread in its legacy slot and
    EvenPodsSpreadPriority at weight 1 (v1.18's gate). Re-measure before switching.
    """
    load_all_families()
    legacy_order = [p for p in names.LEGACY_PREDICATE_ORDER if p in names.LEGACY_V1_13_PREDICATES]
    default, missing = _compile_available(
        "legacy-v1-13", legacy_order, names.LEGACY_V1_13_PRIORITY_WEIGHTS
    )
    with_spread = [
        p
        for p in names.LEGACY_PREDICATE_ORDER
        if p in names.LEGACY_V1_13_PREDICATES or p == names.EVEN_PODS_SPREAD
    ]
    spread, spread_missing = _compile_available(
        "legacy-v1-13-even-pods-spread",
        with_spread,
        (*names.LEGACY_V1_13_PRIORITY_WEIGHTS, (names.EVEN_PODS_SPREAD_PRIORITY, 1)),
    )
    missing += [m for m in spread_missing if m not in missing]
    return Policies(default=default, spread=spread, missing=missing)


# -- measuring ----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass
class Plan:
    """One measured run: a cluster, the pods to decide, and what happens between them."""

    workload: str
    cluster: ClusterState
    pods: list[Pod]
    policy: CompiledPolicy
    requested: int
    note: str = ""
    between: Callable[[int, ClusterState], None] | None = None


def prepare(workload: str, spec: ClusterSpec, pods: int, pols: Policies, seed: int) -> Plan:
    """Build the cluster and parse the pods of one run (none of this is timed)."""
    cluster = build_cluster(spec)
    policy = pols.spread if workload == "topology-spread" else pols.default
    note = ""
    requested = pods
    between: Callable[[int, ClusterState], None] | None = None

    if workload == "anti-affinity":
        # A fifth of the nodes already run one such pod (scheduler_perf's init pods).
        holders = set(range(0, spec.nodes, 5))
        for i in sorted(holders):
            raw = anti_affinity_pod(f"anti-init-{i}", node_name=f"node-{i}")
            cluster.add_pod(parse_pod(_wire(raw)))
        room = sum(
            1 for i in range(spec.nodes) if i not in holders and node_schedulable_by_default(i)
        )
        if pods > room:
            requested = room
            note = f"capped at {room} pods: one per free hostname"
    elif workload == "churn":
        for obj in churn_workloads():
            cluster.set_workload(parse_workload(_wire(obj)))
        between = churn_driver(spec, pods, seed)

    parsed = [parse_pod(_wire(workload_pod(workload, i))) for i in range(requested)]
    return Plan(workload, cluster, parsed, policy, requested, note, between)


def churn_driver(spec: ClusterSpec, pods: int, seed: int) -> Callable[[int, ClusterState], None]:
    """Deletes, node updates and node arrivals/departures between churn decisions.

    Node objects are parsed here, ahead of time: parsing is the watch's work, not the
    scheduler's.
    """
    rng = random.Random(seed)
    updates: dict[int, Node] = {}
    arrivals: dict[int, Node] = {}
    for i in range(pods):
        if i % 25 == 24:
            target = rng.randrange(spec.nodes)
            raw = node_object(target, extra_labels={"example.com/heartbeat": str(i)})
            updates[i] = parse_node(_wire(raw))
        if i % 100 == 99:
            raw = node_object(spec.nodes + i)
            arrivals[i] = parse_node(_wire(raw))
    placed: list[str] = []
    previous_arrival: list[str] = []

    def between(i: int, cluster: ClusterState) -> None:
        # The pod just decided is the newest churn pod; remember it for deletion.
        uid = f"uid-churn-{i}"
        if uid in cluster.pods:
            placed.append(uid)
        if i % 2 == 1 and placed:
            victim = placed.pop(rng.randrange(len(placed)))
            cluster.remove_pod(victim)
        node = updates.get(i)
        if node is not None:
            cluster.set_node(node)
        node = arrivals.get(i)
        if node is not None:
            cluster.set_node(node)
            if previous_arrival:
                cluster.remove_node(previous_arrival.pop())
            previous_arrival.append(node.name)

    return between


async def drive(plan: Plan, budget: float, profiler: cProfile.Profile | None) -> dict[str, Any]:
    """Decide the plan's pods in order, assuming each; the timed part of a run."""
    scheduler = Scheduler()
    cluster = plan.cluster
    policy = plan.policy
    between = plan.between
    latencies: list[float] = []
    evaluated = feasible = scheduled = 0
    bound_before = len(cluster.pods)
    clock = time.perf_counter
    if profiler is not None:
        profiler.enable()
    start = clock()
    deadline = start + budget
    for i, pod in enumerate(plan.pods):
        t0 = clock()
        decision = await scheduler.schedule(pod, cluster, policy)
        if decision.node is not None:
            cluster.add_pod(dataclasses.replace(pod, node_name=decision.node))
            scheduled += 1
        latencies.append(clock() - t0)
        evaluated += decision.evaluated
        feasible += len(decision.feasible)
        if between is not None:
            between(i, cluster)
        if clock() > deadline:
            break
    elapsed = clock() - start
    if profiler is not None:
        profiler.disable()
    decided = len(latencies)
    latencies.sort()
    return {
        "workload": plan.workload,
        "nodes": len(cluster.nodes),
        "bound_pods_before": bound_before,
        "pods_requested": plan.requested,
        "decided": decided,
        "scheduled": scheduled,
        "unschedulable": decided - scheduled,
        "budget_hit": decided < plan.requested,
        "seconds": elapsed,
        "pods_per_s": decided / elapsed if elapsed > 0 else 0.0,
        "latency_ms": {
            "p50": 1000 * percentile(latencies, 0.50),
            "p99": 1000 * percentile(latencies, 0.99),
            "mean": 1000 * sum(latencies) / decided if decided else 0.0,
            "max": 1000 * latencies[-1] if latencies else 0.0,
        },
        "nodes_evaluated_mean": evaluated / decided if decided else 0.0,
        "feasible_mean": feasible / decided if decided else 0.0,
        "policy": plan.policy.name,
        "note": plan.note,
    }


def measure_memory(spec: ClusterSpec, *, sites: bool) -> dict[str, Any]:
    """Bytes per node and per bound pod the cache keeps, by tracemalloc."""
    gc.collect()
    tracemalloc.start(1)
    try:
        cluster = ClusterState()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        snap0 = tracemalloc.take_snapshot() if sites else None
        add_nodes(cluster, spec)
        gc.collect()
        after_nodes = tracemalloc.get_traced_memory()[0]
        snap1 = tracemalloc.take_snapshot() if sites else None
        bound = add_bound_pods(cluster, spec)
        gc.collect()
        after_pods = tracemalloc.get_traced_memory()[0]
        snap2 = tracemalloc.take_snapshot() if sites else None
    finally:
        tracemalloc.stop()
    result: dict[str, Any] = {
        "nodes": spec.nodes,
        "bound_pods": bound,
        "bytes_per_node": (after_nodes - base) / spec.nodes if spec.nodes else 0.0,
        "bytes_per_bound_pod": (after_pods - after_nodes) / bound if bound else 0.0,
    }
    if sites and snap0 is not None and snap1 is not None and snap2 is not None:
        result["node_sites"] = _top_sites(snap1, snap0, spec.nodes)
        result["pod_sites"] = _top_sites(snap2, snap1, bound)
    del cluster
    gc.collect()
    return result


def _top_sites(
    after: tracemalloc.Snapshot, before: tracemalloc.Snapshot, per: int, top: int = 8
) -> list[dict[str, Any]]:
    keep = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = after.filter_traces(keep).compare_to(before.filter_traces(keep), "lineno")
    out: list[dict[str, Any]] = []
    for stat in sorted(diff, key=lambda s: -s.size_diff)[:top]:
        frame = stat.traceback[0]
        out.append(
            {
                "site": f"{_short(frame.filename)}:{frame.lineno}",
                "bytes_per_item": stat.size_diff / per if per else 0.0,
            }
        )
    return out


def _short(filename: str) -> str:
    marker = "policy_scheduler"
    if marker in filename:
        return filename[filename.index(marker) :]
    return Path(filename).name


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class Config:
    sizes: list[int]
    pods: int
    workloads: list[str]
    bound_per_node: int
    budget: float
    seed: int
    isolate: bool
    memory_sites: bool
    series_nodes: int
    series_bound: list[int]
    series_pods: int
    series_workloads: list[str]
    profile: str | None = None


def run_size(config: Config, nodes: int, first: bool) -> dict[str, Any]:
    """Everything measured at one cluster size (runs in a child process when isolating)."""
    random.seed(config.seed)
    pols = policies()
    spec = ClusterSpec(nodes=nodes, bound_per_node=config.bound_per_node)
    runs = []
    for workload in config.workloads:
        plan = prepare(workload, spec, config.pods, pols, config.seed)
        gc.collect()
        profiler = cProfile.Profile() if config.profile else None
        result = asyncio.run(drive(plan, config.budget, profiler))
        if profiler is not None and config.profile is not None:
            path = _profile_path(config.profile, nodes, workload)
            profiler.dump_stats(path)
            result["profile"] = path
        result["nodes"] = nodes
        result.update(TARGETS.get((workload, nodes), {}))
        target = result.get("target_pods_per_s")
        result["meets_target"] = None if target is None else result["pods_per_s"] >= target
        runs.append(result)
        del plan
        gc.collect()
    # Peak RSS before the tracemalloc phase, whose bookkeeping would inflate it.
    rss = peak_rss_bytes()
    memory = measure_memory(spec, sites=config.memory_sites and first)
    memory["peak_rss_bytes"] = rss
    return {"nodes": nodes, "runs": runs, "memory": memory, "missing": pols.missing}


def _profile_path(template: str, nodes: int, workload: str) -> str:
    path = Path(template)
    return str(path.with_name(f"{path.stem}-{nodes}-{workload}{path.suffix or '.prof'}"))


def run_series_point(config: Config, bound: int) -> list[dict[str, Any]]:
    """One point of the bound series: fixed nodes, ``bound`` small pods on every node."""
    pols = policies()
    spec = ClusterSpec(
        nodes=config.series_nodes, bound_per_node=bound, bound_cpu="10m", bound_memory="64Mi"
    )
    out = []
    for workload in config.series_workloads:
        plan = prepare(workload, spec, config.series_pods, pols, config.seed)
        gc.collect()
        result = asyncio.run(drive(plan, config.budget, None))
        result["bound_per_node"] = bound
        out.append(result)
        del plan
        gc.collect()
    return out


def _in_child(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn`` in a fresh forked process so its peak RSS is its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("fork")) as pool:
        return pool.submit(fn, *args).result()


def run(config: Config, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure every size and the bound series; the report as a JSON-ready dict."""
    started = dt.datetime.now(dt.UTC)
    baseline_rss = peak_rss_bytes()
    sizes: list[dict[str, Any]] = []
    for index, nodes in enumerate(config.sizes):
        log(f"# {nodes} nodes ...")
        if config.isolate:
            sizes.append(_in_child(run_size, config, nodes, index == 0))
        else:
            sizes.append(run_size(config, nodes, index == 0))
        for r in sizes[-1]["runs"]:
            log(
                f"  {r['workload']:<16} {r['decided']:>5}/{r['pods_requested']:<5} "
                f"{r['pods_per_s']:8.1f} pods/s  p50 {r['latency_ms']['p50']:7.2f} ms  "
                f"p99 {r['latency_ms']['p99']:7.2f} ms"
            )
    series: list[dict[str, Any]] = []
    for bound in config.series_bound:
        log(f"# bound series: {config.series_nodes} nodes, {bound} pods bound per node ...")
        if config.isolate:
            series.extend(_in_child(run_series_point, config, bound))
        else:
            series.extend(run_series_point(config, bound))
    missing = sorted({m for s in sizes for m in s["missing"]})
    return {
        "meta": {
            "date": started.isoformat(timespec="seconds"),
            "machine": machine(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "policy": "default (legacy DefaultProvider); topology-spread: default + "
            "EvenPodsSpread predicate and EvenPodsSpreadPriority (weight 1)",
            "missing_from_policy": missing,
            "config": dataclasses.asdict(config),
            "baseline_rss_bytes": baseline_rss,
            "targets": {
                "bytes_per_bound_pod": TARGET_BYTES_PER_POD,
                "bytes_per_node": TARGET_BYTES_PER_NODE,
            },
        },
        "runs": [r for s in sizes for r in s["runs"]],
        "memory": [s["memory"] for s in sizes],
        "bound_series": series,
    }


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


# -- output ---------------------------------------------------------------------------------


def _target_text(run: dict[str, Any]) -> str:
    target = run.get("target_pods_per_s")
    if target is None:
        return ""
    verdict = "met" if run.get("meets_target") else "MISSED"
    moon = run.get("moonshot_pods_per_s")
    return f">= {target}{f' (moonshot {moon})' if moon else ''}: {verdict}"


def format_table(report: dict[str, Any]) -> str:
    lines = []
    header = (
        f"{'nodes':>6} {'workload':<16} {'decided':>11} {'pods/s':>8} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'sampled':>8} {'feasible':>8}  target"
    )
    lines += [header, "-" * len(header)]
    for r in report["runs"]:
        lines.append(
            f"{r['nodes']:>6} {r['workload']:<16} {r['decided']:>5}/{r['pods_requested']:<5} "
            f"{r['pods_per_s']:>8.1f} {r['latency_ms']['p50']:>8.2f} "
            f"{r['latency_ms']['p99']:>8.2f} {r['nodes_evaluated_mean']:>8.0f} "
            f"{r['feasible_mean']:>8.0f}  {_target_text(r)}"
        )
    lines.append("")
    header = (
        f"{'nodes':>6} {'bound pods':>10} {'B/node':>9} {'B/bound pod':>12} {'peak RSS MiB':>13}"
        f"  targets: <= {TARGET_BYTES_PER_NODE} B/node, <= {TARGET_BYTES_PER_POD} B/pod"
    )
    lines += [header, "-" * len(header)]
    for m in report["memory"]:
        lines.append(
            f"{m['nodes']:>6} {m['bound_pods']:>10} {m['bytes_per_node']:>9.0f} "
            f"{m['bytes_per_bound_pod']:>12.0f} {m['peak_rss_bytes'] / 2**20:>13.1f}"
        )
    if report["bound_series"]:
        lines.append("")
        header = (
            f"{'nodes':>6} {'bound/node':>10} {'workload':<16} {'decided':>11} {'pods/s':>8} "
            f"{'p50 ms':>8} {'p99 ms':>8}"
        )
        lines += [header, "-" * len(header)]
        for r in report["bound_series"]:
            lines.append(
                f"{r['nodes']:>6} {r['bound_per_node']:>10} {r['workload']:<16} "
                f"{r['decided']:>5}/{r['pods_requested']:<5} {r['pods_per_s']:>8.1f} "
                f"{r['latency_ms']['p50']:>8.2f} {r['latency_ms']['p99']:>8.2f}"
            )
    missing = report["meta"]["missing_from_policy"]
    if missing:
        lines.append("")
        lines.append(f"not implemented yet, left out of the policy: {', '.join(missing)}")
    return "\n".join(lines)


def plot(report: dict[str, Any], path: str) -> None:
    """pods/s and per-pod latency against cluster size, one line per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = report["bound_series"]
    columns = 3 if series else 2
    fig, axes = plt.subplots(1, columns, figsize=(6 * columns, 4.8))
    rate_ax, latency_ax = axes[0], axes[1]
    workloads = list(dict.fromkeys(r["workload"] for r in report["runs"]))
    for i, workload in enumerate(workloads):
        runs = sorted((r for r in report["runs"] if r["workload"] == workload), key=_nodes)
        xs = [r["nodes"] for r in runs]
        color = f"C{i}"
        rate_ax.plot(xs, [r["pods_per_s"] for r in runs], "o-", color=color, label=workload)
        latency_ax.plot(
            xs, [r["latency_ms"]["p50"] for r in runs], "o-", color=color, label=f"{workload} p50"
        )
        latency_ax.plot(
            xs, [r["latency_ms"]["p99"] for r in runs], "x--", color=color, label=f"{workload} p99"
        )
    for (workload, nodes), target in TARGETS.items():
        rate_ax.plot(
            [nodes],
            [target["target_pods_per_s"]],
            marker="*",
            markersize=14,
            color="black" if workload == "basic" else "grey",
            linestyle="none",
        )
    rate_ax.plot([], [], marker="*", color="black", linestyle="none", label="target (basic)")
    rate_ax.plot([], [], marker="*", color="grey", linestyle="none", label="target (anti-aff.)")
    rate_ax.set(
        xscale="log",
        yscale="log",
        xlabel="nodes",
        ylabel="pods/s",
        title="Throughput (default policy)",
    )
    latency_ax.set(
        xscale="log", yscale="log", xlabel="nodes", ylabel="ms per pod", title="Per-pod latency"
    )
    rate_ax.legend(fontsize=7)
    latency_ax.legend(fontsize=6, ncol=2)
    for ax in axes[:2]:
        ax.grid(True, which="both", alpha=0.3)
    if series:
        ax = axes[2]
        for i, workload in enumerate(dict.fromkeys(r["workload"] for r in series)):
            points = sorted(
                (r for r in series if r["workload"] == workload), key=lambda r: r["bound_per_node"]
            )
            ax.plot(
                [r["bound_per_node"] for r in points],
                [r["pods_per_s"] for r in points],
                "o-",
                color=f"C{workloads.index(workload) if workload in workloads else i}",
                label=workload,
            )
        ax.set(
            yscale="log",
            xlabel="pods already bound per node",
            ylabel="pods/s",
            title=f"Same {series[0]['nodes']} nodes, more bound pods",
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(
        f"policy-scheduler engine, {report['meta']['machine']['nproc']} cores, "
        f"Python {report['meta']['machine']['python']}, {report['meta']['date'][:10]}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _nodes(run: dict[str, Any]) -> int:
    return int(run["nodes"])


def print_profile(path: str, top: int = 30) -> None:
    stats = pstats.Stats(path)
    stats.sort_stats("tottime").print_stats(top)


# -- command line ---------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _workloads(text: str) -> list[str]:
    chosen = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}"
        )
    return chosen


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="engine_bench.py",
        description="Schedule synthetic scheduler_perf-like workloads through the real engine.",
    )
    p.add_argument(
        "--nodes",
        type=_ints,
        default=list(DEFAULT_SIZES),
        help="cluster sizes, comma-separated (default 100,1000,5000,15000)",
    )
    p.add_argument(
        "--pods",
        type=int,
        default=1000,
        help="pods to schedule per workload and size (default 1000)",
    )
    p.add_argument(
        "--workloads",
        type=_workloads,
        default=list(WORKLOADS),
        help=f"comma-separated, from {','.join(WORKLOADS)} (default all)",
    )
    p.add_argument(
        "--bound-per-node", type=int, default=2, help="pods already bound on every node (default 2)"
    )
    p.add_argument(
        "--budget",
        type=float,
        default=25.0,
        help="seconds a run may take before it stops early (default 25)",
    )
    p.add_argument(
        "--series-nodes",
        type=int,
        default=1000,
        help="node count of the bound series (default 1000)",
    )
    p.add_argument(
        "--series-bound",
        type=_ints,
        default=[0, 10, 50, 100],
        help="pods bound per node for the bound series; empty string skips it",
    )
    p.add_argument(
        "--series-pods",
        type=int,
        default=300,
        help="pods per workload in the bound series (default 300)",
    )
    p.add_argument("--series-workloads", type=_workloads, default=["basic", "anti-affinity"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="plot pods/s and latency against size")
    p.add_argument(
        "--profile",
        metavar="FILE.prof",
        help="cProfile each run's timed loop into FILE-<nodes>-<workload>.prof",
    )
    p.add_argument(
        "--no-isolate",
        action="store_true",
        help="run every size in this process (peak RSS then accumulates)",
    )
    p.add_argument(
        "--no-memory-sites",
        action="store_true",
        help="skip the per-allocation-site memory breakdown",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="CI smoke: 100 nodes, 200 pods, every workload, in-process",
    )
    return p


def config_from(args: argparse.Namespace) -> Config:
    if args.quick:
        return Config(
            sizes=[100],
            pods=200,
            workloads=list(WORKLOADS),
            bound_per_node=2,
            budget=60.0,
            seed=args.seed,
            isolate=False,
            memory_sites=not args.no_memory_sites,
            series_nodes=100,
            series_bound=[0, 5],
            series_pods=50,
            series_workloads=["basic", "anti-affinity"],
            profile=args.profile,
        )
    return Config(
        sizes=args.nodes,
        pods=args.pods,
        workloads=args.workloads,
        bound_per_node=args.bound_per_node,
        budget=args.budget,
        seed=args.seed,
        isolate=not args.no_isolate,
        memory_sites=not args.no_memory_sites,
        series_nodes=args.series_nodes,
        series_bound=args.series_bound,
        series_pods=args.series_pods,
        series_workloads=args.series_workloads,
        profile=args.profile,
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    config = config_from(args)
    report = run(config, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(format_table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.plot:
        plot(report, args.plot)
    if args.profile:
        for r in report["runs"]:
            if "profile" in r:
                print(f"\n== profile {r['nodes']} nodes, {r['workload']}: {r['profile']}")
                print_profile(r["profile"])
    return report


if __name__ == "__main__":
    main()
