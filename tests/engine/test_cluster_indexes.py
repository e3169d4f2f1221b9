"""The cluster indexes behind the inter-pod and spreading fast paths, checked differentially.

Randomized clusters (seeded ``random.Random``, a few hundred cases) with varied labels,
namespaces, affinity terms, topology keys, nodes without topology labels, pods on nodes
not known yet, and a history of pods added, replaced, moved and removed and of nodes
relabelled, removed and re-added, so that the incremental indexes see every update path.
For each case:

* the indexes equal those of a cluster built from scratch with the final objects, and
  :meth:`ClusterState.candidates` never misses a matching pod;
* the fast path (indexes) and the plain definition (scans) give identical
  MatchInterPodAffinity metadata and verdicts, InterPodAffinityPriority domain weights
  and scores, EvenPodsSpread summaries and verdicts, and SelectorSpread,
  ServiceSpreading, serviceAntiAffinity and EvenPodsSpreadPriority scores;
* a whole decision through the engine is the same both ways.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import random
from types import SimpleNamespace
from typing import Any

import pytest

from builders import add_object, cluster, cycle, node, pod, policy, pv
from policy_scheduler import names
from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.functions import REGISTRY
from policy_scheduler.engine.nodeinfo import zone_key
from policy_scheduler.engine.predicates import interpod as interpod_predicate
from policy_scheduler.engine.predicates import spreading as spreading_predicate
from policy_scheduler.engine.priorities import interpod as interpod_priority
from policy_scheduler.engine.priorities import spreading as spreading_priority
from policy_scheduler.objects import Pod, parse_node, parse_persistent_volume, parse_pod
from policy_scheduler.policy import parse_policy
from policy_scheduler.selectors import label_selector

CASES = 300
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
TOPOLOGY_KEYS = (HOSTNAME, ZONE, "rack", "zone", "")
NAMESPACES = ("default", "team-a", "team-b")
LABEL_KEYS = ("app", "tier", "color", "example.com/role")
LABEL_VALUES = ("a", "b", "c", "")


# -- random objects -------------------------------------------------------------------------


def random_labels(rng: random.Random) -> dict[str, str]:
    return {key: rng.choice(LABEL_VALUES) for key in LABEL_KEYS if rng.random() < 0.5}


def random_selector(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.05:
        return None  # a missing selector selects nothing
    if roll < 0.12:
        return {}  # an empty one selects everything
    selector: dict[str, Any] = {}
    if rng.random() < 0.6:
        selector["matchLabels"] = {
            key: rng.choice(LABEL_VALUES) for key in rng.sample(LABEL_KEYS, rng.randint(1, 2))
        }
    if rng.random() < 0.6 or not selector:
        expressions = []
        for key in rng.sample(LABEL_KEYS, rng.randint(1, 2)):
            operator = rng.choice(("In", "In", "NotIn", "Exists", "DoesNotExist"))
            expression: dict[str, Any] = {"key": key, "operator": operator}
            if operator in ("In", "NotIn"):
                expression["values"] = rng.sample(LABEL_VALUES, rng.randint(1, 2))
            expressions.append(expression)
        selector["matchExpressions"] = expressions
    return selector


def random_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": rng.choice(TOPOLOGY_KEYS)}
    selector = random_selector(rng)
    if selector is not None:
        term["labelSelector"] = selector
    if rng.random() < 0.3:
        term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    return term


def random_affinity(rng: random.Random, richness: float) -> dict[str, Any] | None:
    if rng.random() > richness:
        return None
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section: dict[str, Any] = {}
        if rng.random() < 0.5:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                random_term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.5:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": random_term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
        if section:
            out[kind] = section
    return out or None


def random_spread(rng: random.Random) -> list[dict[str, Any]] | None:
    if rng.random() < 0.4:
        return None
    constraints = []
    for _ in range(rng.randint(1, 3)):
        constraint: dict[str, Any] = {
            "maxSkew": rng.randint(1, 2),
            "topologyKey": rng.choice(TOPOLOGY_KEYS[:-1]),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
        }
        selector = random_selector(rng)
        if selector is not None:
            constraint["labelSelector"] = selector
        constraints.append(constraint)
    return constraints


def random_node_labels(rng: random.Random) -> dict[str, str]:
    labels: dict[str, str] = {}
    if rng.random() < 0.7:
        labels[rng.choice((ZONE, BETA_ZONE))] = rng.choice(("z1", "z2", "z3"))
    if rng.random() < 0.5:
        labels[REGION] = rng.choice(("r1", "r2"))
    if rng.random() < 0.6:
        labels["rack"] = rng.choice(("k1", "k2", "k3", "k4"))
    if rng.random() < 0.4:
        labels["zone"] = rng.choice(("z1", "z2"))
    if rng.random() < 0.3:
        labels["disk"] = "ssd"
    return labels


def random_node(rng: random.Random, name: str) -> dict[str, Any]:
    return node(name, labels=random_node_labels(rng))


def random_pod(
    rng: random.Random, name: str, node_name: str | None, richness: float
) -> dict[str, Any]:
    obj = pod(
        name,
        namespace=rng.choice(NAMESPACES),
        labels=random_labels(rng),
        node_name=node_name,
        affinity=random_affinity(rng, richness),
    )
    if node_name is not None and rng.random() < 0.1:
        obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return obj


def random_workloads(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(rng.randint(0, 4)):
        kind = rng.choice(("Service", "ReplicaSet", "StatefulSet", "ReplicationController"))
        labels = {key: rng.choice(LABEL_VALUES) for key in rng.sample(LABEL_KEYS, 1)}
        spec: dict[str, Any]
        if kind in ("Service", "ReplicationController"):
            spec = {"selector": labels} if rng.random() < 0.9 else {}
        else:
            spec = {"selector": random_selector(rng) or {"matchLabels": labels}}
        out.append(
            {
                "kind": kind,
                "metadata": {"name": f"w{i}", "namespace": rng.choice(NAMESPACES)},
                "spec": spec,
            }
        )
    return out


def random_cluster(seed: int) -> tuple[ClusterState, random.Random]:
    """A cluster with a history of changes, so every incremental update path runs."""
    rng = random.Random(seed)
    richness = rng.choice((0.0, 0.3, 0.8))
    state = ClusterState()
    node_names = [f"n{i}" for i in range(rng.randint(1, 12))]
    for name in node_names:
        state.set_node(parse_node(random_node(rng, name)))
    # "ghost" is not a known node: its pods wait for it, and must not count.
    targets = [*node_names, "ghost"]
    raw_pods: list[dict[str, Any]] = []
    for i in range(rng.randint(0, 40)):
        raw = random_pod(rng, f"e{i}", rng.choice(targets), richness)
        raw_pods.append(raw)
        state.add_pod(parse_pod(raw))
    for _ in range(rng.randint(0, 15)):
        if not raw_pods:
            break
        roll = rng.random()
        raw = rng.choice(raw_pods)
        if roll < 0.3:
            state.remove_pod(raw["metadata"]["uid"])
            raw_pods.remove(raw)
        elif roll < 0.5:  # same pod, moved to another node
            raw["spec"]["nodeName"] = rng.choice(targets)
            state.add_pod(parse_pod(raw))
        elif roll < 0.7:  # same pod, new labels and terms
            raw["metadata"]["labels"] = random_labels(rng)
            affinity = random_affinity(rng, richness)
            raw["spec"].pop("affinity", None)
            if affinity is not None:
                raw["spec"]["affinity"] = affinity
            state.add_pod(parse_pod(raw))
        else:  # a duplicate event
            state.add_pod(parse_pod(raw))
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(node_names)
        roll = rng.random()
        if roll < 0.4:
            state.set_node(parse_node(random_node(rng, name)))  # relabelled
        elif roll < 0.7:
            state.remove_node(name)
        else:
            state.set_node(parse_node(random_node(rng, name)))
            state.set_node(parse_node(random_node(rng, name)))
    for workload in random_workloads(rng):
        add_object(state, workload)
    return state, rng


def rebuilt(state: ClusterState) -> ClusterState:
    """The same nodes, pods and workloads, added once each to an empty cluster."""
    fresh = ClusterState()
    for info in state.nodes.values():
        fresh.set_node(info.node)
    for placed in state.pods.values():
        fresh.add_pod(placed)
    for workload in state.workloads.values():
        fresh.set_workload(workload)
    return fresh


def incoming_pod(rng: random.Random) -> Pod:
    obj = random_pod(rng, "incoming", None, 0.7)
    spread = random_spread(rng)
    if spread is not None:
        obj["spec"]["topologySpreadConstraints"] = spread
    roll = rng.random()
    if roll < 0.15:
        obj["spec"]["nodeSelector"] = {"rack": rng.choice(("k1", "k2"))}
    elif roll < 0.25:
        obj["spec"]["affinity"] = {
            **obj["spec"].get("affinity", {}),
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
                    ]
                }
            },
        }
    return parse_pod(obj)


def cases() -> list[Any]:
    return [pytest.param(seed, id=f"seed{seed}") for seed in range(CASES)]


# -- the indexes themselves -----------------------------------------------------------------


def index_view(state: ClusterState) -> dict[str, Any]:
    return {
        "affinity_pods": set(state.affinity_pods),
        "required_anti": state.required_anti_affinity_terms,
        "required": state.required_affinity_terms,
        "preferred": state.preferred_affinity_terms,
        "preferred_anti": state.preferred_anti_affinity_terms,
        "node_label_values": state.node_label_values,
        "zones": {name: info.zone_key for name, info in state.nodes.items()},
    }


@pytest.mark.parametrize("seed", cases())
def test_incremental_indexes_equal_a_rebuild(seed: int) -> None:
    state, rng = random_cluster(seed)
    assert index_view(state) == index_view(rebuilt(state))
    for name, info in state.nodes.items():
        assert info.zone_key == zone_key(info.node), name
    # candidates() never misses a matching pod, and "exact" means exact.
    for _ in range(5):
        raw = random_selector(rng)
        selectors = (label_selector(raw, "selector"),)
        namespaces = None if rng.random() < 0.3 else rng.sample(NAMESPACES, rng.randint(1, 2))
        wanted = {
            uid
            for uid, placed in state.pods.items()
            if (namespaces is None or placed.namespace in namespaces)
            and selectors[0].matches(placed.labels)
        }
        found = state.candidates(namespaces, selectors)
        uids = [candidate.uid for candidate in found]
        assert len(uids) == len(set(uids)) == found.size
        assert wanted <= set(uids)
        if found.exact:
            assert set(uids) == wanted


def test_a_unique_label_value_is_one_pod_not_a_dict() -> None:
    """A label value held by one pod costs a dict entry; a second pod makes it a bucket."""
    state = cluster(
        [node("n1")],
        [pod("a", node_name="n1", labels={"app": "web", "id": "1"})],
    )
    first = next(iter(state.pods.values()))
    assert state._by_label["default"]["id"]["1"] is first
    state.add_pod(parse_pod(pod("b", node_name="n1", labels={"app": "web", "id": "2"})))
    assert isinstance(state._by_label["default"]["app"]["web"], dict)
    assert list(state.candidates(["default"], (label_selector({"matchLabels": {"id": "2"}}, ""),)))
    state.remove_pod(first.uid)
    assert not isinstance(state._by_label["default"]["app"]["web"], dict)
    assert "1" not in state._by_label["default"]["id"]


def test_pods_on_an_unknown_node_are_indexed_but_not_counted() -> None:
    """A pod waiting for its node is kept in the indexes; readers skip it until the node comes."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOSTNAME}
            ]
        }
    }
    state = cluster([node("n1")], [pod("db", node_name="n2", labels={"app": "db"}, affinity=anti)])
    incoming = parse_pod(pod("p", labels={"app": "db"}))
    meta = interpod_predicate.indexed_inter_pod_metadata(incoming, state)
    assert meta.forbidden == {}
    state.set_node(parse_node(node("n2")))
    meta = interpod_predicate.indexed_inter_pod_metadata(incoming, state)
    assert meta.forbidden == {HOSTNAME: frozenset({"n2"})}
    assert meta == interpod_predicate.inter_pod_metadata(incoming, state)
    state.remove_node("n2")
    assert interpod_predicate.indexed_inter_pod_metadata(incoming, state).forbidden == {}


def test_a_pod_without_terms_in_a_cluster_without_terms_costs_nothing() -> None:
    state = cluster([node("n1")], [pod("web", node_name="n1", labels={"app": "web"})])
    incoming = parse_pod(pod("p"))
    assert interpod_predicate.indexed_inter_pod_metadata(incoming, state) is (
        interpod_predicate.NO_METADATA
    )
    assert interpod_priority.indexed_topology_scores(incoming, state, 1) == {}


def test_no_selecting_workload_scores_exactly_ten_as_upstream() -> None:
    """Counts all 0: 10 by node, and 10 * 1/3 + 2/3 * 10 truncated is 10 for zoned nodes."""
    assert spreading_priority.NO_SELECTOR_SCORE == names.MAX_PRIORITY
    state = cluster([node("zoned", labels={ZONE: "z1"}), node("plain")])
    incoming = parse_pod(pod("p", labels={"app": "web"}))
    nodes = list(state.nodes.values())
    spread = REGISTRY.priorities[names.SELECTOR_SPREAD]
    for fast in (True, False):
        assert spread(incoming, nodes, cycle(incoming, state, fast=fast)) == [10, 10]


# -- fast and plain agree -------------------------------------------------------------------


@pytest.mark.parametrize("seed", cases())
def test_interpod_fast_and_plain_agree(seed: int) -> None:
    state, rng = random_cluster(seed)
    for _ in range(3):
        incoming = incoming_pod(rng)
        plain = interpod_predicate.inter_pod_metadata(incoming, state)
        fast = interpod_predicate.indexed_inter_pod_metadata(incoming, state)
        assert fast == plain
        for hard_weight in (0, 1, 7):
            assert interpod_priority.indexed_topology_scores(
                incoming, state, hard_weight
            ) == interpod_priority.topology_scores(incoming, state, hard_weight)
        nodes = list(state.nodes.values())
        fast_cycle = cycle(incoming, state, fast=True)
        plain_cycle = cycle(incoming, state, fast=False)
        predicate = interpod_predicate.match_inter_pod_affinity
        assert [predicate(incoming, info, fast_cycle) for info in nodes] == [
            predicate(incoming, info, plain_cycle) for info in nodes
        ]
        priority = REGISTRY.priorities[names.INTER_POD_AFFINITY]
        assert priority(incoming, nodes, fast_cycle) == priority(incoming, nodes, plain_cycle)


SPREAD_PRIORITIES = (
    names.SELECTOR_SPREAD,
    names.SERVICE_SPREADING,
    names.EVEN_PODS_SPREAD_PRIORITY,
)


@pytest.mark.parametrize("seed", cases())
def test_spreading_fast_and_plain_agree(seed: int) -> None:
    state, rng = random_cluster(seed)
    anti_affinity = REGISTRY.priority_factories["serviceAntiAffinity"](
        SimpleNamespace(label=rng.choice(("rack", ZONE, "zone")))
    )
    for _ in range(3):
        incoming = incoming_pod(rng)
        assert spreading_predicate._indexed_hard_spread(
            incoming, state
        ) == spreading_predicate._hard_spread(incoming, state)
        everything = list(state.nodes.values())
        # The scored nodes are a sample of the cluster, as after filtering.
        scored = rng.sample(everything, rng.randint(0, len(everything)))
        fast_cycle = cycle(incoming, state, fast=True)
        plain_cycle = cycle(incoming, state, fast=False)
        predicate = spreading_predicate.even_pods_spread
        assert [predicate(incoming, info, fast_cycle) for info in everything] == [
            predicate(incoming, info, plain_cycle) for info in everything
        ]
        for name in SPREAD_PRIORITIES:
            priority = REGISTRY.priorities[name]
            assert priority(incoming, scored, fast_cycle) == priority(
                incoming, scored, plain_cycle
            ), name
        assert anti_affinity(incoming, scored, fast_cycle) == anti_affinity(
            incoming, scored, plain_cycle
        )


def test_selector_spread_counts_node_by_node_when_candidates_are_many() -> None:
    """When a selector's pods outnumber the scored nodes' pods, counting per node is cheaper."""
    nodes = [node(f"n{i}", labels={ZONE: f"z{i % 2}"}) for i in range(6)]
    pods = [pod(f"w{i}", node_name=f"n{i % 6}", labels={"app": "web"}) for i in range(30)]
    service = {"kind": "Service", "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}}
    state = cluster(nodes, pods, [service])
    incoming = parse_pod(pod("p", labels={"app": "web"}))
    scored = [state.nodes["n0"]]
    spread = REGISTRY.priorities[names.SELECTOR_SPREAD]
    assert spread(incoming, scored, cycle(incoming, state, fast=True)) == spread(
        incoming, scored, cycle(incoming, state, fast=False)
    )


# -- whole decisions ------------------------------------------------------------------------

DECISION_POLICY = policy(
    [names.MATCH_INTER_POD_AFFINITY, names.EVEN_PODS_SPREAD, names.POD_FITS_RESOURCES],
    [
        names.INTER_POD_AFFINITY,
        names.SELECTOR_SPREAD,
        names.SERVICE_SPREADING,
        names.EVEN_PODS_SPREAD_PRIORITY,
        {"name": "RackSpread", "weight": 2, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
    ],
    hardPodAffinitySymmetricWeight=3,
)


def decision_view(decision: Decision) -> tuple[Any, ...]:
    return (
        decision.node,
        decision.feasible,
        decision.failed,
        {name: (s.total, s.priorities) for name, s in decision.scores.items()},
        decision.message,
    )


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed{seed}") for seed in range(60)])
def test_decisions_fast_and_plain_agree(seed: int) -> None:
    """Pods decided and assumed one after another: the same choices, scores and reasons."""
    compiled = compile_policy(parse_policy(DECISION_POLICY))
    plain = dataclasses.replace(
        compiled, settings=dataclasses.replace(compiled.settings, fast=False)
    )
    assert compiled.settings.fast
    state, rng = random_cluster(seed)
    fast_scheduler, plain_scheduler = Scheduler(), Scheduler()
    for i in range(4):
        incoming = dataclasses.replace(incoming_pod(rng), uid=f"incoming-{i}")
        fast_decision = asyncio.run(fast_scheduler.schedule(incoming, state, compiled))
        plain_decision = asyncio.run(plain_scheduler.schedule(incoming, state, plain))
        assert decision_view(fast_decision) == decision_view(plain_decision)
        assert (fast_scheduler.next_start, fast_scheduler.last_node_index) == (
            plain_scheduler.next_start,
            plain_scheduler.last_node_index,
        )
        if fast_decision.node is not None:
            state.add_pod(dataclasses.replace(incoming, node_name=fast_decision.node))


# -- what-if copies (fit hints) ----------------------------------------------------------


def full_view(state: ClusterState) -> dict[str, Any]:
    return {
        **index_view(state),
        "images": state.image_nodes,
        "nodes": {name: info.node for name, info in state.nodes.items()},
        "ordered": [info.name for info in state.ordered_nodes()],
        "pods_per_node": {name: set(info.pods) for name, info in state.nodes.items()},
    }


@pytest.mark.parametrize("seed", cases()[:100])
def test_with_node_is_the_cluster_with_that_node_replaced_and_the_original_is_untouched(
    seed: int,
) -> None:
    state, rng = random_cluster(seed)
    if not state.nodes:
        return
    name = rng.choice(sorted(state.nodes))
    raw = random_node(rng, name)
    if rng.random() < 0.5:
        raw["status"]["images"] = [{"names": [f"img-{rng.randint(1, 3)}"], "sizeBytes": 10}]
    if rng.random() < 0.3:
        raw["spec"]["unschedulable"] = True
    before = copy.deepcopy(full_view(state))
    generations = {n: info.generation for n, info in state.nodes.items()}
    view = state.with_node(parse_node(raw))
    assert full_view(state) == before
    assert {n: info.generation for n, info in state.nodes.items()} == generations
    # NodeTree order follows the arrival history, which a rebuild does not replay.
    assert {**full_view(view), "ordered": None} == {**full_view(rebuilt(view)), "ordered": None}
    assert view.nodes[name].node == parse_node(raw)
    assert view.nodes[name] in view.ordered_nodes()


def test_with_persistent_volumes_replaces_them_in_the_copy_only() -> None:
    state = cluster(objects=[pv("a", labels={ZONE: "z1"}), pv("b")])
    moved = parse_persistent_volume(pv("a", labels={ZONE: "z2"}))
    view = state.with_persistent_volumes([moved])
    assert view.persistent_volumes["a"].labels == {ZONE: "z2"}
    assert state.persistent_volumes["a"].labels == {ZONE: "z1"}
    assert set(view.persistent_volumes) == {"a", "b"}
