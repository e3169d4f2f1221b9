"""The fast path decides exactly as the plain definitions, on randomized clusters.

Every fast path of the engine (the per-pod predicate plan, the equivalence cache, the
cluster indexes, the cheaper scoring bookkeeping) sits behind ``PolicySettings.fast``.
Here seeded generators build a cluster — nodes with varied resources, labels, zones,
taints, conditions, cordons, images and preferAvoidPods; placed pods; PVs, PVCs,
StorageClasses, CSINodes; Services and ReplicaSets — and a queue of pending pods with
requests, init containers, selectors, node affinity, tolerations, host ports, volumes,
pod (anti-)affinity and topology spread, many of them sharing a template (so the
equivalence cache hits), with priorities, and pods nominated to nodes (so the first of
the two passes runs). Two identical ClusterStates and two Schedulers decide the queue in
sequence, assuming each placement, one with ``fast=True`` and one with ``fast=False``;
between decisions both clusters get the same churn (a pod deleted, a node changed, a
nomination made or withdrawn). Every field of every Decision must be equal, and so must
the rotation state; a pod that fits nowhere is put through preemption too, both ways,
with the same answer and both clusters left as they were.

Plus direct cases for what the plan and the cache must never do: serve a node whose
state changed, or share a result between pods that differ.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from builders import (
    add_object,
    claim_volume,
    cluster_picture,
    container,
    csi_node,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)
from policy_scheduler import names
from policy_scheduler.engine.algorithm import Decision, EquivalenceCache, Scheduler
from policy_scheduler.engine.cluster import ClusterState, NodeJournal
from policy_scheduler.engine.compiler import CompiledPolicy, compile_policy
from policy_scheduler.engine.evaluator import FastEvaluator
from policy_scheduler.engine.functions import hints_of
from policy_scheduler.engine.predicates import general, volumes
from policy_scheduler.objects import parse_node, parse_pod
from policy_scheduler.policy import default_policy, parse_policy

ZONES = ("z1", "z2", "z3")
ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")
IMAGES = ("registry.example/web:1", "registry.example/db:2", "nginx")


# -- generators -----------------------------------------------------------------------------


def random_node(rng: random.Random, index: int) -> dict[str, Any]:
    name = f"node-{index}"
    zone = rng.choice(ZONES)
    labels: dict[str, str] = {"disk": rng.choice(("ssd", "hdd"))}
    if rng.random() < 0.9:
        labels[ZONE] = zone
        labels[BETA_ZONE] = zone
        labels[REGION] = "r1"
    if rng.random() < 0.3:
        labels["beta.kubernetes.io/instance-type"] = rng.choice(("m5.large", "t2.small"))
    if rng.random() < 0.2:
        labels["rack"] = f"rack-{rng.randrange(3)}"
    taints: list[dict[str, Any]] = []
    for _ in range(rng.choice((0, 0, 0, 1, 2))):
        taints.append(
            {
                "key": rng.choice(("dedicated", "gpu", "maintenance")),
                "value": rng.choice(("infra", "true")),
                "effect": rng.choice(("NoSchedule", "PreferNoSchedule", "NoExecute")),
            }
        )
    conditions: dict[str, str] = {}
    if rng.random() < 0.93:
        conditions["Ready"] = "True" if rng.random() < 0.95 else "False"
    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        conditions[kind] = "True" if rng.random() < 0.05 else "False"
    if rng.random() < 0.03:
        conditions["NetworkUnavailable"] = "True"
    allocatable: dict[str, Any] = {
        "cpu": rng.choice(("1", "2", "4", "500m")),
        "memory": rng.choice(("1Gi", "2Gi", "8Gi")),
        "pods": rng.choice((3, 5, 110)),
        "ephemeral-storage": rng.choice(("1Gi", "10Gi")),
    }
    if rng.random() < 0.3:
        allocatable["example.com/gpu"] = rng.choice((1, 2))
    if rng.random() < 0.2:
        allocatable["attachable-volumes-aws-ebs"] = rng.choice((1, 2))
    images = [
        ([image], rng.choice((30, 300, 900)) * 1024 * 1024)
        for image in IMAGES
        if rng.random() < 0.4
    ]
    annotations = None
    if rng.random() < 0.1:
        annotations = {
            "scheduler.alpha.kubernetes.io/preferAvoidPods": (
                '{"preferAvoidPods": [{"podSignature": {"podController": '
                '{"kind": "ReplicaSet", "uid": "rs-web"}}}]}'
            )
        }
    return node(
        name,
        allocatable=allocatable,
        labels=labels,
        taints=taints or None,
        unschedulable=rng.random() < 0.05,
        conditions=conditions,
        images=images or None,
        annotations=annotations,
    )


def random_requests(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.15:
        return None  # BestEffort
    requests: dict[str, Any] = {
        "cpu": rng.choice(("100m", "250m", "500m", "1")),
        "memory": rng.choice(("64Mi", "256Mi", "1Gi")),
    }
    if rng.random() < 0.1:
        requests["example.com/gpu"] = 1
    if rng.random() < 0.1:
        requests["ephemeral-storage"] = "2Gi"
    return requests


def random_spread(rng: random.Random, app: str) -> dict[str, Any]:
    """A topology spread constraint with today's optional fields, each sometimes set."""
    when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
    constraint: dict[str, Any] = {
        "maxSkew": rng.choice((1, 1, 2)),
        "topologyKey": rng.choice((ZONE, ZONE, "rack", HOSTNAME)),
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
    }
    if when == "DoNotSchedule" and rng.random() < 0.3:
        constraint["minDomains"] = rng.choice((1, 2, 4))
    for field_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if rng.random() < 0.3:
            constraint[field_name] = rng.choice(("Honor", "Ignore"))
    if rng.random() < 0.3:
        constraint["matchLabelKeys"] = ["tier"]
    return constraint


def random_pod_spec(rng: random.Random) -> dict[str, Any]:
    """A pending pod's template (name and uid are set per pod)."""
    app = rng.choice(APPS)
    labels = {"app": app, "tier": rng.choice(("front", "back"))}
    requests = random_requests(rng)
    limits = dict(requests) if requests and rng.random() < 0.5 else None
    ports = [rng.choice((8080, 9090))] if rng.random() < 0.1 else []
    containers = [
        container(requests, limits, name="main", image=rng.choice(IMAGES), host_ports=ports)
    ]
    if rng.random() < 0.2:
        containers.append(container({"cpu": "50m"}, name="side", image="sidecar"))
    kwargs: dict[str, Any] = {"labels": labels, "containers": containers}
    if rng.random() < 0.15:
        kwargs["init_containers"] = [container({"cpu": "2"}, name="init")]
    if rng.random() < 0.2:
        kwargs["node_selector"] = {"disk": rng.choice(("ssd", "hdd"))}
    affinity: dict[str, Any] = {}
    if rng.random() < 0.25:
        node_affinity: dict[str, Any] = {}
        if rng.random() < 0.5:
            zones = rng.sample(ZONES, 2)
            node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}
                ]
            }
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": rng.choice((1, 5)),
                "preference": {
                    "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                },
            }
        ]
        affinity["nodeAffinity"] = node_affinity
    if rng.random() < 0.15:
        term = {
            "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
            "topologyKey": rng.choice((HOSTNAME, ZONE)),
        }
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        if rng.random() < 0.5:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            affinity[kind] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": term}
                ]
            }
    if affinity:
        kwargs["affinity"] = affinity
    if rng.random() < 0.2:
        kwargs["tolerations"] = [
            rng.choice(
                (
                    {"key": "dedicated", "operator": "Equal", "value": "infra"},
                    {"operator": "Exists"},
                    {"key": "maintenance", "operator": "Exists", "effect": "PreferNoSchedule"},
                    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
                )
            )
        ]
    if rng.random() < 0.2:
        kwargs["volumes"] = [
            rng.choice(
                (
                    claim_volume("bound-z1"),
                    claim_volume("wait"),
                    claim_volume("ebs-claim"),
                    {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1"}},
                    {"name": "pd", "gcePersistentDisk": {"pdName": "pd-1"}},
                    {"name": "scratch", "emptyDir": {}},
                )
            )
        ]
    if rng.random() < 0.25:
        kwargs["spread"] = [random_spread(rng, app) for _ in range(rng.choice((1, 1, 2)))]
    if app == "web" and rng.random() < 0.5:
        kwargs["owner"] = ("ReplicaSet", "web", "rs-web")
    if rng.random() < 0.03:
        kwargs["node_name"] = f"node-{rng.randrange(4)}"
    return kwargs


def storage_objects() -> list[dict[str, Any]]:
    return [
        storage_class("local", mode="WaitForFirstConsumer"),
        storage_class("ebs", "kubernetes.io/aws-ebs"),
        pv(
            "pv-z1",
            labels={ZONE: "z1", REGION: "r1"},
            capacity="1Gi",
            claim=("default", "bound-z1"),
        ),
        pvc(
            "bound-z1", volume_name="pv-z1", annotations={"pv.kubernetes.io/bind-completed": "yes"}
        ),
        pv(
            "local-1",
            storage_class="local",
            capacity="5Gi",
            access_modes=["ReadWriteOnce"],
            affinity={ZONE: ["z2"]},
        ),
        pvc("wait", storage_class="local", request="1Gi", access_modes=["ReadWriteOnce"]),
        pvc("ebs-claim", storage_class="ebs"),
        csi_node("node-0", {"ebs.csi.aws.com": 1}),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "rs-web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    ]


def build_world(
    seed: int, num_nodes: int, num_pods: int, *, distinct: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Node dicts, placed pod dicts and pending pod dicts for one seed; ``distinct``:
    every pending pod has a template of its own (the equivalence cache never admits
    them, so the screened filter and the batch scores decide)."""
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(num_nodes)]
    placed = []
    for i in range(num_nodes):
        spec = random_pod_spec(rng)
        spec.pop("node_name", None)
        spec.pop("volumes", None)  # placed pods keep to inline disks
        placed.append(pod(f"placed-{i}", node_name=f"node-{rng.randrange(num_nodes)}", **spec))
    if distinct:
        pending = [pod(f"pending-{i}", **random_pod_spec(rng)) for i in range(num_pods)]
        return nodes, placed, pending
    templates = [random_pod_spec(rng) for _ in range(max(3, num_pods // 4))]
    pending = [pod(f"pending-{i}", **copy.deepcopy(rng.choice(templates))) for i in range(num_pods)]
    return nodes, placed, pending


PRIORITIES = (0, 0, 100, 1000)


def nominations(seed: int, num_nodes: int, pending: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Priorities for the pending pods (in place) and a few nominated pods, from their own
    generator so that the clusters of each seed stay what they were without them."""
    rng = random.Random(seed * 13 + 5)
    for raw in pending:
        raw["spec"]["priority"] = rng.choice(PRIORITIES)
    out = []
    for i in range(max(1, num_nodes // 4)):
        spec = random_pod_spec(rng)
        spec.pop("node_name", None)
        spec.pop("volumes", None)
        raw = pod(f"nominated-{i}", priority=rng.choice(PRIORITIES), **spec)
        out.append((f"node-{rng.randrange(num_nodes)}", parse_pod(raw)))
    return out


def build_cluster(nodes: list[dict[str, Any]], placed: list[dict[str, Any]]) -> ClusterState:
    state = ClusterState()
    for n in nodes:
        state.set_node(parse_node(n))
    for p in placed:
        state.add_pod(parse_pod(p))
    for obj in storage_objects():
        add_object(state, obj)
    return state


ALL_PREDICATES = list(names.LEGACY_PREDICATE_ORDER)
ALL_PRIORITIES = [
    (name, weight) for weight, name in enumerate(sorted(names.BUILTIN_PRIORITIES), start=1)
]
CUSTOM_PREDICATES = [
    {"name": "ZoneRequired", "argument": {"labelsPresence": {"labels": [ZONE], "presence": True}}},
    {"name": "SameRegion", "argument": {"serviceAffinity": {"labels": [REGION]}}},
    names.POD_FITS_RESOURCES,
    names.POD_TOLERATES_NODE_TAINTS,
    names.CHECK_NODE_UNSCHEDULABLE,
    names.HOST_NAME,
    names.MATCH_NODE_SELECTOR,
    names.POD_FITS_HOST_PORTS,
]
CUSTOM_PRIORITIES: list[Any] = [
    {
        "name": "PreferSSD",
        "weight": 2,
        "argument": {"labelPreference": {"label": "disk", "presence": True}},
    },
    {"name": "RackSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
    {
        "name": "Packing",
        "weight": 1,
        "argument": {
            "requestedToCapacityRatioArguments": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            }
        },
    },
    (names.RESOURCE_LIMITS, 1),
    (names.MOST_REQUESTED, 1),
    (names.NODE_AFFINITY, 2),
]


def policy_doc(
    predicates: list[Any] | None = None, priorities: list[Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec)
    if predicates is not None:
        body["predicates"] = [p if isinstance(p, dict) else {"name": p} for p in predicates]
    if priorities is not None:
        body["priorities"] = [
            p if isinstance(p, dict) else {"name": p[0], "weight": p[1]} for p in priorities
        ]
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "diff"},
        "spec": body,
    }


POLICIES: dict[str, Callable[[], CompiledPolicy]] = {
    "default": lambda: compile_policy(default_policy()),
    "all": lambda: compile_policy(parse_policy(policy_doc(ALL_PREDICATES, ALL_PRIORITIES))),
    "check-all": lambda: compile_policy(
        parse_policy(policy_doc(ALL_PREDICATES, ALL_PRIORITIES, alwaysCheckAllPredicates=True))
    ),
    "percentage-50": lambda: compile_policy(parse_policy(policy_doc(percentageOfNodesToScore=50))),
    "custom": lambda: compile_policy(
        parse_policy(
            policy_doc(CUSTOM_PREDICATES, CUSTOM_PRIORITIES, hardPodAffinitySymmetricWeight=5)
        )
    ),
}


def plain(policy: CompiledPolicy) -> CompiledPolicy:
    return replace(policy, settings=replace(policy.settings, fast=False))


def assert_same(fast: Decision, slow: Decision, where: str) -> None:
    assert fast.node == slow.node, where
    assert fast.feasible == slow.feasible, where
    assert fast.failed == slow.failed, where
    assert list(fast.failed) == list(slow.failed), where
    assert fast.scores == slow.scores, where
    assert fast.message == slow.message, where
    assert fast.evaluated == slow.evaluated, where
    assert fast.num_all_nodes == slow.num_all_nodes, where


def remove_a_pod(rng: random.Random, states: list[ClusterState]) -> None:
    """The same placed pod, chosen at random, taken off every state (if any is placed)."""
    uids = sorted(states[0].pods)
    if uids:
        uid = rng.choice(uids)
        for state in states:
            state.remove_pod(uid)


def churn(
    rng: random.Random,
    step: int,
    states: list[ClusterState],
    nodes: list[Any],
    nominated: list[tuple[str, Any]],
) -> None:
    """The same cache change on every state: a pod leaves, a node changes, a nomination
    comes or goes (nodes' cached results must not depend on nominations)."""
    action = rng.random()
    if action < 0.1 and nominated:
        node_name, other = rng.choice(nominated)
        for state in states:
            if state.nomination_of(other.uid) is None:
                state.set_nominated(other, node_name)
            else:
                state.remove_nominated(other.uid)
    elif action < 0.3:
        remove_a_pod(rng, states)
    elif action < 0.45:
        index = rng.randrange(len(nodes))
        changed = random_node(rng, index)
        for state in states:
            state.set_node(parse_node(copy.deepcopy(changed)))


def run_both(
    seed: int,
    policy_name: str,
    num_nodes: int,
    num_pods: int,
    *,
    distinct: bool = False,
    chunk_size: int = 64,
) -> tuple[int, int, int]:
    """Decide one seed's queue both ways; (pods placed, node failures seen, preemptions)."""
    nodes, placed, pending = build_world(seed, num_nodes, num_pods, distinct=distinct)
    nominated = nominations(seed, num_nodes, pending)
    fast_state = build_cluster(nodes, placed)
    slow_state = build_cluster(nodes, placed)
    for state in (fast_state, slow_state):
        for node_name, other in nominated[::2]:
            state.set_nominated(other, node_name)
    fast_policy = POLICIES[policy_name]()
    assert fast_policy.settings.fast
    slow_policy = plain(fast_policy)
    fast_scheduler = Scheduler(chunk_size=chunk_size)
    slow_scheduler = Scheduler(chunk_size=chunk_size)
    rng = random.Random(seed * 7 + 1)
    placed_count = failures = preemptions = 0

    async def decide_all() -> None:
        nonlocal placed_count, failures, preemptions
        for step, raw in enumerate(pending):
            incoming = parse_pod(raw)
            fast = await fast_scheduler.schedule(incoming, fast_state, fast_policy)
            slow = await slow_scheduler.schedule(incoming, slow_state, slow_policy)
            where = f"seed {seed}, policy {policy_name}, pod {step} ({incoming.name})"
            assert_same(fast, slow, where)
            assert fast_scheduler.next_start == slow_scheduler.next_start, where
            assert fast_scheduler.last_node_index == slow_scheduler.last_node_index, where
            failures += len(fast.failed)
            if fast.node is not None:
                placed_count += 1
                fast_state.add_pod(replace(incoming, node_name=fast.node))
                slow_state.add_pod(replace(incoming, node_name=fast.node))
            else:
                # Preemption, evaluated both ways, leaves both clusters as they were.
                before = cluster_picture(fast_state)
                fast_found = await fast_scheduler.preempt(fast, fast_state, fast_policy)
                slow_found = await slow_scheduler.preempt(slow, slow_state, slow_policy)
                assert fast_found == slow_found, where
                assert cluster_picture(fast_state) == before, where
                preemptions += fast_found is not None and fast_found.node is not None
            churn(rng, step, [fast_state, slow_state], nodes, nominated)

    asyncio.run(decide_all())
    return placed_count, failures, preemptions


@pytest.mark.parametrize(
    ("policy_name", "num_nodes", "num_pods", "seeds"),
    [
        pytest.param("default", 24, 40, (1, 2, 3, 4), id="default"),
        pytest.param("all", 20, 40, (5, 6, 7), id="all-predicates-and-priorities"),
        pytest.param("check-all", 20, 30, (8, 9, 10), id="always-check-all-predicates"),
        pytest.param("percentage-50", 130, 40, (11, 12), id="percentage-of-nodes-50"),
        pytest.param("custom", 20, 40, (13, 14, 15), id="custom-arguments"),
    ],
)
def test_fast_and_plain_decide_alike(
    policy_name: str, num_nodes: int, num_pods: int, seeds: tuple[int, ...]
) -> None:
    outcomes = [run_both(seed, policy_name, num_nodes, num_pods) for seed in seeds]
    # The generators must keep every outcome in play: placements, failing nodes, and
    # preemptions that found a node.
    assert sum(placed for placed, _, _ in outcomes) > 0
    assert sum(failures for _, failures, _ in outcomes) > 0
    assert sum(found for _, _, found in outcomes) > 0


@pytest.mark.parametrize(
    ("policy_name", "num_nodes", "num_pods", "chunk_size", "seeds"),
    [
        pytest.param("default", 40, 50, 7, (21, 22, 23), id="default"),
        pytest.param("all", 30, 50, 4, (24, 25), id="all-predicates-and-priorities"),
        pytest.param("check-all", 30, 40, 9, (26, 27), id="always-check-all-predicates"),
        pytest.param("percentage-50", 130, 40, 16, (28, 29), id="percentage-of-nodes-50"),
        pytest.param("custom", 30, 50, 5, (30, 31), id="custom-arguments"),
    ],
)
def test_fast_and_plain_decide_alike_for_pods_that_all_differ(
    policy_name: str, num_nodes: int, num_pods: int, chunk_size: int, seeds: tuple[int, ...]
) -> None:
    # No two pending pods alike, small chunks: the screens decide which nodes each
    # predicate checks, a chunk at a time (wrapping around the node list), and the
    # scores come from the batch forms, never from the equivalence cache.
    outcomes = [
        run_both(seed, policy_name, num_nodes, num_pods, distinct=True, chunk_size=chunk_size)
        for seed in seeds
    ]
    assert sum(placed for placed, _, _ in outcomes) > 0
    assert sum(failures for _, failures, _ in outcomes) > 0
    assert sum(found for _, _, found in outcomes) > 0


def test_the_default_worlds_exercise_todays_spread_fields() -> None:
    # The "default" row above runs EvenPodsSpread and its priority on these pods: it
    # only proves the fast path exact for the spread fields if they occur and bite.
    seen: set[str] = set()
    refused = 0
    for seed in (1, 2, 3, 4):
        nodes, placed, pending = build_world(seed, 24, 40)
        for raw in pending:
            for constraint in raw["spec"].get("topologySpreadConstraints", []):
                seen.update(constraint)
        state = build_cluster(nodes, placed)
        for raw in pending:
            decision = asyncio.run(
                Scheduler().schedule(parse_pod(raw), state, POLICIES["default"]())
            )
            refused += sum(
                "node(s) didn't match pod topology spread constraints" in reasons
                for reasons in decision.failed.values()
            )
    assert {"minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"} <= seen
    assert refused > 0


# -- the plan and the cache, directly -------------------------------------------------------


def decide(scheduler: Scheduler, raw: dict[str, Any], state: ClusterState) -> Decision:
    return asyncio.run(scheduler.schedule(parse_pod(raw), state, compile_policy(default_policy())))


def test_a_changed_node_is_not_served_from_the_cache() -> None:
    state = build_cluster([node("a", cpu="1"), node("b", cpu="1")], [])
    scheduler = Scheduler()
    first = decide(scheduler, pod("p1", requests={"cpu": "600m"}), state)
    assert first.feasible == ["a", "b"]
    state.add_pod(parse_pod(pod("hog", requests={"cpu": "600m"}, node_name="a")))
    second = decide(scheduler, pod("p2", requests={"cpu": "600m"}), state)
    assert second.feasible == ["b"]
    assert second.failed == {"a": ["Insufficient cpu"]}
    state.set_node(parse_node(node("b", cpu="1", taints=[{"key": "k", "effect": "NoSchedule"}])))
    third = decide(scheduler, pod("p3", requests={"cpu": "600m"}), state)
    assert third.node is None
    assert third.failed == {
        "a": ["Insufficient cpu"],
        "b": ["node(s) had taints that the pod didn't tolerate"],
    }


def test_pods_that_differ_do_not_share_cached_results() -> None:
    state = build_cluster([node("a", labels={"disk": "ssd"}), node("b")], [])
    scheduler = Scheduler()
    anywhere = decide(scheduler, pod("p1"), state)
    assert anywhere.feasible == ["a", "b"]
    ssd_only = decide(scheduler, pod("p2", node_selector={"disk": "ssd"}), state)
    assert ssd_only.feasible == ["a"]
    assert ssd_only.failed == {"b": ["node(s) didn't match node selector"]}


def test_same_template_same_fingerprint_identity_aside() -> None:
    one = parse_pod(pod("one", requests={"cpu": "1"}, labels={"app": "web"}))
    two = parse_pod(pod("two", requests={"cpu": "1"}, labels={"app": "web"}))
    other = parse_pod(pod("three", requests={"cpu": "1"}, labels={"app": "db"}))
    assert one.fingerprint == two.fingerprint
    assert one.fingerprint != other.fingerprint
    assert len(one.fingerprint) == 16


@pytest.mark.parametrize(
    ("raw", "dropped"),
    [
        pytest.param(pod(), True, id="no-volumes"),
        pytest.param(pod(volumes=[claim_volume("data")]), False, id="a-claim"),
        pytest.param(pod(volumes=[{"name": "scratch", "emptyDir": {}}]), True, id="an-empty-dir"),
    ],
)
def test_volume_predicates_leave_the_plan_without_claims(
    raw: dict[str, Any], dropped: bool
) -> None:
    incoming = parse_pod(raw)
    for fn in (
        volumes.check_volume_binding,
        volumes.no_volume_zone_conflict,
        volumes.max_csi_volume_count,
        volumes.max_ebs_volume_count,
    ):
        never_fails = hints_of(fn).never_fails
        assert never_fails is not None
        assert never_fails(incoming) is dropped


@pytest.mark.parametrize(
    ("raw", "predicate", "dropped"),
    [
        pytest.param(pod(), general.host_name, True, id="hostname-without-nodeName"),
        pytest.param(pod(node_name="a"), general.host_name, False, id="hostname-with-nodeName"),
        pytest.param(pod(), general.pod_fits_host_ports, True, id="ports-without-host-ports"),
        pytest.param(
            pod(host_ports=[80]), general.pod_fits_host_ports, False, id="ports-with-host-port"
        ),
        pytest.param(pod(), general.match_node_selector, True, id="selector-without-one"),
        pytest.param(
            pod(node_selector={"a": "b"}), general.match_node_selector, False, id="selector"
        ),
        pytest.param(
            pod(requests={"cpu": "1"}),
            general.check_node_memory_pressure,
            True,
            id="memory-pressure-burstable",
        ),
        pytest.param(pod(), general.check_node_memory_pressure, False, id="memory-best-effort"),
    ],
)
def test_general_predicates_leave_the_plan_when_they_cannot_fail(
    raw: dict[str, Any], predicate: Any, dropped: bool
) -> None:
    never_fails = hints_of(predicate).never_fails
    assert never_fails is not None
    assert never_fails(parse_pod(raw)) is dropped


def test_the_cache_stays_bounded() -> None:
    cache = EquivalenceCache(max_tables=2)
    for key in ("a", "b", "c"):
        cache.table(key, 1)["n"] = (1, ())
    assert cache.entries() == 2
    table = cache.table("c", 1)
    for i in range(100):
        table[f"n{i}"] = (1, ())
    # Many more nodes than the cluster holds (nodes came and went): started over.
    assert len(cache.table("c", 1)) == 0


def test_the_cache_keeps_tables_only_for_keys_seen_lately() -> None:
    cache = EquivalenceCache(max_tables=2)
    assert cache.admit("a", 1) is None  # first sight: no table
    table = cache.admit("a", 1)
    assert table is not None
    table["n"] = (1, ())
    for key in ("b", "c", "d"):
        assert cache.admit(key, 1) is None
    assert cache.admit("b", 1) is None  # seen, then forgotten behind c and d
    assert cache.admit("a", 1) is table


def test_without_explanation_the_decision_is_the_same_minus_scores() -> None:
    state = build_cluster([node("a"), node("b", cpu="8")], [])
    explained = decide(Scheduler(), pod("p", requests={"cpu": "1"}), state)
    quiet = decide(Scheduler(explain=False), pod("p", requests={"cpu": "1"}), state)
    assert explained.scores and not quiet.scores
    assert (quiet.node, quiet.feasible, quiet.failed, quiet.message) == (
        explained.node,
        explained.feasible,
        explained.failed,
        explained.message,
    )


# -- the journaled filter -------------------------------------------------------------------


def journal_world(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Nodes of one zone or another; some small (full after a pod), some tainted."""
    out = []
    for index in range(count):
        kind = rng.random()
        out.append(
            node(
                f"node-{index}",
                cpu="1" if kind < 0.15 else "8",
                labels={ZONE: rng.choice(ZONES)},
                taints=[{"key": "k", "effect": "NoSchedule"}] if kind > 0.95 else None,
            )
        )
    return out


def journal_churn(rng: random.Random, step: int, states: list[ClusterState]) -> None:
    """The same change to every state: what moves nodes in and out of the refused ones."""
    action = rng.random()
    names = sorted(states[0].nodes)
    target = rng.choice(names)
    if action < 0.2:
        for state in states:
            state.remove_node(target)
    elif action < 0.35:
        raw = node(f"new-{step}", cpu=rng.choice(("1", "8")), labels={ZONE: rng.choice(ZONES)})
        for state in states:
            state.set_node(parse_node(copy.deepcopy(raw)))
    elif action < 0.5:
        tainted = node(target, cpu="8", taints=[{"key": "k", "effect": "NoSchedule"}])
        for state in states:
            state.set_node(parse_node(copy.deepcopy(tainted)))
    elif action < 0.65:
        hog = parse_pod(pod(f"hog-{step}", requests={"cpu": "7"}, node_name=target))
        for state in states:
            state.add_pod(hog)
    elif action < 0.85:
        remove_a_pod(rng, states)
    else:
        # A what-if trial (as preemption makes): every pod off a node, then undone.
        for state in states:
            with state.trial(target) as trial:
                for uid in list(trial.node.pods):
                    trial.remove(uid)


@pytest.mark.parametrize(
    ("seed", "journal_limit"),
    [
        pytest.param(41, 65536, id="journal-remembers"),
        pytest.param(42, 65536, id="journal-remembers-other-seed"),
        pytest.param(43, 3, id="journal-forgets-between-decisions"),
    ],
)
def test_repeated_pods_are_filtered_from_the_journal_as_node_by_node(
    seed: int, journal_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 250 nodes, 120 wanted per attempt: the third pod of the template visits node by
    # node (the table is admitted on the second), then every later one is filtered from
    # the table and the journal, while nodes fill, leave, arrive, get tainted, lose pods.
    rng = random.Random(seed)
    nodes = journal_world(rng, 250)
    fast_state, slow_state = build_cluster(nodes, []), build_cluster(nodes, [])
    fast_state.journal.limit = journal_limit
    fast_policy = POLICIES["default"]()
    slow_policy = plain(fast_policy)
    fast_scheduler, slow_scheduler = Scheduler(), Scheduler()
    node_by_node = 0
    cached_check = FastEvaluator._cached_check

    def counted(*args: Any) -> Any:
        nonlocal node_by_node
        node_by_node += 1
        return cached_check(*args)

    monkeypatch.setattr(FastEvaluator, "_cached_check", staticmethod(counted))
    refused_seen = 0

    async def decide_all() -> None:
        nonlocal refused_seen
        for step in range(60):
            incoming = parse_pod(pod(f"web-{step}", requests={"cpu": "1"}, labels={"app": "web"}))
            fast = await fast_scheduler.schedule(incoming, fast_state, fast_policy)
            slow = await slow_scheduler.schedule(incoming, slow_state, slow_policy)
            where = f"seed {seed}, pod {step}"
            assert_same(fast, slow, where)
            assert fast_scheduler.next_start == slow_scheduler.next_start, where
            refused_seen += len(fast.failed)
            if fast.node is not None:
                for state in (fast_state, slow_state):
                    state.add_pod(replace(incoming, node_name=fast.node))
            journal_churn(rng, step, [fast_state, slow_state])

    asyncio.run(decide_all())
    assert refused_seen > 100  # refused nodes were skipped in the rotation, and named
    # The 2nd and 3rd pods only; from the 4th on, the journal (or, once it forgot, one
    # look at every node, then the journal again).
    assert node_by_node == 2
    forgot = fast_state.journal.since(0) is None
    assert forgot == (journal_limit < 1000)


def test_the_journal_names_changed_nodes_since_a_position_until_it_forgets() -> None:
    journal = NodeJournal(limit=4)
    start = journal.position
    for name in ("a", "b", "a"):
        journal.record(name)
    assert journal.since(start) == ["a", "b", "a"]
    middle = journal.position
    journal.record("c")
    assert journal.since(middle) == ["c"]
    journal.record("d")  # past the limit: the oldest half is dropped
    assert journal.since(start) is None
    assert journal.since(middle) == ["c", "d"]
    assert journal.since(journal.position) == []


def test_a_what_if_copy_of_the_cluster_has_a_journal_of_its_own() -> None:
    state = build_cluster([node("a"), node("b")], [])
    view = state.with_node(parse_node(node("a", cpu="1")))
    assert view.journal is not state.journal
    assert state.journal.since(0) == ["a", "b"]
