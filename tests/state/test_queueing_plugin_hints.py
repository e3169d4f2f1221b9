"""QueueingHints (kube-scheduler v1.34): an unschedulable pod wakes only on a change a
plugin that rejected it says may help.

Each test decides a pod for real (the engine, a policy of framework plugins), files it
unschedulable with the plugins that rejected it (:func:`rejecting_plugins`, as the
runtime does), then shows the world one change and looks where the pod is.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from policy_scheduler_testplugins import scripted

from builders import node, pod
from fakes import FakeClock
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.engine.events import ActionType, ClusterEvent, ClusterEventWithHint
from policy_scheduler.engine.rejections import rejecting_plugins
from policy_scheduler.state.cache import SchedulerCache
from policy_scheduler.state.queueing import SchedulingQueue
from policy_scheduler.state.world import DELETED, World

NAME = "hinted"


def policy(*predicates: str, config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": NAME,
        "predicates": [{"name": name} for name in predicates],
        "priorities": [],
    }
    if config:
        spec["pluginConfig"] = config
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "p", "uid": "uid-p", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": spec,
    }


def asleep(
    policy_raw: dict[str, Any], cluster: list[dict[str, Any]], waiting: dict[str, Any]
) -> tuple[World, str, frozenset[str] | None]:
    """A world where ``waiting`` was decided, found no node, and sleeps unschedulable."""
    clock = FakeClock()
    world = World(cache=SchedulerCache(clock=clock), queue=SchedulingQueue(clock=clock))
    world.observe("ADDED", policy_raw)
    for raw in cluster:
        world.observe("ADDED", copy.deepcopy(raw))
    waiting = copy.deepcopy(waiting)
    waiting["spec"]["schedulerName"] = NAME
    world.observe("ADDED", waiting)
    queued = world.queue.pop_nowait()
    assert queued is not None
    compiled = world.book.policy_for(NAME)
    assert compiled is not None
    decision = asyncio.run(Scheduler().schedule(queued.pod, world.cache.cluster, compiled))
    assert decision.node is None
    rejected = rejecting_plugins(compiled, decision, world.cache.cluster.nodes)
    world.queue.unschedulable(queued, rejected)
    clock.now += 5  # the attempt is over; well before the 60 s flush
    uid = queued.pod.uid
    assert world.queue.where(uid) == "unschedulable"
    return world, uid, rejected


ZONED = pod("zoned", node_selector={"zone": "a"})
PLAIN = node("n1", labels={"zone": "b"})


def test_node_affinity_sleeps_through_a_label_change_that_cannot_help() -> None:
    world, uid, rejected = asleep(policy("NodeAffinity"), [PLAIN], ZONED)
    assert rejected == {"NodeAffinity"}
    world.observe("MODIFIED", node("n1", labels={"zone": "b", "disk": "ssd"}))
    assert world.queue.where(uid) == "unschedulable"
    world.observe("ADDED", node("n2", labels={"zone": "c"}))
    assert world.queue.where(uid) == "unschedulable"


def test_node_affinity_wakes_when_the_label_it_needs_appears() -> None:
    world, uid, _ = asleep(policy("NodeAffinity"), [PLAIN], ZONED)
    world.observe("MODIFIED", node("n1", labels={"zone": "a"}))
    assert world.queue.where(uid) == "active"


FULL = node("full", cpu="1")
HOG = pod("hog", requests={"cpu": "800m"}, node_name="full")
BIG = pod("big", requests={"cpu": "500m"})


def test_fit_wakes_on_an_assigned_pods_deletion() -> None:
    world, uid, rejected = asleep(policy("NodeResourcesFit"), [FULL, HOG], BIG)
    assert rejected == {"NodeResourcesFit"}
    world.observe(DELETED, copy.deepcopy(HOG))
    assert world.queue.where(uid) == "active"


def test_fit_wakes_on_allocatable_growth_not_on_a_taint() -> None:
    world, uid, _ = asleep(policy("NodeResourcesFit"), [FULL, HOG], BIG)
    tainted = node("full", cpu="1", taints=[{"key": "a", "effect": "NoSchedule"}])
    world.observe("MODIFIED", tainted)
    assert world.queue.where(uid) == "unschedulable"
    world.observe("MODIFIED", node("full", cpu="4", taints=[{"key": "a", "effect": "NoSchedule"}]))
    assert world.queue.where(uid) == "active"


def test_taint_toleration_wakes_when_the_taint_goes() -> None:
    tainted = node("n1", taints=[{"key": "gpu", "effect": "NoSchedule"}])
    world, uid, rejected = asleep(policy("TaintToleration"), [tainted], pod("web"))
    assert rejected == {"TaintToleration"}
    world.observe(
        "MODIFIED", node("n1", taints=[{"key": "gpu", "effect": "NoSchedule"}], labels={"x": "y"})
    )
    assert world.queue.where(uid) == "unschedulable"
    world.observe("MODIFIED", node("n1"))
    assert world.queue.where(uid) == "active"


def test_a_heartbeat_wakes_nobody_and_the_flush_still_does() -> None:
    raw = node("n1", labels={"zone": "b"}, conditions={"Ready": "True"})
    world, uid, _ = asleep(policy("NodeAffinity"), [raw], ZONED)
    beat = copy.deepcopy(raw)
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2024-05-01T12:00:10Z"
    world.observe("MODIFIED", beat)
    assert world.queue.where(uid) == "unschedulable"
    world.queue.clock.now += 60  # type: ignore[attr-defined]
    world.queue.flush()
    assert world.queue.where(uid) != "unschedulable"


def scripted_policy(plugin: str) -> dict[str, Any]:
    args = {"filterRejects": ["n1"]}
    if plugin == "ScriptHinted":
        args["wakeOnLabel"] = "ready-for-it"  # type: ignore[assignment]
    return policy(plugin, config=[{"name": plugin, "args": args}])


def test_a_custom_plugins_hint_decides() -> None:
    scripted.reset()
    world, uid, rejected = asleep(scripted_policy("ScriptHinted"), [PLAIN], pod("web"))
    assert rejected == {"ScriptHinted"}
    world.observe("MODIFIED", node("n1", labels={"zone": "c"}))
    assert world.queue.where(uid) == "unschedulable"
    assert scripted.HINT_CALLS == [("web", "n1")]
    world.observe("MODIFIED", node("n1", labels={"ready-for-it": "yes"}))
    assert world.queue.where(uid) == "active"


def test_a_custom_plugin_without_events_to_register_wakes_on_everything() -> None:
    world, uid, rejected = asleep(scripted_policy("ScriptA"), [PLAIN], pod("web"))
    assert rejected == {"ScriptA"}
    world.observe("MODIFIED", node("n1", labels={"zone": "c"}))
    assert world.queue.where(uid) == "active"


def test_a_pod_rejected_without_known_plugins_wakes_as_before() -> None:
    world, uid, _ = asleep(policy("PodFitsResources"), [FULL, HOG], BIG)
    world.observe("MODIFIED", node("full", cpu="1", labels={"any": "thing"}))
    assert world.queue.where(uid) == "active"


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def test_inter_pod_affinity_sleeps_through_allocatable_and_wakes_on_the_pods_deletion() -> None:
    host = node("n1", labels={"kubernetes.io/hostname": "n1"})
    db = pod("db", labels={"app": "db"}, node_name="n1")
    world, uid, rejected = asleep(policy("InterPodAffinity"), [host, db], pod("web", affinity=ANTI))
    assert rejected == {"InterPodAffinity"}
    world.observe("MODIFIED", node("n1", cpu="8", labels={"kubernetes.io/hostname": "n1"}))
    assert world.queue.where(uid) == "unschedulable"
    world.observe(DELETED, copy.deepcopy(db))
    assert world.queue.where(uid) == "active"


def test_node_unschedulable_wakes_when_the_node_is_uncordoned_not_on_a_label() -> None:
    cordoned = node("n1", unschedulable=True)
    world, uid, rejected = asleep(policy("NodeUnschedulable"), [cordoned], pod("web"))
    assert rejected == {"NodeUnschedulable"}
    world.observe("MODIFIED", node("n1", unschedulable=True, labels={"a": "b"}))
    assert world.queue.where(uid) == "unschedulable"
    world.observe("MODIFIED", node("n1", labels={"a": "b"}))
    assert world.queue.where(uid) == "active"


def test_node_ports_wakes_when_the_pod_holding_its_port_goes() -> None:
    holder = pod("holder", host_ports=[8080], node_name="n1")
    other = pod("other", host_ports=[9090], node_name="n1")
    world, uid, rejected = asleep(
        policy("NodePorts"), [node("n1"), holder, other], pod("web", host_ports=[8080])
    )
    assert rejected == {"NodePorts"}
    world.observe(DELETED, copy.deepcopy(other))
    assert world.queue.where(uid) == "unschedulable"
    world.observe(DELETED, copy.deepcopy(holder))
    assert world.queue.where(uid) == "active"


def test_a_hint_that_raises_counts_as_queue() -> None:
    world, uid, _ = asleep(policy("NodeAffinity"), [PLAIN], ZONED)

    def broken(pod: object, old: object, new: object) -> str:
        raise RuntimeError("boom")

    event = ClusterEventWithHint(ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL), broken)
    world.queue.registrations = lambda pod: {"NodeAffinity": [event]}
    world.observe("MODIFIED", node("n1", labels={"zone": "c"}))
    assert world.queue.where(uid) == "active"
