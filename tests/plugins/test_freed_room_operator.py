"""Freed room wakes the pod that waited for it, in the real operator over HTTP, against
the emulator: a pod held at Permit (the test plugin ``TestGate``) holds the only room on
its node; a second pod finds none and is unschedulable; when the first one's wait times
out, the second is bound within seconds (kube-scheduler v1.30 treats the forgotten
assumption as an assigned pod's deletion), not after the 60 s flush of unschedulable
pods. Real time, as every e2e test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders import node
from e2e.harness import KubeClient
from e2e.operator_harness import OperatorThread
from e2e.test_operator import bound_node, our_pod, policy_obj
from plugins.test_operator import event_message, multi_point, policy_status

pytestmark = pytest.mark.looptime(False)

#: How soon after the holder's timeout the waiter must be bound: well under the 10 s
#: maximum backoff and the 60 s flush, with room for a slow shared machine.
PROMPTLY = 4.0


async def test_a_permit_timeout_frees_the_room_for_the_pod_that_waited(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="1"))
    await emulator.create(policy_obj("gate", multi_point("TestGate")))

    def whole_node(name: str, **labels: str) -> dict[str, Any]:
        return our_pod(name, requests={"cpu": "1"}, labels=labels)

    async with OperatorThread(kubeconfig):
        await policy_status(emulator, "gate", 1, "True")
        await emulator.create(
            whole_node("holder", **{"test-gate": "wait", "test-gate-timeout": "6"}), namespace
        )
        await event_message(emulator, namespace, "holder", "WaitingOnPermit")
        await emulator.create(whole_node("waiter"), namespace)
        refused = await event_message(emulator, namespace, "waiter", "FailedScheduling")
        assert refused.startswith("0/1 nodes are available"), refused
        # The holder's wait times out: its room is free, and the waiter takes it.
        assert await event_message(emulator, namespace, "holder", "FailedScheduling", 20) == (
            "TestGate: rejected due to timeout after waiting 6s at plugin TestGate"
        )
        assert await bound_node(emulator, namespace, "waiter", timeout=PROMPTLY) == "n1"
        holder = await emulator.get("v1", "Pod", "holder", namespace)
        assert holder is not None and not holder["spec"].get("nodeName")
