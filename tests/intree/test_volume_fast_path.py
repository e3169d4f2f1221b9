"""The v1.30 volume plugins' fast-path hints are exact, on random clusters.

Each plugin's predicate declares ``never_fails`` (PreFilter's Skip: a pod without the
volumes it looks at); the fast path drops such a predicate from the pod's plan. Random
clusters with claims (bound, unbound, missing, ReadWriteOncePod, ephemeral), inline
disks, PVs with zones and classes are decided by a policy of those predicates twice,
fast and plain, and the decisions must be equal; and a predicate that says it never
fails for a pod must indeed pass that pod on every node.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from typing import Any

import pytest

from builders import cluster, csi_node, cycle, node, pod, pv, pvc, storage_class
from policy_scheduler.engine.algorithm import Decision, Scheduler
from policy_scheduler.engine.compiler import CompiledPolicy, compile_policy, compiled_predicate
from policy_scheduler.engine.functions import Predicate, hints_of
from policy_scheduler.engine.intree.nodevolumelimits import (
    AzureDiskLimits,
    CinderLimits,
    EBSLimits,
    GCEPDLimits,
    NodeVolumeLimits,
)
from policy_scheduler.engine.intree.volumebinding import VolumeBinding
from policy_scheduler.engine.intree.volumerestrictions import VolumeRestrictions
from policy_scheduler.engine.intree.volumezone import VolumeZone
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import parse_policy

ZONE = "topology.kubernetes.io/zone"
PLUGINS = (
    VolumeRestrictions,
    VolumeZone,
    NodeVolumeLimits,
    EBSLimits,
    GCEPDLimits,
    AzureDiskLimits,
    CinderLimits,
    VolumeBinding,
)
CLAIMS = (
    "bound-z1",
    "bound-z2",
    "wait",
    "provision",
    "rwop",
    "ebs-claim",
    "immediate",
    "missing",
)
INLINE = (
    {"awsElasticBlockStore": {"volumeID": "vol-a"}},
    {"awsElasticBlockStore": {"volumeID": "vol-b"}},
    {"gcePersistentDisk": {"pdName": "pd-a"}},
    {"azureDisk": {"diskName": "disk-a", "diskURI": "uri-a"}},
    {"cinder": {"volumeID": "c-a"}},
    {"rbd": {"monitors": ["m1"], "image": "img"}},
    {"iscsi": {"targetPortal": "p:3260", "iqn": "iqn.x", "lun": 0}},
    {"configMap": {"name": "cm"}},
    {"emptyDir": {}},
)


def storage() -> list[dict[str, Any]]:
    bound = {"pv.kubernetes.io/bind-completed": "yes"}
    return [
        storage_class("local", mode="WaitForFirstConsumer"),
        storage_class("fast", "csi.example.com", mode="WaitForFirstConsumer"),
        storage_class("ebs", "kubernetes.io/aws-ebs", mode="WaitForFirstConsumer"),
        storage_class("immediate", "csi.example.com", mode="Immediate"),
        pv(
            "pv-z1",
            labels={ZONE: "z1"},
            capacity="1Gi",
            source={"csi": {"driver": "csi.example.com", "volumeHandle": "h1"}},
        ),
        pv(
            "pv-z2",
            labels={ZONE: "z2"},
            capacity="1Gi",
            source={"awsElasticBlockStore": {"volumeID": "vol-z2"}},
        ),
        pvc("bound-z1", volume_name="pv-z1", annotations=bound),
        pvc("bound-z2", volume_name="pv-z2", annotations=bound),
        pv("local-1", storage_class="local", capacity="5Gi", affinity={ZONE: ["z2"]}),
        pvc("wait", storage_class="local", request="1Gi"),
        pvc("provision", storage_class="fast", request="1Gi"),
        pvc("rwop", access_modes=["ReadWriteOncePod"], volume_name="pv-z1", annotations=bound),
        pvc("ebs-claim", storage_class="ebs"),
        pvc("immediate", storage_class="immediate"),
        csi_node("node-0", {"csi.example.com": 1, "ebs.csi.aws.com": 2}),
    ]


def random_volumes(rng: random.Random, name: str) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = []
    for i in range(rng.choice((0, 0, 1, 1, 2, 3))):
        kind = rng.random()
        if kind < 0.45:
            volumes.append(
                {"name": f"c{i}", "persistentVolumeClaim": {"claimName": rng.choice(CLAIMS)}}
            )
        elif kind < 0.55:
            volumes.append({"name": f"e{i}", "ephemeral": {}})
        else:
            volumes.append({"name": f"v{i}", **rng.choice(INLINE)})
    return volumes


def world(seed: int, num_nodes: int, num_pods: int) -> tuple[Any, list[dict[str, Any]]]:
    rng = random.Random(seed)
    nodes = [
        node(
            f"node-{i}",
            labels={ZONE: rng.choice(("z1", "z2"))} if rng.random() < 0.8 else {},
            allocatable={
                "cpu": "4",
                "memory": "8Gi",
                "pods": 110,
                "attachable-volumes-aws-ebs": str(rng.choice((1, 2, 39))),
            },
        )
        for i in range(num_nodes)
    ]
    placed = [
        pod(
            f"placed-{i}",
            node_name=f"node-{rng.randrange(num_nodes)}",
            volumes=random_volumes(rng, f"placed-{i}"),
        )
        for i in range(num_nodes)
    ]
    pending = [
        pod(f"pending-{i}", volumes=random_volumes(rng, f"pending-{i}")) for i in range(num_pods)
    ]
    return cluster(nodes, placed, storage()), pending


def volume_policy() -> CompiledPolicy:
    base = compile_policy(
        parse_policy(
            {
                "apiVersion": "policyscheduler.io/v1alpha1",
                "kind": "SchedulingPolicy",
                "metadata": {"name": "volumes"},
                "spec": {"predicates": [{"name": "PodFitsResources"}], "priorities": []},
            }
        )
    )
    predicates = tuple(
        compiled_predicate(cls.name, cls(None, None).predicate())  # type: ignore[arg-type]
        for cls in PLUGINS
    )
    return replace(base, predicates=base.predicates + predicates)


def same(fast: Decision, slow: Decision, where: str) -> None:
    assert fast.node == slow.node, where
    assert fast.feasible == slow.feasible, where
    assert fast.failed == slow.failed, where
    assert fast.message == slow.message, where


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed {s}") for s in (1, 2, 3, 4, 5)])
def test_fast_and_plain_decide_alike(seed: int) -> None:
    fast_state, pending = world(seed, 8, 30)
    slow_state, _ = world(seed, 8, 30)
    fast_policy = volume_policy()
    slow_policy = replace(fast_policy, settings=replace(fast_policy.settings, fast=False))
    fast_scheduler, slow_scheduler = Scheduler(), Scheduler()

    async def decide_all() -> int:
        placed = 0
        for step, raw in enumerate(pending):
            incoming = parse_pod(raw)
            fast = await fast_scheduler.schedule(incoming, fast_state, fast_policy)
            slow = await slow_scheduler.schedule(incoming, slow_state, slow_policy)
            same(fast, slow, f"seed {seed}, pod {step}")
            if fast.node is not None:
                placed += 1
                fast_state.add_pod(replace(incoming, node_name=fast.node))
                slow_state.add_pod(replace(incoming, node_name=fast.node))
        return placed

    placed = asyncio.run(decide_all())
    assert 0 < placed < len(pending), "the worlds must both place and refuse pods"


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda cls: cls.name)
def test_never_fails_is_true_only_when_the_predicate_passes_everywhere(plugin: Any) -> None:
    predicate: Predicate = plugin(None, None).predicate()
    never_fails = hints_of(predicate).never_fails
    assert never_fails is not None
    skipped = checked = 0
    for seed in range(6):
        state, pending = world(seed, 6, 25)
        for raw in pending:
            incoming = parse_pod(raw)
            if not never_fails(incoming):
                continue
            skipped += 1
            for info in state.nodes.values():
                checked += 1
                assert predicate(incoming, info, cycle(incoming, state)) == (), raw["metadata"][
                    "name"
                ]
    assert skipped and checked
