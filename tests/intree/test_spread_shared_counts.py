"""PodTopologySpread's shared counts: the next pod asking the same decides as the definition.

The fast path keeps, per (namespace, DoNotSchedule constraints), the counts per domain
the last pod's PreFilter found (and per ScheduleAnyway constraints those PreScore
found), and the next pod asking the same catches up from the placed pods changed since
(``ClusterState.pod_journal``) instead of counting them all.
Here pods with the same constraints are decided one after another while the cluster
changes between them in every way a count can miss: matching and non-matching pods
placed and removed, a pod of another namespace, a pod marked terminating (its update
replaces the placed copy), a pod moved to another node, a node relabelled, a node
arriving under pods already bound to it, a node leaving, preemption's what-if trials
(pods taken off and put back), and a journal too short to remember. After each change
every node's reasons with the fast path must equal the definition's (every node
walked), and where a node passes must follow from the counts (maxSkew 1 on zones and
hostnames: one count off turns a node's answer); so must the scores, of a pod with
ScheduleAnyway constraints and of a ReplicaSet's pod under the system defaults; and the
legacy EvenPodsSpread predicate's and EvenPodsSpreadPriority's, which share their counts
the same way.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from builders import add_object
from policy_scheduler import names
from policy_scheduler.engine import catalogue  # noqa: F401  (registers the legacy names)
from policy_scheduler.engine.cluster import ClusterState, PodJournal
from policy_scheduler.engine.functions import REGISTRY, CycleState, PolicySettings
from policy_scheduler.engine.intree.podtopologyspread import PodTopologySpread
from policy_scheduler.objects import Pod, parse_node, parse_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def node(i: int, zone: str, *, hostname: bool = True) -> dict[str, Any]:
    """A node in ``zone`` ("": without the zone label)."""
    name = f"node-{i}"
    labels = {HOSTNAME: name} if hostname else {}
    if zone:
        labels[ZONE] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }


def pod(
    name: str,
    node_name: str | None,
    *,
    app: str = "web",
    namespace: str = "default",
    deleting: bool = False,
    when: str = "DoNotSchedule",
    owned: bool = False,
) -> Pod:
    selector = {"matchLabels": {"app": "web"}}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": {"app": app},
    }
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1"}]}
    if owned:
        # No constraint of its own: the system defaults, over the ReplicaSet's pods.
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}
        ]
    else:
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}
            for key in (ZONE, HOSTNAME)
        ]
    if node_name:
        spec["nodeName"] = node_name
    return parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def reasons(
    state: ClusterState, incoming: Pod, fast: bool, *, legacy: bool = False
) -> list[tuple[str, ...]]:
    """Every node's reasons from PodTopologySpread, or the legacy EvenPodsSpread."""
    predicate = (
        REGISTRY.predicates[names.EVEN_PODS_SPREAD]
        if legacy
        else PodTopologySpread(None, None).predicate()  # type: ignore[arg-type]
    )
    cycle = CycleState(incoming, state, PolicySettings(fast=fast))
    return [tuple(map(str, predicate(incoming, info, cycle))) for info in state.nodes.values()]


def scores(state: ClusterState, incoming: Pod, fast: bool) -> list[int]:
    priority = PodTopologySpread(None, None).priority()  # type: ignore[arg-type]
    cycle = CycleState(incoming, state, PolicySettings(fast=fast))
    return list(priority(incoming, list(state.nodes.values()), cycle))


def legacy_scores(state: ClusterState, incoming: Pod, fast: bool) -> list[int]:
    priority = REGISTRY.priorities[names.EVEN_PODS_SPREAD_PRIORITY]
    cycle = CycleState(incoming, state, PolicySettings(fast=fast))
    return list(priority(incoming, list(state.nodes.values()), cycle))


def check_scores(state: ClusterState, step: int) -> None:
    """The Score side's shared counts: own ScheduleAnyway constraints, and the system
    defaults of a ReplicaSet's pod, fast as the definition; the legacy
    EvenPodsSpreadPriority's too."""
    preferring = pod(f"preferring-{step}", None, when="ScheduleAnyway")
    for incoming in (preferring, pod(f"replica-{step}", None, owned=True)):
        assert scores(state, incoming, True) == scores(state, incoming, False), f"step {step}"
    assert legacy_scores(state, preferring, True) == legacy_scores(state, preferring, False)


def change(state: ClusterState, rng: random.Random, step: int) -> None:
    """One change of the cluster between two decisions."""
    names = list(state.nodes)
    placed = [p for p in state.pods.values() if p.namespace == "default"]
    kind = step % 10
    if kind in (0, 1):
        app = "web" if kind == 0 else "db"
        state.add_pod(pod(f"extra-{step}", rng.choice(names), app=app))
    elif kind == 2 and placed:
        state.remove_pod(rng.choice(placed).uid)
    elif kind == 3:
        state.add_pod(pod(f"elsewhere-{step}", rng.choice(names), namespace="other"))
    elif kind == 4 and placed:
        victim = rng.choice(placed)
        state.add_pod(replace(victim, deleting=True))
    elif kind == 5 and placed:
        moved = rng.choice(placed)
        state.add_pod(replace(moved, node_name=rng.choice(names)))
    elif kind == 6:
        relabelled = rng.choice(names)
        index = int(relabelled.split("-")[1])
        state.set_node(parse_node(node(index, rng.choice(("z1", "z2", "z3", "z4", "")))))
    elif kind == 7:
        newcomer = len(names) + step
        state.add_pod(pod(f"early-{step}", f"node-{newcomer}"))
        state.set_node(parse_node(node(newcomer, rng.choice(("z1", "z2")))))
    elif kind == 8:
        # The fullest node leaves (its pods stay placed, on a node no longer known).
        state.remove_node(max(names, key=lambda name: len(state.nodes[name].pods)))
    else:
        where = rng.choice(names)
        with state.trial(where) as trial:
            for uid in list(trial.node.pods)[:2]:
                trial.remove(uid)
            trial.add(pod(f"what-if-{step}", where))
            incoming = pod(f"asked-in-trial-{step}", None)
            assert reasons(state, incoming, True) == reasons(state, incoming, False)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("journal_limit", [4096, 3])
def test_a_pod_asking_the_same_counts_as_the_definition(seed: int, journal_limit: int) -> None:
    rng = random.Random(seed)
    state = ClusterState()
    state.pod_journal = PodJournal(limit=journal_limit)
    add_object(
        state,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "rs-web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    )
    for i in range(11):
        state.set_node(parse_node(node(i, ("z1", "z2", "z3")[i % 3])))
    # Own constraints require every key: node-11's pods count in no zone, node-12's in
    # no domain at all; the system defaults count them where the node has the key.
    state.set_node(parse_node(node(11, "")))
    state.set_node(parse_node(node(12, "z1", hostname=False)))
    for i in range(10):
        state.add_pod(pod(f"placed-{i}", f"node-{rng.randrange(13)}"))
    refusals = passes = 0
    for step in range(60):
        incoming = pod(f"pending-{step}", None)
        fast = reasons(state, incoming, True)
        assert fast == reasons(state, incoming, False), f"step {step}"
        legacy = reasons(state, incoming, True, legacy=True)
        assert legacy == reasons(state, incoming, False, legacy=True), f"step {step}"
        check_scores(state, step)
        refusals += sum(1 for r in fast if r)
        fits = [name for name, r in zip(state.nodes, fast, strict=True) if not r]
        passes += len(fits)
        if fits:
            state.add_pod(replace(incoming, node_name=rng.choice(fits)))
        change(state, rng, step)
    # The counts must decide something: nodes refused and nodes passing.
    assert refusals > 0 and passes > 0


def test_the_counts_are_shared_and_caught_up_not_recounted() -> None:
    """The second pod's PreFilter reads the first one's counts plus what changed since:
    a pod placed in between is counted, once."""
    state = ClusterState()
    for i in range(3):
        state.set_node(parse_node(node(i, f"z{i}")))
    state.add_pod(pod("a", "node-0"))
    first = reasons(state, pod("p1", None), True)
    assert first == [
        ("node(s) didn't match pod topology spread constraints",),
        (),
        (),
    ]
    assert len(state.shared_counts) == 1
    state.add_pod(pod("b", "node-1"))
    # node-0 and node-1 hold one each now: only node-2 (none) keeps the skew at 1.
    assert reasons(state, pod("p2", None), True) == [
        ("node(s) didn't match pod topology spread constraints",),
        ("node(s) didn't match pod topology spread constraints",),
        (),
    ]
    state.remove_pod(pod("a", "node-0").uid)
    assert reasons(state, pod("p3", None), True) == [
        (),
        ("node(s) didn't match pod topology spread constraints",),
        (),
    ]


def test_a_what_if_copy_of_the_cluster_shares_no_counts_with_it() -> None:
    """``with_node`` (a node relabelled, for the fit hints) counts on its own: what it
    learnt is never read by the cluster it was copied from."""
    state = ClusterState()
    for i in range(4):
        state.set_node(parse_node(node(i, ("z1", "z1", "z2", "z3")[i])))
    for i in range(4):
        state.add_pod(pod(f"placed-{i}", "node-0"))
    view = state.with_node(parse_node(node(0, "z3")))
    assert reasons(view, pod("p1", None), True) == reasons(view, pod("p1", None), False)
    # A status update on the original: its node changes as many times as the view's.
    state.set_node(parse_node(node(3, "z3")))
    incoming = pod("p2", None)
    assert reasons(state, incoming, True) == reasons(state, incoming, False)
