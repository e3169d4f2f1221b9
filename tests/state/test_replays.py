"""Copies the world already holds (same ``resourceVersion``) are filed as they are: the
operator's LIST, Kopf's LIST and every resync send every object again, unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import node, pod
from policy_scheduler.state.world import World


def versioned(raw: dict[str, Any], version: str, **labels: str) -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    obj["metadata"]["resourceVersion"] = version
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


PENDING = pod("web", requests={"cpu": "500m"})
BOUND = pod("db", requests={"cpu": "500m"}, node_name="n1")
NODE = node("n1", cpu="4")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(PENDING, id="pending pod"),
        pytest.param(BOUND, id="bound pod"),
        pytest.param(NODE, id="node"),
    ],
)
def test_a_listed_copy_of_the_version_held_is_the_object_held(raw: dict[str, Any]) -> None:
    world = World()
    world.observe("ADDED", versioned(NODE, "1"))
    first = world.observe("ADDED", versioned(raw, "7"))
    again = world.observe(None, versioned(raw, "7"))
    assert again.obj is first.obj
    changed = world.observe("MODIFIED", versioned(raw, "8", tier="gold"))
    assert changed.obj is not first.obj
    assert changed.obj.labels["tier"] == "gold"


def test_copies_without_a_version_are_all_read() -> None:
    """Files and emulators may carry none: nothing then tells two copies apart."""
    world = World()
    world.observe("ADDED", NODE)
    world.observe("ADDED", PENDING)
    relabelled = copy.deepcopy(PENDING)
    relabelled["metadata"]["labels"] = {"tier": "gold"}
    world.observe("MODIFIED", relabelled)
    [queued] = world.queue.pods()
    assert queued.labels == {"tier": "gold"}


def test_a_replay_of_an_assumed_pods_pending_version_stays_stale() -> None:
    world = World(default_scheduler_name="default-scheduler")
    world.observe("ADDED", versioned(NODE, "1"))
    world.observe("ADDED", versioned(PENDING, "7"))
    queued = world.queue.pop_nowait()
    assert queued is not None
    world.cache.assume(queued.pod, "n1")
    world.queue.done(queued.pod.uid)
    world.observe(None, versioned(PENDING, "7"))
    assert world.queue.pods() == []
    assert world.cache.is_placed(queued.pod.uid)
