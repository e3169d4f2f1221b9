"""The in-tree plugins' fast-path hints are exact: the engine decides the same both ways.

As ``tests/engine/test_fast_path.py`` does for the legacy policies: seeded generators
build a cluster (nodes with varied allocatable, extended resources, labels, taints of
every effect, cordons, images; placed pods with init containers, sidecars and host
ports) and a queue of pending pods, many of them sharing a template (so the equivalence
cache and the per-node score memos hit); two identical clusters and two schedulers
decide the queue in sequence, assuming each placement, one with ``fast=True`` (plans,
screens, batch forms, the equivalence cache) and one with ``fast=False`` (each predicate
and map called node by node). Between decisions both clusters get the same churn (a pod
deleted, a node changed). Every decision must be equal: node, feasible nodes, reasons,
scores, message.

The policies are made of this family's plugins (their ``predicate()`` / ``priority()``),
with kube-scheduler v1.30's default weights, and with arguments that exercise every
scoring strategy, BalancedAllocation over three resources, ignored extended resources
and NodeAffinity's addedAffinity.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from intree.cases import make_plugin
from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import CompiledPolicy, compiled_predicate, compiled_priority
from policy_scheduler.engine.functions import PolicySettings
from policy_scheduler.objects import parse_node, parse_pod

ZONE = "topology.kubernetes.io/zone"
GPU = "example.com/gpu"
IMAGES = ("registry.example/web:1", "registry.example/db:2", "nginx", "busybox")


def random_node(rng: random.Random, index: int) -> dict[str, Any]:
    name = f"node-{index}"
    allocatable: dict[str, Any] = {
        "cpu": rng.choice(("1", "2", "4", "500m")),
        "memory": rng.choice(("1Gi", "2Gi", "8Gi")),
        "pods": rng.choice((3, 5, 110)),
        "ephemeral-storage": rng.choice(("1Gi", "10Gi")),
    }
    if rng.random() < 0.3:
        allocatable[GPU] = rng.choice((1, 2))
    labels = {"kubernetes.io/hostname": name, "disk": rng.choice(("ssd", "hdd"))}
    if rng.random() < 0.9:
        labels[ZONE] = rng.choice(("z1", "z2", "z3"))
    taints = [
        {
            "key": rng.choice(("dedicated", "gpu", "maintenance")),
            "value": rng.choice(("infra", "true")),
            "effect": rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute")),
        }
        for _ in range(rng.choice((0, 0, 0, 1, 2)))
    ]
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if rng.random() < 0.05:
        spec["unschedulable"] = True
    images = [
        {"names": [image], "sizeBytes": rng.choice((30, 300, 900)) * 1024 * 1024}
        for image in IMAGES
        if rng.random() < 0.4
    ]
    status: dict[str, Any] = {"allocatable": allocatable, "capacity": dict(allocatable)}
    if images:
        status["images"] = images
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": spec,
        "status": status,
    }


def random_requests(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.15:
        return None
    requests: dict[str, Any] = {}
    if rng.random() < 0.9:
        requests["cpu"] = rng.choice(("0", "100m", "250m", "500m", "1"))
    if rng.random() < 0.9:
        requests["memory"] = rng.choice(("64Mi", "256Mi", "1Gi"))
    if rng.random() < 0.1:
        requests[GPU] = 1
    if rng.random() < 0.1:
        requests["ephemeral-storage"] = "2Gi"
    return requests


def container(
    rng: random.Random, name: str, requests: dict[str, Any] | None, **extra: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": rng.choice(IMAGES), **extra}
    if requests is not None:
        c["resources"] = {"requests": requests}
    return c


def random_spec(rng: random.Random) -> dict[str, Any]:
    """A pod's spec: containers, init containers and sidecars, selectors, tolerations."""
    containers = [container(rng, "main", random_requests(rng))]
    if rng.random() < 0.2:
        containers[0]["ports"] = [{"containerPort": 80, "hostPort": rng.choice((8080, 9090))}]
    if rng.random() < 0.2:
        containers.append(container(rng, "side", {"cpu": "50m"}))
    spec: dict[str, Any] = {"containers": containers}
    inits = []
    if rng.random() < 0.25:
        inits.append(container(rng, "init", rng.choice((None, {"cpu": "2"}, {"memory": "3Gi"}))))
    if rng.random() < 0.15:
        inits.insert(0, container(rng, "proxy", {"cpu": "100m"}, restartPolicy="Always"))
    if inits:
        spec["initContainers"] = inits
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"disk": rng.choice(("ssd", "hdd"))}
    node_affinity: dict[str, Any] = {}
    if rng.random() < 0.2:
        term: dict[str, Any] = {
            "matchExpressions": [
                {"key": ZONE, "operator": "In", "values": rng.sample(("z1", "z2", "z3"), 2)}
            ]
        }
        if rng.random() < 0.3:
            term = {
                "matchFields": [
                    {
                        "key": "metadata.name",
                        "operator": "In",
                        "values": [f"node-{rng.randrange(6)}"],
                    }
                ]
            }
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [term]
        }
    if rng.random() < 0.4:
        preference: dict[str, Any] = {
            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
        }
        if rng.random() < 0.5:
            named = f"node-{rng.randrange(6)}"
            preference["matchFields"] = [
                {"key": "metadata.name", "operator": "NotIn", "values": [named]}
            ]
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.choice((1, 5)), "preference": preference}
        ]
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    if rng.random() < 0.3:
        spec["tolerations"] = [
            rng.choice(
                (
                    {"key": "dedicated", "operator": "Equal", "value": "infra"},
                    {"operator": "Exists"},
                    {"key": "maintenance", "operator": "Exists", "effect": "PreferNoSchedule"},
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                    {"key": "gpu", "operator": "Exists", "effect": "NoExecute"},
                )
            )
        ]
    if rng.random() < 0.03:
        spec["nodeName"] = f"node-{rng.randrange(4)}"
    return spec


def pod(name: str, spec: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
    }


def build_world(
    seed: int, num_nodes: int, num_pods: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(num_nodes)]
    placed = []
    for i in range(num_nodes * 2):
        spec = random_spec(rng)
        spec.pop("nodeName", None)
        placed.append(pod(f"placed-{i}", spec, node=f"node-{rng.randrange(num_nodes)}"))
    templates = [random_spec(rng) for _ in range(max(3, num_pods // 4))]
    pending = [pod(f"pending-{i}", rng.choice(templates)) for i in range(num_pods)]
    return nodes, placed, pending


def build_cluster(nodes: list[dict[str, Any]], placed: list[dict[str, Any]]) -> ClusterState:
    state = ClusterState()
    for n in nodes:
        state.set_node(parse_node(n))
    for p in placed:
        state.add_pod(parse_pod(p))
    return state


#: (plugin, weight, args) of a profile: filters first, then scores (weight 0: no score).
Profile = list[tuple[str, int, dict[str, Any] | None]]

FILTERS: Profile = [
    ("NodeUnschedulable", 0, None),
    ("NodeName", 0, None),
    ("TaintToleration", 3, None),
    ("NodeAffinity", 2, None),
    ("NodePorts", 0, None),
    ("NodeResourcesFit", 1, None),
]
SCORES: Profile = [("NodeResourcesBalancedAllocation", 1, None), ("ImageLocality", 1, None)]

PROFILES: dict[str, Profile] = {
    "v1.30 default": FILTERS + SCORES,
    "most allocated, extended resources": [
        *FILTERS[:-1],
        (
            "NodeResourcesFit",
            2,
            {
                "ignoredResourceGroups": ["example.com"],
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [
                        {"name": "cpu", "weight": 3},
                        {"name": "memory", "weight": 1},
                        {"name": GPU, "weight": 5},
                    ],
                },
            },
        ),
        (
            "NodeResourcesBalancedAllocation",
            1,
            {
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "memory", "weight": 1},
                    {"name": "ephemeral-storage", "weight": 1},
                ]
            },
        ),
    ],
    "requested to capacity ratio, added affinity": [
        ("NodeUnschedulable", 0, None),
        ("TaintToleration", 1, None),
        (
            "NodeAffinity",
            4,
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": ZONE, "operator": "Exists"}]}
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 3,
                            "preference": {
                                "matchExpressions": [
                                    {"key": ZONE, "operator": "In", "values": ["z2"]}
                                ]
                            },
                        }
                    ],
                }
            },
        ),
        (
            "NodeResourcesFit",
            1,
            {
                "ignoredResources": [GPU],
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 2}],
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": 0, "score": 0},
                            {"utilization": 50, "score": 7},
                            {"utilization": 100, "score": 10},
                        ]
                    },
                },
            },
        ),
        ("ImageLocality", 2, None),
    ],
}

#: The plugins without a Filter (scores only).
SCORE_ONLY = {"NodeResourcesBalancedAllocation", "ImageLocality"}


def compile_profile(profile: Profile, state: ClusterState) -> CompiledPolicy:
    predicates = []
    priorities = []
    for name, weight, args in profile:
        plugin: Any = make_plugin(name, args, state)
        if name not in SCORE_ONLY:
            predicates.append(compiled_predicate(name, plugin.predicate()))
        if weight:
            priorities.append(compiled_priority(name, weight, plugin.priority()))
    return CompiledPolicy(
        name="v1.30",
        scheduler_name="default-scheduler",
        predicates=tuple(predicates),
        priorities=tuple(priorities),
        always_check_all_predicates=False,
        percentage_of_nodes_to_score=0,
        settings=PolicySettings(),
    )


def assert_same(fast: Decision, slow: Decision, where: str) -> None:
    assert fast.node == slow.node, where
    assert fast.feasible == slow.feasible, where
    assert list(fast.failed.items()) == list(slow.failed.items()), where
    assert fast.scores == slow.scores, where
    assert fast.message == slow.message, where
    assert fast.evaluated == slow.evaluated, where


def churn(rng: random.Random, states: list[ClusterState], num_nodes: int) -> None:
    action = rng.random()
    if action < 0.2:
        uids = sorted(states[0].pods)
        if uids:
            uid = rng.choice(uids)
            for state in states:
                state.remove_pod(uid)
    elif action < 0.35:
        index = rng.randrange(num_nodes)
        changed = random_node(rng, index)
        for state in states:
            state.set_node(parse_node(copy.deepcopy(changed)))


def run_both(seed: int, profile: str, num_nodes: int, num_pods: int) -> int:
    nodes, placed, pending = build_world(seed, num_nodes, num_pods)
    fast_state = build_cluster(nodes, placed)
    slow_state = build_cluster(nodes, placed)
    # One plugin set per cluster (ImageLocality and Fit read the handle's cluster only
    # through the cycle, but each side gets its own, as a scheduler would).
    fast_policy = compile_profile(PROFILES[profile], fast_state)
    slow_policy = compile_profile(PROFILES[profile], slow_state)
    slow_policy = replace(slow_policy, settings=replace(slow_policy.settings, fast=False))
    fast_scheduler, slow_scheduler = Scheduler(chunk_size=16), Scheduler(chunk_size=16)
    rng = random.Random(seed * 7 + 1)
    placed_count = 0

    async def decide_all() -> None:
        nonlocal placed_count
        for step, raw in enumerate(pending):
            incoming = parse_pod(raw)
            fast = await fast_scheduler.schedule(incoming, fast_state, fast_policy)
            slow = await slow_scheduler.schedule(incoming, slow_state, slow_policy)
            assert_same(fast, slow, f"seed {seed}, {profile}, pod {step}")
            if fast.node is not None:
                placed_count += 1
                for state in (fast_state, slow_state):
                    state.add_pod(replace(incoming, node_name=fast.node))
            churn(rng, [fast_state, slow_state], num_nodes)

    asyncio.run(decide_all())
    return placed_count


@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_path_decides_as_the_plain_path(profile: str, seed: int) -> None:
    placed = run_both(seed, profile, num_nodes=24, num_pods=40)
    # The queue is not trivially refused everywhere (the comparison would prove little).
    assert placed > 5


def test_hints_cover_the_refusals_on_a_bigger_cluster() -> None:
    """Screens name every node a predicate refuses (a superset), on 150 nodes."""
    nodes, placed, pending = build_world(42, 150, 30)
    state = build_cluster(nodes, placed)
    from policy_scheduler.engine.functions import CycleState, hints_of

    infos = state.ordered_nodes()
    for name, _, args in FILTERS:
        plugin: Any = make_plugin(name, args, state)
        predicate = plugin.predicate()
        screen: Callable[..., list[int]] | None = hints_of(predicate).screen
        assert screen is not None, name
        for raw in pending:
            incoming = parse_pod(raw)
            cycle = CycleState(incoming, state, PolicySettings())
            refused = {k for k, info in enumerate(infos) if predicate(incoming, info, cycle)}
            assert refused <= set(screen(incoming, infos, cycle)), (name, incoming.name)
