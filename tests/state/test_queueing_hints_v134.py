"""QueueingHints, the rest of kube-scheduler v1.34's: PreFilter's rejecting plugins,
InterPodAffinity's, PodTopologySpread's, the storage plugins' and DynamicResources'
hint functions, and the storage and DRA events the world raises.

Each test decides a pod for real (the engine, a policy of the named framework plugins),
files it unschedulable with the plugins that rejected it (:func:`rejecting_plugins`, as
the runtime does), then shows the world a change that cannot help (the pod sleeps on)
and one that can (it wakes).
"""

from __future__ import annotations

import copy
from typing import Any

from builders import (
    GPU_DRIVER,
    claim_volume,
    device_class,
    gpu_slice,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)
from policy_scheduler.engine.rejections import refused_by
from policy_scheduler.state.world import DELETED, World
from state.test_queueing_plugin_hints import asleep as asleep_under

NAME = "hinted"
ZONE = "topology.kubernetes.io/zone"


def policy(*plugins: str) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "p", "uid": "uid-p", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {
            "schedulerName": NAME,
            "predicates": [{"name": name} for name in plugins],
            "priorities": [],
        },
    }


def asleep(
    plugins: tuple[str, ...], cluster: list[dict[str, Any]], waiting: dict[str, Any]
) -> tuple[World, str, frozenset[str] | None]:
    """A world where ``waiting`` was decided by a policy running ``plugins``, found no
    node, and sleeps unschedulable."""
    return asleep_under(policy(*plugins), cluster, waiting)


def where(world: World, uid: str) -> str | None:
    return world.queue.where(uid)


# -- PreFilter names its plugins -------------------------------------------------------


def test_reserve_and_permit_refusals_name_their_plugin() -> None:
    assert refused_by("Coscheduling") == {"Coscheduling"}
    assert refused_by("") is None


# -- InterPodAffinity ------------------------------------------------------------------

AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}
        ]
    }
}


def test_inter_pod_affinity_wakes_when_a_matching_pod_is_placed_not_another() -> None:
    zoned = node("n1", labels={ZONE: "a"})
    world, uid, rejected = asleep(
        ("InterPodAffinity",), [zoned], pod("web", affinity=AFFINITY, labels={"app": "web"})
    )
    assert rejected == {"InterPodAffinity"}
    world.observe("ADDED", pod("cache", labels={"app": "cache"}, node_name="n1"))
    assert where(world, uid) == "unschedulable"
    world.observe("ADDED", pod("db", labels={"app": "db"}, node_name="n1"))
    assert where(world, uid) == "active"


def test_inter_pod_affinity_wakes_on_a_relabelled_pod_that_now_matches() -> None:
    zoned = node("n1", labels={ZONE: "a"})
    cache = pod("cache", labels={"app": "cache"}, node_name="n1")
    world, uid, _ = asleep(("InterPodAffinity",), [zoned, cache], pod("web", affinity=AFFINITY))
    relabelled = copy.deepcopy(cache)
    relabelled["metadata"]["labels"] = {"app": "cache", "x": "y"}
    world.observe("MODIFIED", relabelled)
    assert where(world, uid) == "unschedulable"
    relabelled = copy.deepcopy(cache)
    relabelled["metadata"]["labels"] = {"app": "db"}
    world.observe("MODIFIED", relabelled)
    assert where(world, uid) == "active"


def test_inter_pod_affinity_wakes_when_a_node_gains_the_topology_key() -> None:
    """The pod it wants runs on a node without the term's topology key: only a node
    that gains it can help (an unrelated label cannot)."""
    bare = node("n1")
    db = pod("db", labels={"app": "db"}, node_name="n1")
    world, uid, _ = asleep(("InterPodAffinity",), [bare, db], pod("web", affinity=AFFINITY))
    world.observe("MODIFIED", node("n1", labels={"disk": "ssd"}))
    assert where(world, uid) == "unschedulable"
    world.observe("MODIFIED", node("n1", labels={"disk": "ssd", ZONE: "a"}))
    assert where(world, uid) == "active"


# -- PodTopologySpread -----------------------------------------------------------------

SPREAD = [
    {
        "maxSkew": 1,
        "minDomains": 3,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


W1 = pod("w1", labels={"app": "web"}, node_name="a")


def spread_world() -> tuple[World, str]:
    """Two zones of the three the pod's minDomains asks for, a web pod in each: the
    global minimum is 0, either zone would reach a skew of 2."""
    a, b = node("a", labels={ZONE: "a"}), node("b", labels={ZONE: "b"})
    placed = [W1, pod("w0", labels={"app": "web"}, node_name="b")]
    world, uid, rejected = asleep(
        ("PodTopologySpread",), [a, b, *placed], pod("w2", labels={"app": "web"}, spread=SPREAD)
    )
    assert rejected == {"PodTopologySpread"}
    return world, uid


def test_spread_sleeps_through_a_pod_its_selector_ignores_and_wakes_on_one_it_counts() -> None:
    world, uid = spread_world()
    world.observe("ADDED", pod("other", labels={"app": "db"}, node_name="a"))
    assert where(world, uid) == "unschedulable"
    world.observe(DELETED, copy.deepcopy(W1))
    assert where(world, uid) == "active"


def test_spread_wakes_on_a_node_with_its_topology_key_not_without() -> None:
    world, uid = spread_world()
    world.observe("ADDED", node("c", labels={"rack": "1"}))
    assert where(world, uid) == "unschedulable"
    world.observe("ADDED", node("d", labels={ZONE: "d"}))
    assert where(world, uid) == "active"


def test_spread_wakes_on_a_node_deletion_only_of_a_node_in_its_topology() -> None:
    world, uid = spread_world()
    world.observe("ADDED", node("c", labels={"rack": "1"}))
    world.observe(DELETED, node("c", labels={"rack": "1"}))
    assert where(world, uid) == "unschedulable"
    world.observe(DELETED, node("b", labels={ZONE: "b"}))
    assert where(world, uid) == "active"


# -- storage ---------------------------------------------------------------------------


def zone_world() -> tuple[World, str]:
    zoned = node("n1", labels={ZONE: "a"})
    volume = pv("vol", labels={ZONE: "b"}, storage_class="sc", claim=("default", "data"))
    claim = pvc("data", volume_name="vol", storage_class="sc")
    web = pod("web", volumes=[claim_volume("data")])
    world, uid, rejected = asleep(("VolumeZone",), [zoned, volume, claim], web)
    assert rejected == {"VolumeZone"}
    return world, uid


def test_volume_zone_sleeps_through_a_volume_label_and_wakes_when_its_zone_moves() -> None:
    world, uid = zone_world()
    world.observe(
        "MODIFIED",
        pv("vol", labels={ZONE: "b", "x": "y"}, storage_class="sc", claim=("default", "data")),
    )
    assert where(world, uid) == "unschedulable"
    world.observe("ADDED", storage_class("fast", mode="Immediate"))
    assert where(world, uid) == "unschedulable"
    world.observe(
        "MODIFIED", pv("vol", labels={ZONE: "a"}, storage_class="sc", claim=("default", "data"))
    )
    assert where(world, uid) == "active"


def test_volume_zone_wakes_on_a_wait_for_first_consumer_class() -> None:
    world, uid = zone_world()
    world.observe("ADDED", storage_class("late", mode="WaitForFirstConsumer"))
    assert where(world, uid) == "active"


DISK = {"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}


def test_volume_restrictions_wakes_when_the_pod_holding_its_disk_goes() -> None:
    holder = pod("holder", volumes=[DISK], node_name="n1")
    other = pod("other", volumes=[{"name": "d", "gcePersistentDisk": {"pdName": "disk-2"}}])
    other["spec"]["nodeName"] = "n1"
    world, uid, rejected = asleep(
        ("VolumeRestrictions",), [node("n1"), holder, other], pod("web", volumes=[DISK])
    )
    assert rejected == {"VolumeRestrictions"}
    world.observe(DELETED, copy.deepcopy(other))
    assert where(world, uid) == "unschedulable"
    world.observe(DELETED, copy.deepcopy(holder))
    assert where(world, uid) == "active"


def test_a_pod_rejected_by_another_plugin_sleeps_through_storage_events() -> None:
    """Before hints, every PV/PVC/StorageClass change woke every pod."""
    zoned = pod("zoned", node_selector={"zone": "a"})
    world, uid, rejected = asleep(("NodeAffinity", "VolumeBinding"), [node("n1")], zoned)
    assert rejected == {"NodeAffinity"}
    world.observe("ADDED", pv("vol", storage_class="sc"))
    world.observe("ADDED", pvc("data", storage_class="sc"))
    world.observe("ADDED", storage_class("sc"))
    assert where(world, uid) == "unschedulable"


# -- DynamicResources ------------------------------------------------------------------

DRIVER = GPU_DRIVER


def claim(name: str, count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": count}}
                ]
            }
        },
    }


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    raw = pod(name)
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return raw


def test_dynamic_resources_wakes_on_a_slice_not_on_another_pods_claim() -> None:
    cluster = [node("n1"), device_class(), gpu_slice("n1", 1), claim("big", 2)]
    world, uid, rejected = asleep(("DynamicResources",), cluster, with_claim("train", "big"))
    assert rejected == {"DynamicResources"}
    world.observe("ADDED", claim("someone-elses"))
    assert where(world, uid) == "unschedulable"
    world.observe("ADDED", gpu_slice("n2", 2))
    assert where(world, uid) == "active"


def test_dynamic_resources_wakes_when_its_claim_changes_or_any_claim_is_deallocated() -> None:
    allocated = claim("held")
    allocated["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "holder", "uid": "uid-holder"}],
    }
    cluster = [node("n1"), device_class(), gpu_slice("n1", 1), allocated, claim("mine")]
    world, uid, rejected = asleep(("DynamicResources",), cluster, with_claim("train", "mine"))
    assert rejected == {"DynamicResources"}
    relabelled = copy.deepcopy(allocated)
    relabelled["metadata"]["labels"] = {"x": "y"}
    world.observe("MODIFIED", relabelled)  # same status: cannot help
    assert where(world, uid) == "unschedulable"
    world.observe("MODIFIED", claim("held"))  # deallocated: its device is free
    assert where(world, uid) == "active"


def test_a_prefilter_rejection_names_its_plugin_and_wakes_only_on_its_events() -> None:
    """DynamicResources' PreFilter refuses a claim whose device class does not exist:
    v1.34 adds the plugin to UnschedulablePlugins, so a node's taint (not one of its
    events) or a PVC leaves the pod asleep; the class's creation wakes it."""
    plugins = ("DynamicResources", "NodeAffinity", "TaintToleration")
    cluster = [node("n1"), gpu_slice("n1", 1), claim("mine")]
    world, uid, rejected = asleep(plugins, cluster, with_claim("train", "mine"))
    assert rejected == {"DynamicResources"}
    world.observe("MODIFIED", node("n1", taints=[{"key": "a", "effect": "NoSchedule"}]))
    world.observe("ADDED", pvc("data", storage_class="sc"))
    assert where(world, uid) == "unschedulable"
    world.observe("ADDED", device_class())
    assert where(world, uid) == "active"


def test_a_pod_without_claims_sleeps_through_device_events() -> None:
    zoned = pod("zoned", node_selector={"zone": "a"})
    world, uid, rejected = asleep(("NodeAffinity", "DynamicResources"), [node("n1")], zoned)
    assert rejected == {"NodeAffinity"}
    world.observe("ADDED", device_class())
    world.observe("ADDED", gpu_slice("n1", 4))
    world.observe("ADDED", claim("c"))
    assert where(world, uid) == "unschedulable"


# -- the hint functions themselves (old, new -> Queue / QueueSkip) ---------------------


def parsed(raw: dict[str, Any]) -> Any:
    from policy_scheduler.kinds import kind_of

    kind = kind_of(raw)
    assert kind is not None
    return kind.parse(raw)


def test_storage_and_device_hints_table() -> None:
    from builders import csi_driver, csi_node, csi_storage_capacity
    from policy_scheduler.engine.events import QUEUE, QUEUE_SKIP
    from policy_scheduler.engine.intree import _queueing as q

    web = parsed(pod("web", volumes=[claim_volume("data")]))
    trainer = parsed(with_claim("train", "mine"))
    csi = {"name": "v", "csi": {"driver": "d", "volumeHandle": "h"}}
    rows = [
        # VolumeBinding: a class added, or its allowed topologies changed.
        (q.storage_class_hint, web, None, storage_class("sc"), QUEUE),
        (q.storage_class_hint, web, storage_class("sc"), storage_class("sc"), QUEUE_SKIP),
        (
            q.storage_class_hint,
            web,
            storage_class("sc"),
            storage_class("sc", topologies=[{ZONE: ["a"]}]),
            QUEUE,
        ),
        # VolumeBinding: a CSINode added; one whose drivers changed only cannot help.
        (q.csi_node_hint, web, None, csi_node("n1", {"d": 1}), QUEUE),
        (q.csi_node_hint, web, csi_node("n1", {"d": 1}), csi_node("n1", {"d": 2}), QUEUE_SKIP),
        # VolumeBinding: storageCapacity switched.
        (q.csi_driver_hint, web, csi_driver("d"), csi_driver("d", storage_capacity=False), QUEUE),
        (q.csi_driver_hint, web, csi_driver("d"), csi_driver("d"), QUEUE_SKIP),
        # VolumeBinding: capacity grew, not shrank.
        (
            q.capacity_hint,
            web,
            csi_storage_capacity("c", "sc", capacity="1Gi"),
            csi_storage_capacity("c", "sc", capacity="2Gi"),
            QUEUE,
        ),
        (
            q.capacity_hint,
            web,
            csi_storage_capacity("c", "sc", capacity="2Gi"),
            csi_storage_capacity("c", "sc", capacity="1Gi"),
            QUEUE_SKIP,
        ),
        # The pod's own PVC, not another's.
        (q.pvc_of_pod_hint, web, None, pvc("data"), QUEUE),
        (q.pvc_of_pod_hint, web, None, pvc("other"), QUEUE_SKIP),
        (q.pvc_of_pod_hint, web, None, pvc("data", namespace="elsewhere"), QUEUE_SKIP),
        # NodeVolumeLimits: a placed pod with a CSI volume deleted, not one without.
        (q.volume_limits_pod_hint, web, pod("p", volumes=[csi], node_name="n1"), None, QUEUE),
        (q.volume_limits_pod_hint, web, pod("p", node_name="n1"), None, QUEUE_SKIP),
        # DynamicResources: slices help pods with claims only.
        (q.slice_hint, trainer, None, gpu_slice("n1", 1), QUEUE),
        (q.slice_hint, web, None, gpu_slice("n1", 1), QUEUE_SKIP),
        # DynamicResources: its claim created; another's not.
        (q.claim_hint, trainer, None, claim("mine"), QUEUE),
        (q.claim_hint, trainer, None, claim("theirs"), QUEUE_SKIP),
    ]
    for hint, target, old, new, expected in rows:
        before = parsed(old) if isinstance(old, dict) else old
        after = parsed(new) if isinstance(new, dict) else new
        assert hint(target, before, after) == expected, (hint.__name__, old, new)
