"""QueueingHints end to end (kube-scheduler v1.34): the operator leaves an unschedulable
pod asleep through node heartbeats and label changes that cannot help it, and wakes it
when the label it needs appears on a node.

The pod asks ``zone: a``; the only node says ``zone: b``. After the pod is marked
Unschedulable, the node gets status-only updates (heartbeats) and labels no pod asks
for; once the operator has seen the last of them (its cache shows the label), the node
gets ``zone: a`` and the pod binds. Backoff is set to 10 ms, so a pod woken by the
irrelevant changes would be decided again at once: the unschedulable attempts counted
by ``scheduler_schedule_attempts_total`` and the FailedScheduling events stay at one.
"""

from __future__ import annotations

import re
from pathlib import Path

from builders import node
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_operator import (
    SCHEDULER,
    bound_node,
    events_for,
    our_pod,
    policy_obj,
    unschedulable,
)

POLICY = {
    "schedulerName": SCHEDULER,
    "predicates": [{"name": "NodeAffinity"}, {"name": "NodeResourcesFit"}],
    "priorities": [],
}


def _unschedulable_attempts(metrics: str) -> float:
    pattern = r'^scheduler_schedule_attempts_total\{[^}]*result="unschedulable"[^}]*\} (\S+)$'
    return sum(float(m.group(1)) for m in re.finditer(pattern, metrics, re.MULTILINE))


async def _failed_scheduling(kube: KubeClient, namespace: str, name: str) -> int:
    return sum(
        int(event.get("count") or 1)
        for event in await events_for(kube, namespace, name)
        if event.get("reason") == "FailedScheduling"
    )


async def test_a_pod_sleeps_through_heartbeats_and_wakes_when_its_label_appears(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", labels={"zone": "b"}, conditions={"Ready": "True"}))
    await emulator.create(policy_obj("hinted", POLICY))
    async with OperatorThread(kubeconfig, pod_initial_backoff=0.01, pod_max_backoff=0.01) as thread:
        assert thread.operator is not None
        operator = thread.operator
        await emulator.create(our_pod("zoned", node_selector={"zone": "a"}), namespace)
        await unschedulable(emulator, namespace, "zoned")
        await wait_until(
            lambda: _unschedulable_attempts(operator.metrics.render().decode()) == 1,
            message="one unschedulable attempt counted",
        )
        for k in range(5):
            beat = {
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "lastHeartbeatTime": f"2024-05-01T12:00:{k:02d}Z",
                        }
                    ]
                }
            }
            await emulator.patch("v1", "Node", "n1", beat, subresource="status")
            await emulator.patch("v1", "Node", "n1", {"metadata": {"labels": {"rack": f"r{k}"}}})

        cluster = operator.runtime.world.cache.cluster

        def seen_last() -> bool:
            info = cluster.nodes.get("n1")
            return info is not None and info.node.labels.get("rack") == "r4"

        await wait_until(seen_last, message="the operator saw the last label change")
        await emulator.patch("v1", "Node", "n1", {"metadata": {"labels": {"zone": "a"}}})
        assert await bound_node(emulator, namespace, "zoned") == "n1"
        assert _unschedulable_attempts(operator.metrics.render().decode()) == 1
    assert await _failed_scheduling(emulator, namespace, "zoned") == 1
