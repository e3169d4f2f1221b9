"""kube-scheduler's own name, end to end: a SchedulingPolicy serving ``default-scheduler``
takes over kube-scheduler's pods only when the operator is told to
(``run --allow-default-scheduler``); else it is Accepted=False and those pods are left
alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import node
from e2e.harness import KubeClient
from e2e.operator_harness import OperatorThread
from e2e.test_operator import POLICY_API, bound_node, events_for, our_pod, policy_obj

KUBE_SCHEDULER = "default-scheduler"


def _accepted(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    for condition in (obj or {}).get("status", {}).get("conditions", []):
        if condition.get("type") == "Accepted":
            return dict(condition)
    return None


async def _judged(kube: KubeClient, name: str, status: str | None = None) -> dict[str, Any]:
    """The policy's Accepted condition once written (with ``status``, once it says that)."""

    def judged(obj: dict[str, Any] | None) -> bool:
        condition = _accepted(obj)
        return condition is not None and status in (None, condition["status"])

    obj = await kube.wait_for(POLICY_API, "SchedulingPolicy", name, None, judged)
    condition = _accepted(obj)
    assert condition is not None
    return condition


async def test_a_policy_serving_default_scheduler_is_refused_and_takes_no_pod(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    await emulator.create(policy_obj("v130-refused", {"schedulerName": KUBE_SCHEDULER}))
    await emulator.create(our_pod("theirs", scheduler_name=KUBE_SCHEDULER), namespace)
    async with OperatorThread(kubeconfig):
        condition = await _judged(emulator, "v130-refused")
        assert (condition["status"], condition["reason"]) == (
            "False",
            "DefaultSchedulerNotAllowed",
        )
        assert "--allow-default-scheduler" in condition["message"]
        assert "allowDefaultScheduler: true" in condition["message"]
        # A pod of ours, created after kube-scheduler's, is bound: the operator is at
        # work, and left kube-scheduler's pod alone.
        await emulator.create(our_pod("mine"), namespace)
        assert await bound_node(emulator, namespace, "mine") == "n1"
        theirs = await emulator.get("v1", "Pod", "theirs", namespace)
        assert theirs is not None
        assert not theirs["spec"].get("nodeName")
        assert not theirs.get("status", {}).get("conditions")
        assert not await events_for(emulator, namespace, "theirs")


async def test_with_the_flag_a_policy_serves_default_scheduler(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    await emulator.create(policy_obj("v130-allowed", {"schedulerName": KUBE_SCHEDULER}))
    await emulator.create(our_pod("theirs", scheduler_name=KUBE_SCHEDULER), namespace)
    async with OperatorThread(kubeconfig, allow_default_scheduler=True):
        condition = await _judged(emulator, "v130-allowed", status="True")
        assert (condition["status"], condition["reason"]) == ("True", "Accepted")
        assert await bound_node(emulator, namespace, "theirs") == "n1"
