"""Queueing hints: which cluster change sends an unschedulable pod back to the active queue.

One row per line of the table in ``state/world.py``'s docstring: a pod found no node,
then one object reaches :meth:`World.observe`; the pod is active again only if that
change could let it fit (a heartbeat waking every waiting pod once made them retry every
10 s and tripled the event writes)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from builders import (
    csi_driver,
    csi_node,
    csi_storage_capacity,
    node,
    pod,
    pod_disruption_budget,
    priority_class,
    pv,
    pvc,
    storage_class,
)
from fakes import FakeClock
from policy_scheduler.state.cache import SchedulerCache
from policy_scheduler.state.queueing import SchedulingQueue
from policy_scheduler.state.world import DELETED, World

FULL = node("full", cpu="1", conditions={"Ready": "True"})
HOG = pod("hog", requests={"cpu": "800m"}, node_name="full")
WAITING = pod("web", requests={"cpu": "2"}, labels={"app": "web"})
CAPACITY = csi_storage_capacity("ebs-zone-a", "fast", capacity="1Gi", node_labels={"z": "a"})


def changed(raw: dict[str, Any], edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    obj = copy.deepcopy(raw)
    edit(obj)
    return obj


def heartbeat(raw: dict[str, Any]) -> dict[str, Any]:
    def beat(obj: dict[str, Any]) -> None:
        for condition in obj["status"]["conditions"]:
            condition["lastHeartbeatTime"] = "2024-05-01T12:00:10Z"

    return changed(raw, beat)


def shrink(raw: dict[str, Any]) -> None:
    raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m"


def workload(kind: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "default", "uid": f"uid-{kind}"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default", "uid": "uid-svc"},
    "spec": {"selector": {"app": "web"}},
}
NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "team-a", "uid": "uid-ns", "labels": {"team": "a"}},
}
POLICY = {
    "apiVersion": "policyscheduler.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "p", "uid": "uid-p", "creationTimestamp": "2024-01-01T00:00:00Z"},
    "spec": {"schedulerName": "other-scheduler"},
}

Event = tuple[str, dict[str, Any]]


@pytest.mark.parametrize(
    ("events", "wakes"),
    [
        pytest.param([("ADDED", node("new"))], True, id="node added"),
        pytest.param(
            [("MODIFIED", node("full", cpu="1", labels={"disk": "ssd"}))], True, id="node labels"
        ),
        pytest.param([("MODIFIED", node("full", cpu="4"))], True, id="node allocatable"),
        pytest.param(
            [("MODIFIED", node("full", cpu="1", taints=[{"key": "a", "effect": "NoSchedule"}]))],
            True,
            id="node taints",
        ),
        pytest.param(
            [("MODIFIED", node("full", cpu="1", unschedulable=True))],
            True,
            id="node cordoned",
        ),
        pytest.param(
            [("MODIFIED", node("full", cpu="1", conditions={"Ready": "False"}))],
            True,
            id="node condition status",
        ),
        pytest.param([("MODIFIED", heartbeat(FULL))], False, id="node heartbeat"),
        pytest.param(
            [("MODIFIED", node("full", cpu="1", images=[(["nginx"], 1000)]))],
            False,
            id="node images",
        ),
        pytest.param([(DELETED, FULL)], False, id="node deleted"),
        pytest.param([(DELETED, HOG)], True, id="placed pod deleted"),
        pytest.param(
            [("MODIFIED", changed(HOG, lambda p: p.update(status={"phase": "Succeeded"})))],
            True,
            id="placed pod finished",
        ),
        pytest.param(
            [("MODIFIED", changed(HOG, shrink))],
            True,
            id="placed pod shrunk",
        ),
        pytest.param(
            [("MODIFIED", changed(HOG, lambda p: p["metadata"].update(annotations={"a": "b"})))],
            False,
            id="placed pod annotated",
        ),
        pytest.param(
            [(DELETED, pod("other", requests={"cpu": "2"}))], False, id="pending pod deleted"
        ),
        pytest.param([("ADDED", pv("pv-1", capacity="1Gi"))], True, id="PV added"),
        pytest.param([("ADDED", pvc("data", volume_name="pv-1"))], True, id="PVC changed"),
        pytest.param([("ADDED", storage_class("fast"))], True, id="StorageClass added"),
        pytest.param([("ADDED", csi_node("full", {"ebs": 10}))], True, id="CSINode added"),
        pytest.param([("ADDED", csi_driver("ebs"))], True, id="CSIDriver added"),
        pytest.param(
            [("MODIFIED", csi_driver("ebs", storage_capacity=False))], True, id="CSIDriver changed"
        ),
        pytest.param([(DELETED, csi_driver("ebs"))], False, id="CSIDriver deleted"),
        pytest.param([("ADDED", CAPACITY)], True, id="CSIStorageCapacity added"),
        pytest.param(
            [("MODIFIED", changed(CAPACITY, lambda c: c.update(capacity="2Gi")))],
            True,
            id="CSIStorageCapacity changed",
        ),
        pytest.param([(DELETED, CAPACITY)], False, id="CSIStorageCapacity deleted"),
        pytest.param([("ADDED", SERVICE)], True, id="Service added"),
        pytest.param([(DELETED, SERVICE)], True, id="Service deleted"),
        pytest.param([("ADDED", workload("ReplicaSet"))], False, id="ReplicaSet"),
        pytest.param([("ADDED", workload("StatefulSet"))], False, id="StatefulSet"),
        pytest.param(
            [("ADDED", workload("ReplicationController", "v1"))], False, id="ReplicationController"
        ),
        pytest.param([("ADDED", pod_disruption_budget("web", {"app": "web"}, 1))], False, id="PDB"),
        pytest.param([("ADDED", priority_class("high", 1000))], False, id="PriorityClass"),
        pytest.param([("ADDED", NAMESPACE)], False, id="Namespace added"),
        pytest.param([("ADDED", NAMESPACE), (DELETED, NAMESPACE)], False, id="Namespace deleted"),
        pytest.param([("ADDED", POLICY)], True, id="policy accepted"),
        pytest.param([("ADDED", POLICY), (DELETED, POLICY)], True, id="policy deleted"),
    ],
)
def test_which_changes_wake_an_unschedulable_pod(events: list[Event], wakes: bool) -> None:
    clock = FakeClock()
    world = World(
        default_scheduler_name="default-scheduler",
        cache=SchedulerCache(clock=clock),
        queue=SchedulingQueue(clock=clock),
    )
    for raw in (FULL, HOG, copy.deepcopy(WAITING)):
        world.observe("ADDED", raw)
    world.observe("ADDED", pod("other", requests={"cpu": "2"}))
    attempts = [world.queue.pop_nowait(), world.queue.pop_nowait()]
    for queued in attempts:
        assert queued is not None
        world.queue.unschedulable(queued)  # no node fits either pod
    clock.now += 5  # the attempts are over: a change now is not one they saw
    uid = WAITING["metadata"]["uid"]
    assert world.queue.where(uid) == "unschedulable"
    for event_type, raw in events:
        world.observe(event_type, copy.deepcopy(raw))
    assert world.queue.where(uid) == ("active" if wakes else "unschedulable")
