"""The volume binder's assume cache inside SchedulerCache: what one decision's volumes
assume, how the API's word overtakes an assumption, and what a forget gives back.

Checked the way the scheduler notices it: whether the next decision can still take a
PV (``decide``), and which claimRef / selected-node the cluster state shows.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import claim_volume, node, pod, pv, pvc, storage_class
from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.predicates.volumes import PodVolumes
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import default_policy
from policy_scheduler.state.cache import SchedulerCache
from policy_scheduler.state.world import World

SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PV = "node(s) didn't find available persistent volumes to bind"
POLICY = compile_policy(default_policy())


def local_pv(name: str, node_name: str = "n1", rv: str = "10") -> dict[str, Any]:
    return pv(
        name,
        storage_class="local",
        capacity="10Gi",
        affinity={"kubernetes.io/hostname": [node_name]},
        resource_version=rv,
    )


def claim(name: str, class_name: str = "local", rv: str = "20") -> dict[str, Any]:
    return pvc(name, storage_class=class_name, request="1Gi", resource_version=rv)


@pytest.fixture
def world() -> World:
    world = World()
    for name in ("n1", "n2"):
        world.observe("ADDED", node(name, labels={"kubernetes.io/hostname": name}))
    world.observe("ADDED", storage_class("local", mode="WaitForFirstConsumer"))
    world.observe("ADDED", storage_class("fast", "csi.example.com", mode="WaitForFirstConsumer"))
    return world


def decide(world: World, claim_name: str, pod_name: str | None = None) -> Decision:
    the_pod = parse_pod(pod(pod_name or f"pod-{claim_name}", volumes=[claim_volume(claim_name)]))
    with world.cache.snapshot() as cluster:
        return asyncio.run(Scheduler().schedule(the_pod, cluster, POLICY))


def assume(world: World, decision: Decision) -> PodVolumes:
    assert decision.node is not None and decision.volumes is not None
    world.cache.assume(decision.pod, decision.node)
    world.cache.assume_volumes(decision.pod.uid, decision.volumes)
    return decision.volumes


def claim_ref(cache: SchedulerCache, pv_name: str) -> str:
    return cache.cluster.persistent_volumes[pv_name].claim


def only_pv_assumed(world: World, *others: str) -> Decision:
    """PV "only" (version 10) matched to claim "a" and assumed; ``others`` claims too."""
    world.observe("ADDED", local_pv("only"))
    for name in ("a", *others):
        world.observe("ADDED", claim(name))
    first = decide(world, "a")
    assume(world, first)
    return first


def test_an_assumed_pv_is_not_offered_to_the_next_claim(world: World) -> None:
    first = only_pv_assumed(world, "b")
    assert first.volumes is not None
    assert (first.node, [pv.name for _, pv in first.volumes.matched]) == ("n1", ["only"])
    assert claim_ref(world.cache, "only") == "default/a"
    second = decide(world, "b")
    assert second.node is None
    assert second.failed == {"n1": [NO_PV], "n2": [NO_PV]}


def test_forget_gives_the_pv_back(world: World) -> None:
    first = only_pv_assumed(world, "b")
    world.cache.forget_volumes(first.pod.uid)
    assert claim_ref(world.cache, "only") == ""
    second = decide(world, "b")
    assert second.node == "n1"
    assert second.volumes is not None
    assert [pv.name for _, pv in second.volumes.matched] == ["only"]


def test_a_claim_to_provision_is_assumed_with_its_node(world: World) -> None:
    world.observe("ADDED", claim("shared", "fast"))
    first = decide(world, "shared", "one")
    volumes = assume(world, first)
    assert [c.name for c in volumes.provisioned] == ["shared"]
    assumed = world.cache.cluster.claims["default/shared"]
    assert assumed.annotations[SELECTED_NODE] == first.node
    # A second pod of the same claim can only follow it to that node.
    second = decide(world, "shared", "two")
    other = "n2" if first.node == "n1" else "n1"
    assert second.node == first.node
    assert second.failed == {other: [NO_PV]}
    world.cache.forget_volumes(first.pod.uid)
    assert SELECTED_NODE not in world.cache.cluster.claims["default/shared"].annotations


def test_a_replay_does_not_undo_an_assumption(world: World) -> None:
    only_pv_assumed(world)
    world.observe("ADDED", local_pv("only", rv="10"))  # a watch reconnect replays it
    assert claim_ref(world.cache, "only") == "default/a"


def test_a_newer_version_overtakes_the_assumption_and_forget_keeps_it(world: World) -> None:
    first = only_pv_assumed(world)
    # The API reports the PV bound to another claim (someone else won the race).
    taken = local_pv("only", rv="11")
    taken["spec"]["claimRef"] = {"namespace": "default", "name": "other", "uid": "uid-other"}
    world.observe("MODIFIED", taken)
    assert claim_ref(world.cache, "only") == "default/other"
    world.cache.forget_volumes(first.pod.uid)
    assert claim_ref(world.cache, "only") == "default/other"
    assert world.cache.assumed_volumes == 0


def test_an_older_version_never_replaces_a_newer_one(world: World) -> None:
    world.observe("ADDED", local_pv("only", rv="12"))
    stale = local_pv("only", rv="11")
    stale["spec"]["claimRef"] = {"namespace": "default", "name": "gone"}
    world.observe("MODIFIED", stale)
    assert claim_ref(world.cache, "only") == ""


def test_finish_keeps_the_assumption_until_the_api_reports(world: World) -> None:
    first = only_pv_assumed(world)
    world.cache.finish_volumes(first.pod.uid)
    world.cache.forget_volumes(first.pod.uid)  # nothing left to forget for this pod
    assert claim_ref(world.cache, "only") == "default/a"


def test_a_forget_during_a_decision_waits_for_its_snapshot(world: World) -> None:
    first = only_pv_assumed(world)
    with world.cache.snapshot() as cluster:
        world.cache.forget_volumes(first.pod.uid)
        assert cluster.persistent_volumes["only"].claim == "default/a"
    assert claim_ref(world.cache, "only") == ""


def test_a_deleted_pv_is_not_brought_back_by_a_forget(world: World) -> None:
    first = only_pv_assumed(world)
    world.observe("DELETED", local_pv("only"))
    world.cache.forget_volumes(first.pod.uid)
    assert "only" not in world.cache.cluster.persistent_volumes


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(None, None, id="unchanged"),
        pytest.param(local_pv("only"), None, id="replayed-as-it-was"),
        pytest.param(local_pv("only", rv="11"), 'PersistentVolume "only" changed', id="pv"),
        pytest.param(claim("a", rv="21"), 'PersistentVolumeClaim "default/a" changed', id="pvc"),
    ],
)
def test_a_plan_is_stale_once_its_objects_changed(
    world: World, change: dict[str, Any] | None, expected: str | None
) -> None:
    world.observe("ADDED", local_pv("only"))
    world.observe("ADDED", claim("a"))
    decision = decide(world, "a")
    assert decision.volumes is not None
    if change is not None:
        world.observe("MODIFIED", change)
    assert world.cache.stale_volumes(decision.volumes) == expected
