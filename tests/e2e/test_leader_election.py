"""The Lease against a held event loop: the real operator over HTTP against the emulator.

A synchronous plugin that holds the operator's loop (the scripted plugins' ``hold``:
it blocks in Filter or Reserve until the test sets ``HOLD``) must not cost the Lease:
leader election renews on a thread of its own (``runtime/leadership.py``,
``ElectionThread``). And a Lease that another holder takes while the loop is held
must stop the binding: what was decided meanwhile is not bound, the pod is decided
again once the Lease is ours again, and bound once.

Short leases (2 s, renew deadline 1.5 s, a try every 0.2 s) so the hold outlasts them.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from policy_scheduler_testplugins import scripted

from builders import node, pod
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"
LEASE = ("coordination.k8s.io/v1", "Lease", "policy-scheduler", "default")
ELECTION: dict[str, Any] = dict(
    leader_elect=True, lease_duration=2.0, renew_deadline=1.5, retry_period=0.2
)


@pytest.fixture(autouse=True)
def _scripts() -> Any:
    scripted.reset()
    yield
    scripted.HOLD.set()  # never leave an operator's loop held
    scripted.reset()


def holding_policy(point: str) -> dict[str, Any]:
    return {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "slow"},
        "spec": {
            "schedulerName": SCHEDULER,
            "plugins": {"multiPoint": {"enabled": [{"name": "ScriptA"}]}},
            "pluginConfig": [{"name": "ScriptA", "args": {"hold": point, "holdSeconds": 20}}],
        },
    }


def our_pod(name: str) -> dict[str, Any]:
    obj = pod(name, requests={"cpu": "100m"})
    obj["spec"]["schedulerName"] = SCHEDULER
    del obj["metadata"]["uid"]
    del obj["metadata"]["namespace"]
    return obj


def called(point: str, pod_name: str) -> int:
    return sum(1 for _, p, name, _ in scripted.SCRIPT_CALLS if (p, name) == (point, pod_name))


async def lease_spec(emulator: KubeClient) -> dict[str, Any]:
    lease = await emulator.get(*LEASE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


async def test_the_lease_is_renewed_while_a_plugin_holds_the_loop(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    """Before, the renewals ran on the loop: held past the renew deadline, the leader
    lost its Lease and dropped what it decided (issue 31, item 2)."""
    if not emulator.is_emulated:
        pytest.skip("the plugin runs in this process: the emulator's operator thread")
    await emulator.create(node("n1", cpu="4", memory="8Gi"))
    await emulator.create(holding_policy("Filter"))
    await emulator.create(our_pod("held"), namespace)
    async with OperatorThread(kubeconfig, identity="leader", **ELECTION):
        await wait_until(lambda: called("Filter", "held") > 0, timeout=10, message="Filter")
        first = await lease_spec(emulator)
        assert first["holderIdentity"] == "leader"
        held_since = time.monotonic()
        renewals: set[str] = {first["renewTime"]}

        async def renewed_past_the_lease() -> bool:
            renewals.add((await lease_spec(emulator))["renewTime"])
            return time.monotonic() - held_since > ELECTION["lease_duration"] and len(renewals) > 5

        # The loop stays held meanwhile (HOLD is not set): renewals come from elsewhere.
        await wait_until(renewed_past_the_lease, timeout=10, message="renewals during the hold")
        assert called("Filter", "held") == 1
        spec = await lease_spec(emulator)
        assert spec["holderIdentity"] == "leader"
        assert spec["leaseTransitions"] == first["leaseTransitions"]  # never lost
        scripted.HOLD.set()
        await emulator.wait_for(
            "v1", "Pod", "held", namespace, lambda o: bool(o and o["spec"].get("nodeName"))
        )
    successes = Counter(b.pod for b in emulator.bindings if b.status < 300)
    assert successes == Counter(["held"])
    assert called("Filter", "held") == 1  # decided once: nothing was dropped


async def test_a_lease_taken_while_the_loop_is_held_stops_the_binding(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    """The pod is held in Reserve (decided, about to be bound) when another holder takes
    the Lease; once the loop goes on, that decision must not be bound: the binding path
    asks the election's thread-safe ``is_leader``, not the (late) stop of the loop."""
    if not emulator.is_emulated:
        pytest.skip("the plugin runs in this process: the emulator's operator thread")
    await emulator.create(node("n1", cpu="4", memory="8Gi"))
    await emulator.create(holding_policy("Reserve"))
    await emulator.create(our_pod("held"), namespace)
    operator = OperatorThread(kubeconfig, identity="leader", **ELECTION)
    async with operator:
        assert operator.operator is not None
        await wait_until(lambda: called("Reserve", "held") > 0, timeout=10, message="Reserve")
        taken = {"holderIdentity": "intruder", "leaseDurationSeconds": 3600}
        await emulator.patch(*LEASE[:3], {"spec": taken}, namespace=LEASE[3])
        await wait_until(lambda: not operator.operator.is_leader(), message="the loss seen")
        scripted.HOLD.set()
        # The held decision ends either way: Unreserved (not bound), or bound (PreBind
        # comes first): whichever comes is the barrier.
        await wait_until(
            lambda: called("Unreserve", "held") + called("PreBind", "held") > 0,
            message="the held decision's end",
        )
        assert called("PreBind", "held") == 0
        assert not [b for b in emulator.bindings if b.pod == "held"]
        # The intruder lets go: the pod is decided again, and bound once.
        await emulator.patch(*LEASE[:3], {"spec": {"holderIdentity": ""}}, namespace=LEASE[3])
        await emulator.wait_for(
            "v1", "Pod", "held", namespace, lambda o: bool(o and o["spec"].get("nodeName"))
        )
        assert (await lease_spec(emulator))["holderIdentity"] == "leader"
    assert [b.pod for b in emulator.bindings] == ["held"]
    assert called("Reserve", "held") == 2
