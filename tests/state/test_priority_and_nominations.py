"""What the World does with priorities, nominations and budgets, as watches report them.

* a pod without ``spec.priority`` gets it from its PriorityClass (the ``globalDefault``
  one, the system classes), as the API server's admission would have written it; an
  unknown class is the pod's error, named;
* ``status.nominatedNodeName`` of pending pods (any scheduler's) fills the cluster's
  nominations; placement, deletion, finishing or a status without it ends one; a copy
  without it does not undo a nomination we made and have not seen come back yet;
* PodDisruptionBudgets are kept for preemption; the queue's ``retry`` puts a popped pod
  back at its place.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import node, pod, pod_disruption_budget, priority_class
from policy_scheduler.state.queueing import SchedulingQueue
from policy_scheduler.state.world import DELETED, World


def pending(name: str = "p", **spec: Any) -> dict[str, Any]:
    obj = pod(name)
    obj["spec"].update(spec)
    return obj


def queued_priority(world: World, name: str) -> int:
    return next(p.priority for p in world.queue.pods() if p.name == name)


@pytest.mark.parametrize(
    ("classes", "spec", "expected"),
    [
        pytest.param([], {}, 0, id="no-class-no-default-is-0"),
        pytest.param(
            [priority_class("high", 1000)], {"priorityClassName": "high"}, 1000, id="named"
        ),
        pytest.param(
            [priority_class("high", 1000)],
            {"priorityClassName": "high", "priority": 7},
            7,
            id="spec-priority-wins",
        ),
        pytest.param(
            [
                priority_class("a", 50, global_default=True),
                priority_class("b", 20, global_default=True),
            ],
            {},
            20,
            id="lowest-global-default",
        ),
        pytest.param(
            [priority_class("a", 50, global_default=True)],
            {"priorityClassName": "system-node-critical"},
            2000001000,
            id="system-class-always-exists",
        ),
    ],
)
def test_priority_comes_from_the_class(
    classes: list[dict[str, Any]], spec: dict[str, Any], expected: int
) -> None:
    world = World()
    for obj in classes:
        world.observe("ADDED", obj)
    world.observe("ADDED", pending("p", schedulerName="policy-scheduler", **spec))
    assert queued_priority(world, "p") == expected


def test_the_class_preemption_policy_applies_unless_the_pod_has_one() -> None:
    world = World()
    world.observe("ADDED", priority_class("polite", 1000, preemption_policy="Never"))
    world.observe(
        "ADDED", pending("a", schedulerName="policy-scheduler", priorityClassName="polite")
    )
    world.observe(
        "ADDED",
        pending(
            "b",
            schedulerName="policy-scheduler",
            priorityClassName="polite",
            preemptionPolicy="PreemptLowerPriority",
        ),
    )
    policies = {p.name: p.preemption_policy for p in world.queue.pods()}
    assert policies == {"a": "Never", "b": "PreemptLowerPriority"}


def test_an_unknown_class_is_the_pods_error() -> None:
    outcome = World().observe("ADDED", pending("p", priorityClassName="gold"))
    assert outcome.error == (
        "Pod \"default/p\": spec.priorityClassName: no PriorityClass 'gold' found"
    )


def test_a_deleted_class_no_longer_resolves() -> None:
    world = World()
    world.observe("ADDED", priority_class("gold", 10))
    world.observe(DELETED, priority_class("gold", 10))
    assert world.observe("ADDED", pending("p", priorityClassName="gold")).error is not None


# -- nominations ----------------------------------------------------------------------------


def nominated(raw: dict[str, Any], node_name: str | None) -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    obj["status"] = {"nominatedNodeName": node_name} if node_name else {}
    return obj


def nominations(world: World) -> dict[str, list[str]]:
    return {
        node_name: sorted(p.name for p in pods.values())
        for node_name, pods in world.cache.cluster.nominated.items()
    }


@pytest.fixture
def world() -> World:
    w = World()
    w.observe("ADDED", node("n1"))
    w.observe("ADDED", node("n2"))
    return w


def test_any_pending_pods_nomination_is_kept(world: World) -> None:
    ours = pending("ours", schedulerName="policy-scheduler")
    theirs = pending("theirs")  # default-scheduler's preemptor
    world.observe("ADDED", nominated(ours, "n1"))
    world.observe("ADDED", nominated(theirs, "n1"))
    assert nominations(world) == {"n1": ["ours", "theirs"]}
    # The nominated copies sit on their node, for the first pass to place them there.
    assert all(p.node_name == "n1" for p in world.cache.cluster.nominated["n1"].values())


@pytest.mark.parametrize(
    "then",
    [
        pytest.param(
            lambda raw: ("MODIFIED", {**raw, "spec": {**raw["spec"], "nodeName": "n2"}}), id="bound"
        ),
        pytest.param(lambda raw: (DELETED, raw), id="deleted"),
        pytest.param(lambda raw: ("MODIFIED", {**raw, "status": {"phase": "Failed"}}), id="failed"),
        pytest.param(
            lambda raw: (
                "MODIFIED",
                {
                    **raw,
                    "metadata": {**raw["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"},
                },
            ),
            id="being-deleted",
        ),
        pytest.param(lambda raw: ("MODIFIED", nominated(raw, None)), id="status-dropped-it"),
    ],
)
def test_a_nomination_ends(world: World, then: Any) -> None:
    raw = nominated(pending("p"), "n1")
    world.observe("ADDED", raw)
    assert nominations(world) == {"n1": ["p"]}
    event, obj = then(raw)
    world.observe(event, obj)
    assert nominations(world) == {}


def test_a_nomination_moves_with_the_status(world: World) -> None:
    raw = pending("p")
    world.observe("ADDED", nominated(raw, "n1"))
    world.observe("MODIFIED", nominated(raw, "n2"))
    assert nominations(world) == {"n2": ["p"]}


def test_our_own_nomination_survives_an_older_copy_without_it(world: World) -> None:
    raw = pending("p", schedulerName="policy-scheduler")
    world.observe("ADDED", raw)
    parsed = next(iter(world.queue.pods()))
    world.cache.nominate(parsed, "n1")  # the runtime preempted; the patch is on its way
    world.observe("MODIFIED", raw)  # a status update from before the patch
    assert nominations(world) == {"n1": ["p"]}


def test_assuming_a_nominated_pod_ends_its_nomination(world: World) -> None:
    world.observe("ADDED", nominated(pending("p", schedulerName="policy-scheduler"), "n1"))
    world.cache.assume(next(iter(world.queue.pods())), "n2")
    assert nominations(world) == {}


def test_nominations_wait_for_the_snapshot_like_every_write(world: World) -> None:
    with world.cache.snapshot() as cluster:
        world.observe("ADDED", nominated(pending("p"), "n1"))
        assert cluster.nominated == {}
        assert world.cache.nominated_node(next(iter(world.queue.pods())).uid) == "n1"
    assert nominations(world) == {"n1": ["p"]}


def test_budgets_are_kept_and_forgotten(world: World) -> None:
    pdb = pod_disruption_budget(
        "db", {"app": "db"}, 2, namespace="shop", api_version="policy/v1beta1"
    )
    world.observe("ADDED", pdb)
    assert world.cache.cluster.pdbs["shop/db"].disruptions_allowed == 2
    world.observe(DELETED, pdb)
    assert world.cache.cluster.pdbs == {}


# -- the queue ------------------------------------------------------------------------------


def test_retry_puts_a_popped_pod_back_at_its_place() -> None:
    queue = SchedulingQueue()
    world = World(queue=queue)
    for name, priority in (("first", 10), ("second", 5), ("third", 5)):
        world.observe("ADDED", pending(name, schedulerName="policy-scheduler", priority=priority))
    popped = queue.pop_nowait()
    assert popped is not None and popped.pod.name == "first"
    queue.retry(popped)
    order = []
    while (queued := queue.pop_nowait()) is not None:
        order.append(queued.pod.name)
        queue.done(queued.pod.uid)
    assert order == ["first", "second", "third"]
