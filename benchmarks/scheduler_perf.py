"""kube-scheduler's scheduler_perf workloads, decided through ``simulate``'s cycle.

How it works
------------
kube-scheduler measures itself with scheduler_perf (test/integration/scheduler_perf in
kubernetes/kubernetes): ``performance-config.yaml`` names a workload's node and pod
templates and its counts (``initNodes``, ``initPods``, ``measurePods``); the init pods
are scheduled first, then the measured pods, whose rate is the figure CI holds against a
floor. This benchmark builds the same workloads as API objects (scheduler_perf's
``node-default.yaml``: 4 cpu, 32Gi, 110 pods, labelled per the workload's
``labelNodePrepareStrategy``; its pod templates, requests = limits = 100m / 500Mi),
the init pods already bound (spread over the nodes as a scheduler would place them),
the measured pods pending, and feeds them through the operator's door
(:func:`policy_scheduler.simulation.inputs_from_objects`: the watch's ``World.observe``,
the cache, the queue) and decides them with :func:`~policy_scheduler.simulation.simulate`
(the operator's ``Decider``: PreEnqueue, the filter and score, Reserve, Permit, the
assume, preemption and its victims leaving the cluster).

Only the decisions are timed: CPU seconds (``time.process_time``) from the first pop of
the queue; a decision's time is the time since the previous one, so that the measured
pods' share leaves out pending init pods decided first (a workload with
``init_pending``), while the churn's pods and objects (:class:`Churn`) count in it, as
they count in scheduler_perf's rate. A preempting pod's two decisions (the preemption,
then its placement) both count for it.
The heap is frozen (``gc.freeze``) before the clock starts, as the operator freezes the
listed cluster.

Two policies by default (``--policy``): ``v134``, today's default profile (``--config``
with an empty v1 KubeSchedulerConfiguration whose profile serves the pods'
schedulerName, read as kube-scheduler v1.34 reads it, as ``simulate --config`` does), and
``legacy``, the built-in default policy (``simulate`` without ``--config``). ``v130``,
v1.30's default profile (``examples/policies/kube-scheduler-v1.30.yaml`` serving the pods),
is there for comparison with earlier figures.

Workloads (scheduler_perf's 5000-node parameters, as in kubernetes master's
``misc/`` and ``affinity/`` configs where the floor is held; ``--quick`` divides every
count):

======================================  ====== ========= ========  =====================
workload                                nodes  init pods measured  Go floor (pods/s)
======================================  ====== ========= ========  =====================
SchedulingBasic                          5000   1000     10000      680
SchedulingPodAntiAffinity                5000   1000      2000       60
SchedulingPodMatchingAntiAffinity        5000   1000      5000      595
SchedulingPodAffinity                    5000   5000      5000       35
SchedulingNodeAffinity                   5000   5000     10000      220
TopologySpreading                        5000   5000      5000      460
PreferredTopologySpreading               5000   5000      5000      340
Unschedulable                            5000    100     10000      590
PreemptionBasic                          1000   4000      1000
SchedulingWithMixedChurn                 5000      0     10000      710
SchedulingDaemonset                     15000      0     30000     1100
======================================  ====== ========= ========  =====================

PreemptionBasic runs at 1000 nodes: scheduler_perf's 5000-node variant is commented out
upstream (kubernetes#108308). SchedulingPodMatchingAntiAffinity: the init pods carry
the required anti-affinity (``pod-with-pod-anti-affinity.yaml``), the measured pods are
``pod-with-label.yaml``-shaped pods their terms match, so every decision checks the
existing pods' anti-affinity. Unschedulable (master's ``5kNodes/100Init/10kPods``):
100 pod-default pods bound, then the measured pods with a churn op creating a
pod-high-priority-large-cpu pod (9 cpu, priority 10: fits nowhere, tries preemption)
every 118 decided pods (200 ms at the floor). SchedulingWithMixedChurn: scheduler_perf's
``churn`` op in ``recreate`` mode, a node-default node, a pod-high-priority-large-cpu
pod and a Service deleted and created again every 710 decided pods (1 s at the floor);
the churn pods' decisions count in the measured time. SchedulingDaemonset: one
``node-with-name.yaml`` node (scheduler-perf-node, 90000 pods) beside 15000 node-default
nodes; every pod (``daemonset-pod.yaml``: no requests) requires ``matchFields
metadata.name In [scheduler-perf-node]``, as a DaemonSet's pods do.

Usage::

    python benchmarks/scheduler_perf.py [--workloads A,B] [--policy v134,legacy,v130]
        [--quick] [--json FILE] [-o json FILE] [--profile FILE.prof]

``-o json FILE`` writes every measured pod's outcome (its node, or the decision's
message) per workload and policy: two builds' files compare byte for byte.
``--profile`` writes a cProfile of the decisions (every workload) and prints its top 30.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import policy_scheduler  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml
from engine_bench import machine, pod_object

from policy_scheduler import names
from policy_scheduler.engine.algorithm import Decision
from policy_scheduler.policy import parse_policy
from policy_scheduler.schedconfig import convert_configuration
from policy_scheduler.simulation import check_profiles, inputs_from_objects, simulate

POLICIES = ("v134", "legacy")
#: Run on demand (``--policy v130``): v1.30's default profile, for earlier figures.
OTHER_POLICIES = ("v130",)
V130_POLICY = Path(__file__).resolve().parents[1] / "examples/policies/kube-scheduler-v1.30.yaml"
#: Go's floors at 5000 nodes (the lowest of the last 250 CI runs), pods/s.
FLOORS: dict[str, int] = {
    "SchedulingBasic": 680,
    "SchedulingPodAntiAffinity": 60,
    "SchedulingPodAffinity": 35,
    "SchedulingNodeAffinity": 220,
    "TopologySpreading": 460,
    "PreferredTopologySpreading": 340,
    "SchedulingPodMatchingAntiAffinity": 595,
    "Unschedulable": 590,
    "SchedulingWithMixedChurn": 710,
    "SchedulingDaemonset": 1100,
}
NOT_RUN: tuple[str, ...] = ()
#: The churn ops' intervals in decided pods: 1 s (mixed churn) and 200 ms (Unschedulable)
#: at the floor's rate.
MIXED_CHURN_EVERY = 710
UNSCHEDULABLE_EVERY = 118
#: Today's default profile (a v1 file is read as v1.34), serving the pods' schedulerName.
V1_CONFIGURATION: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": names.DEFAULT_SCHEDULER_NAME}],
}
HOSTNAME = "kubernetes.io/hostname"
DAEMONSET_NODE = "scheduler-perf-node"
ZONE = "topology.kubernetes.io/zone"

PodFn = Callable[[str, str | None], dict[str, Any]]


# -- templates ------------------------------------------------------------------------------


def node(index: int, zones: Sequence[str]) -> dict[str, Any]:
    """node-default.yaml, with labelNodePrepareStrategy's zone (round robin) if any."""
    name = f"scheduler-perf-node-{index}"
    labels = {HOSTNAME: name}
    if zones:
        labels[ZONE] = zones[index % len(zones)]
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-uid-{index}", "labels": labels},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def _in(namespace: str, obj: dict[str, Any], priority: int | None = None) -> dict[str, Any]:
    obj["metadata"]["namespace"] = namespace
    obj["metadata"]["uid"] = f"uid-{namespace}-{obj['metadata']['name']}"
    if priority is not None:
        obj["spec"]["priority"] = priority
    return obj


def pod_default(name: str, node_name: str | None, namespace: str = "default") -> dict[str, Any]:
    return _in(namespace, pod_object(name, node_name=node_name))


def pod_anti_affinity(name: str, node_name: str | None, namespace: str) -> dict[str, Any]:
    """pod-with-pod-anti-affinity.yaml: one per hostname among color=green pods."""
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": HOSTNAME,
        "namespaces": ["sched-1", "sched-0"],
    }
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    raw = pod_object(name, node_name=node_name, labels={"color": "green"}, affinity=affinity)
    return _in(namespace, raw)


def pod_affinity(name: str, node_name: str | None, namespace: str) -> dict[str, Any]:
    """pod-with-pod-affinity.yaml: with the color=blue pods, in their zone."""
    term = {
        "labelSelector": {"matchLabels": {"color": "blue"}},
        "topologyKey": ZONE,
        "namespaces": ["sched-1", "sched-0"],
    }
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return _in(
        namespace,
        pod_object(name, node_name=node_name, labels={"color": "blue"}, affinity=affinity),
    )


def pod_node_affinity(name: str, node_name: str | None) -> dict[str, Any]:
    """pod-with-node-affinity.yaml: zone In [zone1, zone2]."""
    expression = {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }
    return _in("default", pod_object(name, node_name=node_name, affinity=affinity))


def pod_spreading(name: str, node_name: str | None, when: str) -> dict[str, Any]:
    """pod-with-(preferred-)topology-spreading.yaml: maxSkew 5 over zones, color=blue."""
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"color": "blue"}},
    }
    raw = pod_object(name, node_name=node_name, labels={"color": "blue"}, spread=[constraint])
    return _in("default", raw)


def pod_with_label(name: str, node_name: str | None) -> dict[str, Any]:
    """pod-with-label.yaml's shape, labelled as the anti-affinity pods' terms select."""
    return _in("sched-1", pod_object(name, node_name=node_name, labels={"color": "green"}))


def pod_large_cpu(name: str, node_name: str | None) -> dict[str, Any]:
    """pod-large-cpu.yaml: 9 cpu, more than any node-default node has."""
    return _in("default", pod_object(name, cpu="9", node_name=node_name))


def pod_priority(name: str, node_name: str | None, *, high: bool) -> dict[str, Any]:
    """pod-low-priority.yaml (900m, priority 1) and pod-high-priority.yaml (3 cpu, 10)."""
    raw = pod_object(name, cpu="3" if high else "900m", node_name=node_name)
    return _in("default", raw, priority=10 if high else 1)


def pod_high_priority_large_cpu(name: str, node_name: str | None) -> dict[str, Any]:
    """pod-high-priority-large-cpu.yaml: 9 cpu, 500Mi, priority 10: fits no node, preempts."""
    raw = pod_object(name, cpu="9", node_name=node_name)
    container = raw["spec"]["containers"][0]
    del container["resources"]["limits"]  # the template sets requests only
    return _in("default", raw, priority=10)


def node_with_name() -> dict[str, Any]:
    """node-with-name.yaml: scheduler-perf-node, 4 cpu, 32Gi, 90000 pods."""
    raw = node(0, ())
    raw["metadata"]["name"] = DAEMONSET_NODE
    raw["metadata"]["uid"] = "node-uid-named"
    raw["metadata"]["labels"] = {HOSTNAME: DAEMONSET_NODE}
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "90000"}
    raw["status"]["capacity"] = capacity
    raw["status"]["allocatable"] = dict(capacity)
    return raw


def pod_daemonset(name: str, node_name: str | None) -> dict[str, Any]:
    """daemonset-pod.yaml: no requests, required node affinity matchFields metadata.name
    In [scheduler-perf-node] (NodeAffinity's PreFilter narrows the nodes to that one)."""
    field = {"key": "metadata.name", "operator": "In", "values": [DAEMONSET_NODE]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [field]}]
            }
        }
    }
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": names.DEFAULT_SCHEDULER_NAME,
            "affinity": affinity,
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    if node_name is not None:
        raw["spec"]["nodeName"] = node_name
        raw["status"] = {"phase": "Running"}
    return _in("default", raw)


def service_churn(index: int) -> dict[str, Any]:
    """churn/service-default.yaml's shape: a Service selecting app=foo."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"service-churn-{index}",
            "namespace": "default",
            "uid": f"uid-service-churn-{index}",
        },
        "spec": {"selector": {"app": "foo"}, "ports": [{"port": 8080, "targetPort": 8080}]},
    }


# -- workloads ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    nodes: int
    init_pods: int
    measure_pods: int
    zones: tuple[str, ...]
    init: PodFn
    measure: PodFn
    #: The init pods are pending too (decided first, not measured): Unschedulable's.
    init_pending: bool = False
    #: Init pods per node at most before the next node (one per node: anti-affinity).
    per_node: int = 0
    #: Nodes created before the workload's own (SchedulingDaemonset's named node).
    extra_nodes: Callable[[], list[dict[str, Any]]] | None = None
    #: scheduler_perf's churn op, every ``churn_every`` decided pods (see :class:`Churn`).
    churn: str = ""
    churn_every: int = 0


def _workloads() -> list[Workload]:
    moons = ("moon-1", "moon-2", "moon-3")
    return [
        Workload("SchedulingBasic", 5000, 1000, 10000, (), pod_default, pod_default),
        Workload(
            "SchedulingPodAntiAffinity",
            5000,
            1000,
            2000,
            (),
            lambda n, at: pod_anti_affinity(n, at, "sched-0"),
            lambda n, at: pod_anti_affinity(n, at, "sched-1"),
        ),
        Workload(
            "SchedulingPodMatchingAntiAffinity",
            5000,
            1000,
            5000,
            (),
            lambda n, at: pod_anti_affinity(n, at, "sched-0"),
            pod_with_label,
        ),
        Workload(
            "SchedulingPodAffinity",
            5000,
            5000,
            5000,
            ("zone1",),
            lambda n, at: pod_affinity(n, at, "sched-0"),
            lambda n, at: pod_affinity(n, at, "sched-1"),
        ),
        Workload(
            "SchedulingNodeAffinity",
            5000,
            5000,
            10000,
            ("zone1",),
            pod_node_affinity,
            pod_node_affinity,
        ),
        Workload(
            "TopologySpreading",
            5000,
            5000,
            5000,
            moons,
            pod_default,
            lambda n, at: pod_spreading(n, at, "DoNotSchedule"),
        ),
        Workload(
            "PreferredTopologySpreading",
            5000,
            5000,
            5000,
            moons,
            pod_default,
            lambda n, at: pod_spreading(n, at, "ScheduleAnyway"),
        ),
        Workload(
            "Unschedulable",
            5000,
            100,
            10000,
            (),
            pod_default,
            pod_default,
            churn="create",
            churn_every=UNSCHEDULABLE_EVERY,
        ),
        Workload(
            "PreemptionBasic",
            1000,
            4000,
            1000,
            (),
            lambda n, at: pod_priority(n, at, high=False),
            lambda n, at: pod_priority(n, at, high=True),
        ),
        Workload(
            "SchedulingWithMixedChurn",
            5000,
            0,
            10000,
            (),
            pod_default,
            pod_default,
            churn="recreate",
            churn_every=MIXED_CHURN_EVERY,
        ),
        Workload(
            "SchedulingDaemonset",
            15000,
            0,
            30000,
            (),
            pod_daemonset,
            pod_daemonset,
            extra_nodes=lambda: [node_with_name()],
        ),
    ]


WORKLOADS = {w.name: w for w in _workloads()}


class Churn:
    """scheduler_perf's churn op, counted in decisions instead of milliseconds.

    ``recreate`` (SchedulingWithMixedChurn: a node-default node, a
    pod-high-priority-large-cpu pod and a Service, one each): every tick deletes the
    previous tick's objects and creates new ones; ``create`` (Unschedulable: the
    large-cpu pod only): every tick adds one. Upstream ticks on a wall clock (1 s, 200
    ms); here a tick comes every ``every`` decided measured pods, the floor's rate times
    the interval (710 and 118 pods), so that two builds decide the same stream. The
    objects go through the watch's door (``World.observe``), as the operator gets them.
    """

    def __init__(self, mode: str, every: int) -> None:
        self.mode = mode
        self.every = every
        self.ticks = 0
        self.seen = 0
        self.live: list[dict[str, Any]] = []

    def make(self) -> list[dict[str, Any]]:
        index = self.ticks
        self.ticks += 1
        pod = pod_high_priority_large_cpu(f"churn-pod-{index}", None)
        if self.mode == "create":
            return [pod]
        raw = node(0, ())
        name = f"churn-node-{index}"
        raw["metadata"].update(name=name, uid=f"uid-churn-node-{index}")
        raw["metadata"]["labels"] = {HOSTNAME: name}
        made = [raw, pod, service_churn(index)]
        self.live = made
        return made

    def decided(self, world: Any) -> None:
        """One measured pod decided: a tick every ``every``."""
        self.seen += 1
        if self.seen % self.every:
            return
        if self.mode == "recreate":
            for raw in self.live:
                world.observe("DELETED", raw)
        for raw in json.loads(json.dumps(self.make())):
            world.observe("ADDED", raw)


def objects(
    workload: Workload, scale: int, churn: Churn | None = None
) -> tuple[list[dict[str, Any]], set[str]]:
    """The workload's API objects (``scale`` divides every count) and the measured uids."""
    nodes = max(1, workload.nodes // scale)
    out = list(workload.extra_nodes()) if workload.extra_nodes is not None else []
    out += [node(i, workload.zones) for i in range(nodes)]
    if churn is not None:
        out += churn.make()  # the churn op starts before the measured pods are created
    for i in range(workload.init_pods // scale):
        at = None if workload.init_pending else f"scheduler-perf-node-{i % nodes}"
        out.append(workload.init(f"init-{i}", at))
    measured: set[str] = set()
    for i in range(workload.measure_pods // scale):
        raw = workload.measure(f"measure-{i}", None)
        measured.add(raw["metadata"]["uid"])
        out.append(raw)
    return out, measured


def _wire(objs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """Each object decoded from JSON (owning its strings, as a watch delivers them)."""
    return [(obj, "scheduler_perf") for obj in json.loads(json.dumps(objs))]


# -- running --------------------------------------------------------------------------------


def _outcome(decision: Decision) -> str:
    return decision.node if decision.node is not None else f"- {decision.message}"


def run_one(
    workload: Workload, policy: str, scale: int, profiler: cProfile.Profile | None = None
) -> dict[str, Any]:
    """Decide one workload with one policy; the measured pods' CPU time and outcomes."""
    churn = Churn(workload.churn, max(1, workload.churn_every // scale)) if workload.churn else None
    objs, measured = objects(workload, scale, churn)
    profiles = []
    if policy == "v134":
        conversion = convert_configuration(V1_CONFIGURATION)
        check_profiles(conversion, "v1.34")
        profiles = list(conversion.policies)
    elif policy == "v130":
        doc = yaml.safe_load(V130_POLICY.read_text())
        doc["spec"]["schedulerName"] = names.DEFAULT_SCHEDULER_NAME
        profiles = [parse_policy(doc)]
    inputs = inputs_from_objects(_wire(objs), profiles=profiles)
    del objs
    outcomes: dict[str, str] = {}
    spent = [0.0]
    decisions = [0]
    last = [0.0]

    def on_decision(decision: Decision) -> None:
        now = time.process_time()
        if decision.pod.uid in measured:
            spent[0] += now - last[0]
            decisions[0] += 1
            outcomes[decision.pod.name] = _outcome(decision)
            if churn is not None:
                churn.decided(inputs.world)
        elif churn is not None:
            # The churn's pods are decided among the measured ones: their time counts,
            # as it does in scheduler_perf's pods per second of the whole run.
            spent[0] += now - last[0]
            outcomes[decision.pod.name] = _outcome(decision)
        # With churn, its objects' arrival is counted in the next decision's time.
        last[0] = now if churn is not None else time.process_time()

    gc.collect()
    gc.freeze()
    try:
        if profiler is not None:
            profiler.enable()
        last[0] = time.process_time()
        asyncio.run(simulate(inputs, explain=False, on_decision=on_decision))
        if profiler is not None:
            profiler.disable()
    finally:
        gc.unfreeze()
    placed = sum(
        1 for k, v in outcomes.items() if k.startswith("measure-") and not v.startswith("- ")
    )
    pods = len(measured)
    return {
        "workload": workload.name,
        "policy": policy,
        "nodes": max(1, workload.nodes // scale),
        "init_pods": workload.init_pods // scale,
        "measured_pods": pods,
        "decisions": decisions[0],
        "placed": placed,
        "cpu_s": spent[0],
        "pods_per_s": pods / spent[0] if spent[0] > 0 else 0.0,
        "outcomes": outcomes,
    }


def format_table(results: Sequence[dict[str, Any]], policies: Sequence[str]) -> str:
    by = {(r["workload"], r["policy"]): r for r in results}
    names_seen = list(dict.fromkeys(r["workload"] for r in results))
    head = (
        "| workload | nodes | init | measured | "
        + " | ".join(f"{p} pods/s" for p in policies)
        + " | Go floor |"
    )
    lines = [head, "| --- |" + " ---: |" * (4 + len(policies))]
    for name in [*names_seen, *NOT_RUN]:
        floor = FLOORS.get(name)
        first = next((by[(name, p)] for p in policies if (name, p) in by), None)
        if first is None:
            cells = ["", "", ""] + ["not run"] * len(policies)
        else:
            cells = [str(first["nodes"]), str(first["init_pods"]), str(first["measured_pods"])]
            for p in policies:
                r = by.get((name, p))
                cells.append("" if r is None else f"{r['pods_per_s']:.0f}")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {floor or ''} |")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated names")
    p.add_argument(
        "--policy", default=",".join(POLICIES), help="v134, legacy, v130 (comma-separated)"
    )
    p.add_argument("--quick", action="store_true", help="every count divided by 50 (smoke)")
    p.add_argument("--scale", type=int, default=1, help="divide every count by this")
    p.add_argument("--repeat", type=int, default=1, help="runs of each; the median is shown")
    p.add_argument("--json", help="write the report (figures) to this file")
    p.add_argument("-o", dest="outcomes", metavar="json", nargs=2, help="json FILE: outcomes")
    p.add_argument("--profile", help="write a cProfile of the decisions here")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    scale = 50 if args.quick else max(1, args.scale)
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in WORKLOADS]
    pols = [p.strip() for p in args.policy.split(",") if p.strip()]
    bad = [p for p in pols if p not in POLICIES + OTHER_POLICIES]
    if unknown or bad:
        raise SystemExit(f"scheduler_perf: unknown workload/policy: {', '.join(unknown + bad)}")
    profiler = cProfile.Profile() if args.profile else None
    results: list[dict[str, Any]] = []
    for name in chosen:
        for policy in pols:
            runs = [run_one(WORKLOADS[name], policy, scale, profiler) for _ in range(args.repeat)]
            best = dict(runs[0])
            best["pods_per_s"] = statistics.median(r["pods_per_s"] for r in runs)
            best["runs_pods_per_s"] = [round(r["pods_per_s"], 1) for r in runs]
            results.append(best)
            print(
                f"# {name} {policy}: {best['measured_pods']} pods, {best['placed']} placed, "
                f"{best['pods_per_s']:.0f} pods/s (runs {best['runs_pods_per_s']})",
                file=sys.stderr,
                flush=True,
            )
    print(format_table(results, pols))
    report = {
        "machine": machine(),
        "scale": scale,
        "results": [{k: v for k, v in r.items() if k != "outcomes"} for r in results],
    }
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.outcomes:
        kind, path = args.outcomes
        if kind != "json":
            raise SystemExit("scheduler_perf: -o takes json FILE")
        per = {f"{r['workload']}/{r['policy']}": r["outcomes"] for r in results}
        Path(path).write_text(json.dumps(per, indent=1, sort_keys=True) + "\n")
    if profiler is not None and args.profile:
        profiler.dump_stats(args.profile)
        pstats.Stats(args.profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    return report


if __name__ == "__main__":
    main()
