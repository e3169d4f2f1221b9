"""Gang scheduling end to end: the real operator, Coscheduling enabled, the emulator's API.

What a cluster operator would check with kubectl: two gangs that each fit alone but not
together — one is bound whole, the other holds nothing and says why, and is bound once
room appears; PodGroup status follows as scheduler-plugins' controller writes it; a
group short of members waits and is bound when its last member arrives; a member whose
binding is refused is bound again onto its place, so no group is left partly bound.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from builders import node
from coscheduling.gangs import member, pod_group, policy_object
from e2e.emulator import EmulatorServer, Fault
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_faults import all_bound, inject, injected, placements
from e2e.test_operator import events_for

PG_API = "scheduling.x-k8s.io/v1alpha1"


def our_member(name: str, group: str, cpu: str = "1") -> dict[str, Any]:
    obj = member(name, group, cpu=cpu)
    del obj["metadata"]["uid"]  # the API server assigns them
    del obj["metadata"]["namespace"]
    del obj["metadata"]["creationTimestamp"]
    return obj


def our_group(name: str, min_member: int) -> dict[str, Any]:
    obj = pod_group(name, min_member)
    for key in ("uid", "namespace", "creationTimestamp"):
        del obj["metadata"][key]
    return obj


async def failed_scheduling(kube: KubeClient, namespace: str, name: str) -> list[str]:
    return [
        e["message"]
        for e in await events_for(kube, namespace, name)
        if e["reason"] == "FailedScheduling"
    ]


async def group_status(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get(PG_API, "PodGroup", name, namespace)
    assert obj is not None
    status: dict[str, Any] = obj.get("status") or {}
    return status


async def test_two_gangs_that_fit_alone_never_hold_half_the_cluster_each(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="2", memory="4Gi"))
    await emulator.create(node("n2", cpu="2", memory="4Gi"))
    await emulator.create(policy_object())
    await emulator.create(our_group("a", 3), namespace)
    await emulator.create(our_group("b", 3), namespace)
    # Members interleaved: a scheduler placing pod by pod would give each gang two CPUs.
    for i in (1, 2, 3):
        for gang in ("a", "b"):
            await emulator.create(our_member(f"{gang}-{i}", gang), namespace)
    async with OperatorThread(kubeconfig):
        await all_bound(emulator, namespace, ["a-1", "a-2", "a-3"], timeout=15)

        async def b_refused() -> bool:
            return all([await failed_scheduling(emulator, namespace, f"b-{i}") for i in (1, 2, 3)])

        await wait_until(b_refused, timeout=10, interval=0.2, message="gang b refused")
        placed = await placements(emulator, namespace)
        assert [placed[f"b-{i}"] for i in (1, 2, 3)] == [None, None, None]
        (message,) = set((await failed_scheduling(emulator, namespace, "b-1"))[-1:])
        assert message.startswith(
            f'Coscheduling: pod group "{namespace}/b": 1 of 3 members would fit; none is placed'
        )

        # PodGroup status as scheduler-plugins' controller writes it.
        async def scheduling() -> bool:
            status = await group_status(emulator, namespace, "a")
            return status.get("phase") == "Scheduling" and "scheduleStartTime" in status

        await wait_until(scheduling, timeout=10, interval=0.2, message="a Scheduling")
        for i in (1, 2, 3):
            await emulator.patch(
                "v1",
                "Pod",
                f"a-{i}",
                {"status": {"phase": "Running"}},
                namespace,
                subresource="status",
            )

        async def running() -> bool:
            status = await group_status(emulator, namespace, "a")
            return (status.get("phase"), status.get("running")) == ("Running", 3)

        await wait_until(running, timeout=10, interval=0.2, message="a Running")

        # Gang a finishes and goes: gang b is bound whole.
        for i in (1, 2, 3):
            await emulator.delete("v1", "Pod", f"a-{i}", namespace)
        await all_bound(emulator, namespace, ["b-1", "b-2", "b-3"], timeout=30)


async def test_a_group_short_of_members_waits_for_its_last_member(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="4", memory="4Gi"))
    await emulator.create(policy_object())
    await emulator.create(our_group("g", 3), namespace)
    for i in (1, 2):
        await emulator.create(our_member(f"g-{i}", "g"), namespace)
    async with OperatorThread(kubeconfig):

        async def refused() -> bool:
            return bool(await failed_scheduling(emulator, namespace, "g-1"))

        await wait_until(refused, timeout=15, interval=0.2, message="g-1 refused")
        said = (await failed_scheduling(emulator, namespace, "g-1"))[-1]
        assert f'pod group "{namespace}/g": waiting for members, 2 of 3 members exist' in said
        assert "cannot find enough sibling pods, current pods number: 2, minMember of group: 3" in (
            said
        )
        assert (await group_status(emulator, namespace, "g")).get("phase") == "Pending"
        await emulator.create(our_member("g-3", "g"), namespace)
        # The new member wakes the others at once (not after the 60 s unschedulable wait).
        await all_bound(emulator, namespace, ["g-1", "g-2", "g-3"], timeout=15)


async def test_a_member_whose_binding_is_refused_is_bound_again_on_its_place(
    emulator: KubeClient,
    emulator_server: EmulatorServer,
    namespace: str,
    kubeconfig: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await emulator.create(node("n1", cpu="2", memory="4Gi"))
    await emulator.create(node("n2", cpu="2", memory="4Gi"))
    await emulator.create(policy_object())
    await emulator.create(our_group("g", 4), namespace)
    for i in (1, 2, 3, 4):
        await emulator.create(our_member(f"g-{i}", "g"), namespace)
    # g-2's binding is refused once (a webhook, a quota...): nothing is written. Given
    # up, it would leave three of four members bound and g-2 to be decided anew.
    faults = inject(
        emulator_server, Fault("status", "POST", "/pods/g-2/binding", status=403, times=1)
    )
    caplog.set_level(logging.WARNING, logger="policy_scheduler.runtime.scheduling")
    async with OperatorThread(kubeconfig):
        await all_bound(emulator, namespace, ["g-1", "g-2", "g-3", "g-4"], timeout=20)
    injected(faults)
    (retried,) = [
        r.getMessage() for r in caplog.records if "binding it there again" in r.getMessage()
    ]
    reserved = retried.split(" to ")[1].split(" ")[0]  # "binding ns/g-2 (gang ns/g) to NODE failed"
    placed = await placements(emulator, namespace)
    assert placed["g-2"] == reserved
    assert sorted(placed.values()) == ["n1", "n1", "n2", "n2"]  # no node overcommitted
    assert [b.pod for b in emulator.bindings].count("g-2") == 1  # written once
    assert not [
        e for i in (1, 2, 3, 4) for e in await failed_scheduling(emulator, namespace, f"g-{i}")
    ]


async def test_a_group_served_by_two_coscheduling_policies_is_planned_whole(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    # scheduler-plugins counts a group's pods by its label, whatever their schedulerName:
    # the plan takes them all, each decided by the policy serving its own name.
    await emulator.create(node("n1", cpu="8", memory="8Gi"))
    await emulator.create(policy_object())
    other = policy_object(name="gangs-b")
    other["spec"]["schedulerName"] = "gangs-b"
    await emulator.create(other)
    await emulator.create(our_group("g", 4), namespace)
    for i in (1, 2, 3, 4):
        obj = our_member(f"g-{i}", "g")
        if i > 2:
            obj["spec"]["schedulerName"] = "gangs-b"
        await emulator.create(obj, namespace)
    # A group one of whose pods no gang-planning policy serves is not planned with it.
    await emulator.create(our_group("h", 2), namespace)
    await emulator.create(our_member("h-1", "h"), namespace)
    lone = our_member("h-2", "h")
    lone["spec"]["schedulerName"] = "nobody"
    await emulator.create(lone, namespace)
    async with OperatorThread(kubeconfig):
        await all_bound(emulator, namespace, ["g-1", "g-2", "g-3", "g-4"], timeout=15)

        async def refused() -> bool:
            return bool(await failed_scheduling(emulator, namespace, "h-1"))

        await wait_until(refused, timeout=15, interval=0.2, message="h-1 refused")
        said = (await failed_scheduling(emulator, namespace, "h-1"))[-1]
        assert f'pod group "{namespace}/h": 1 of 2 members would fit; none is placed' in said
        assert "h-2" in said and 'schedulerName "nobody"' in said
