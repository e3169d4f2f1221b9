"""A preemption victim held at Permit is rejected back to the queue, not deleted.

kube-scheduler v1.30's ``prepareCandidate``: a victim that a Permit plugin holds
(assumed on its node, not bound) gets ``Reject("preempted")`` from the preemption
plugin and a ``Preempted`` event, and is neither marked nor deleted: it is a pending pod
that simply goes back to the queue. The runtime is the operator's on a fake API, the
Permit plugin the test package's ``TestGate`` (a pod labelled ``test-gate=wait`` waits);
time is the loop's (looptime).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import policy_scheduler_testplugins as testplugins
import pytest
import yaml

from builders import node, pod
from fakes import FakeApi
from plugins.test_runtime_cycles import scheduling, until
from policy_scheduler.runtime.scheduling import SchedulerRuntime

pytestmark = pytest.mark.looptime

SCHEDULER = "policy-scheduler"
V130 = Path(__file__).parents[2] / "examples" / "policies" / "kube-scheduler-v1.30.yaml"


def v130_with_gate() -> dict[str, Any]:
    """kube-scheduler v1.30's default profile, serving SCHEDULER, TestGate at Permit."""
    obj = yaml.safe_load(V130.read_text())
    obj["metadata"] = {"name": "v130", "creationTimestamp": "2024-01-01T00:00:00Z"}
    spec = obj["spec"]
    spec["schedulerName"] = SCHEDULER
    for point in ("reserve", "permit"):
        spec["plugins"][point]["enabled"].append({"name": "TestGate"})
    return dict(obj)


def spod(name: str, priority: int, **labels: str) -> dict[str, Any]:
    return pod(
        name, requests={"cpu": "1500m"}, priority=priority, labels=labels, schedulerName=SCHEDULER
    )


async def test_a_victim_waiting_on_permit_is_rejected_not_deleted() -> None:
    testplugins.reset()
    api = FakeApi()
    runtime = SchedulerRuntime(api, clock=asyncio.get_running_loop().time)
    runtime.handle("ADDED", v130_with_gate())
    runtime.handle("ADDED", node("n1", cpu="2"))
    runtime.handle("ADDED", spod("held", 0, **{"test-gate": "wait", "test-gate-timeout": "600"}))
    async with scheduling(runtime):
        await until(lambda: len(runtime.world.handle.waiting) == 1, "held to wait at Permit")
        urgent = spod("urgent", 1000)
        runtime.handle("ADDED", urgent)
        await until(lambda: any(e["reason"] == "Preempted" for e in api.events), "the preemption")
        assert api.deletions == []  # a pending pod: back to the queue, not deleted
        await until(lambda: ("unreserve", "held", "n1") in testplugins.CALLS, "held let go")
    [event] = [e for e in api.events if e["reason"] == "Preempted"]
    assert event["involvedObject"]["name"] == "held"
    assert event["message"] == f"Preempted by pod {urgent['metadata']['uid']} on node n1"
    held_conditions = [
        c["type"]
        for _ns, name, patch in api.of("patch_pod_status")
        if name == "held"
        for c in patch["status"].get("conditions", ())
    ]
    assert "DisruptionTarget" not in held_conditions
    assert api.deletions == [] and api.bindings == []
