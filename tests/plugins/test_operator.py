"""Plugins installed with pip, in the real operator, over HTTP, against the emulator.

What a cluster operator sees of a plugin package: the policy enabling it accepted with
its pipeline in ``status.plugins`` (or refused, naming the field, with the reason), the
pods it lets through bound and thanked (the sample's PreBind), the pods it refuses told
why in a ``FailedScheduling`` event naming it, Permit holding a pod (a
``WaitingOnPermit`` event) until released, rejected or timed out, a failing PreBind and
a raising Filter costing their own pod's attempt only, and a changed policy taking
effect without a restart. Each test runs the operator once and walks through its cases
(the operator's start is what costs), pods being observed through the API as users do.
"""

from __future__ import annotations

import re
import socket
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import policy_scheduler_testplugins as testplugins
import pytest
import yaml

from builders import node
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread
from e2e.test_faults import free_port, healthz
from e2e.test_kubectl import KUBECTL, Kubectl
from e2e.test_operator import POLICY_API, SCHEDULER, bound_node, events_for, our_pod, policy_obj
from plugins.installing import SAMPLE
from policy_scheduler.engine import pipeline as framework_runner
from policy_scheduler.engine import plugins as plugin_loading


async def event_message(
    kube: KubeClient, namespace: str, pod: str, reason: str, timeout: float = 10
) -> str:
    """The message of the pod's latest event of ``reason``, once there is one."""
    found: list[str] = []

    async def seen() -> bool:
        found[:] = [
            e["message"] for e in await events_for(kube, namespace, pod) if e["reason"] == reason
        ]
        return bool(found)

    await wait_until(seen, timeout=timeout, interval=0.1, message=f"a {reason} event on {pod}")
    return found[-1]


async def policy_status(
    kube: KubeClient, name: str, generation: int, accepted: str
) -> dict[str, Any]:
    """The policy's status once it judged ``generation`` (Accepted = ``accepted``)."""

    def judged(obj: dict[str, Any] | None) -> bool:
        status = (obj or {}).get("status") or {}
        conditions = status.get("conditions") or [{}]
        return (
            status.get("observedGeneration") == generation
            and conditions[0].get("status") == accepted
        )

    obj = await kube.wait_for(POLICY_API, "SchedulingPolicy", name, None, judged, timeout=10)
    assert obj is not None
    status: dict[str, Any] = obj["status"]
    return status


def multi_point(*plugins: str, args: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "schedulerName": SCHEDULER,
        "plugins": {"multiPoint": {"enabled": [{"name": name} for name in plugins]}},
        "pluginConfig": [{"name": name, "args": a} for name, a in (args or {}).items()],
    }


async def test_the_sample_plugin_filters_scores_thanks_and_follows_its_policy(
    emulator: KubeClient, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    await emulator.create(node("loose", cpu="8"))
    await emulator.create(node("rack-red", labels={"example.com/rack": "r2"}))
    await emulator.create(
        node("rack-blue", labels={"example.com/rack": "r1", "example.com/color": "326ce5"})
    )
    # The example policy, as `kubectl apply -f examples/plugins/sample/policy.yaml` sends it.
    example = yaml.safe_load((SAMPLE / "policy.yaml").read_text())
    spec = example["spec"]
    await emulator.create(example)
    await emulator.create(our_pod("web", requests={"cpu": "100m", "memory": "64Mi"}), namespace)

    async with OperatorThread(kubeconfig):
        status = await policy_status(emulator, "sample", 1, "True")
        plugins = status["plugins"]
        assert plugins["preFilter"] == [{"name": "Sample"}]
        assert plugins["filter"][-1] == {"name": "Sample"}
        assert plugins["score"][-1] == {"name": "Sample", "weight": 2}
        assert {"name": "Sample"} in plugins["preBind"]
        if KUBECTL is not None:  # what a user reads
            kube = Kubectl(kubeconfig, tmp_path / "kube-cache")
            described = (await kube.run("describe", "schedpol", "sample")).stdout
            status = described[described.index("Status:") :]
            shown = [line.split() for line in status[status.index("  Plugins:") :].splitlines()]
            at = shown.index(["Pre", "Bind:"])
            assert shown[at : at + 3] == [
                ["Pre", "Bind:"],
                ["Name:", "CheckVolumeBinding"],
                ["Name:", "Sample"],
            ]
            lines = status.splitlines()
            at = lines.index("    Score:") + 1
            end = next(i for i in range(at, len(lines)) if not lines[i].startswith("      "))
            assert [line.split() for line in lines[end - 2 : end]] == [
                ["Name:", "Sample"],
                ["Weight:", "2"],
            ]

        # Filter keeps it in a rack, Score prefers the blue one, PreBind thanks.
        assert await bound_node(emulator, namespace, "web") == "rack-blue"
        assert await event_message(emulator, namespace, "web", "Thanks") == (
            f"thanks to Kubernetes: {namespace}/web goes to rack-blue (favorite color "
            "#326ce5, favorite number 7, requests 100m CPU, 64Mi memory)"
        )

        # A changed policy takes effect without a restart: no node has this label.
        spec["pluginConfig"][0]["args"]["requiredNodeLabel"] = "example.com/gpu"
        await emulator.patch(POLICY_API, "SchedulingPolicy", "sample", {"spec": spec})
        await policy_status(emulator, "sample", 2, "True")
        await emulator.create(our_pod("late"), namespace)
        assert await event_message(emulator, namespace, "late", "FailedScheduling") == (
            "0/3 nodes are available: 3 node(s) didn't have label example.com/gpu "
            "(required by plugin Sample)."
        )

        # Bad arguments: refused, naming the field; the last accepted version runs on.
        spec["pluginConfig"][0]["args"]["favoriteNumber"] = 1000
        await emulator.patch(POLICY_API, "SchedulingPolicy", "sample", {"spec": spec})
        status = await policy_status(emulator, "sample", 3, "False")
        [condition] = status["conditions"]
        assert condition["reason"] == "InvalidArgs"
        assert condition["message"] == (
            'SchedulingPolicy "sample": spec.pluginConfig[0].args.favoriteNumber: input should '
            "be less than or equal to 100, got 1000"
        )
        assert status["plugins"] == {**plugins}  # still the pipeline in service

        # A plugin nobody installed.
        typo = multi_point("Sampel") | {"schedulerName": "other"}
        await emulator.create(policy_obj("typo", typo))
        status = await policy_status(emulator, "typo", 1, "False")
        assert status["conditions"][0]["reason"] == "PluginNotFound"
        assert (
            "spec.plugins.multiPoint.enabled[0].name: no plugin 'Sampel'"
            in (status["conditions"][0]["message"])
        )


def permit_deadline(message: str) -> datetime:
    found = re.fullmatch(r"waiting on permit of TestGate until (\S+), assumed on node n1", message)
    assert found, message
    return datetime.strptime(found.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


async def test_permit_holds_a_pod_until_released_rejected_or_timed_out(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="4"))
    await emulator.create(
        policy_obj("gate", multi_point("TestGate", args={"TestGate": {"timeoutSeconds": 30}}))
    )

    def gated(name: str, action: str, **labels: str) -> dict[str, Any]:
        return our_pod(name, requests={"cpu": "100m"}, labels={"test-gate": action, **labels})

    async with OperatorThread(kubeconfig):
        await policy_status(emulator, "gate", 1, "True")

        # Held: assumed on n1, told so with the plugin and the deadline, not bound.
        await emulator.create(gated("held", "wait"), namespace)
        waiting = await event_message(emulator, namespace, "held", "WaitingOnPermit")
        deadline = permit_deadline(waiting)
        now = datetime.now(UTC)
        assert now + timedelta(seconds=20) < deadline <= now + timedelta(seconds=31)
        held = await emulator.get("v1", "Pod", "held", namespace)
        assert held is not None and not held["spec"].get("nodeName")
        # Released by another pod's Permit: both bound.
        await emulator.create(gated("release", "release"), namespace)
        assert await bound_node(emulator, namespace, "held") == "n1"
        assert await bound_node(emulator, namespace, "release") == "n1"

        # A waiting pod rejected by a plugin: unreserved, FailedScheduling with its message.
        await emulator.create(gated("victim", "wait"), namespace)
        await event_message(emulator, namespace, "victim", "WaitingOnPermit")
        await emulator.create(gated("killer", "reject-waiting"), namespace)
        assert await event_message(emulator, namespace, "victim", "FailedScheduling") == (
            f"TestGate: rejected by {namespace}/killer"
        )
        assert ("unreserve", "victim", "n1") in testplugins.CALLS

        # Nobody allows it: the wait times out.
        await emulator.create(gated("slow", "wait", **{"test-gate-timeout": "1"}), namespace)
        assert await event_message(emulator, namespace, "slow", "FailedScheduling") == (
            "TestGate: rejected due to timeout after waiting 1s at plugin TestGate"
        )

        # Refused at once; retried once its labels change, and bound.
        await emulator.create(gated("denied", "deny"), namespace)
        assert await event_message(emulator, namespace, "denied", "FailedScheduling") == (
            "TestGate: denied by the test gate"
        )
        assert [c for c in testplugins.CALLS if c[1] == "denied"] == [
            ("reserve", "denied", "n1"),
            ("unreserve", "denied", "n1"),
        ]
        await emulator.patch(
            "v1", "Pod", "denied", {"metadata": {"labels": {"test-gate": None}}}, namespace
        )
        assert await bound_node(emulator, namespace, "denied") == "n1"
        unbound = {"victim", "slow"}
        for name in unbound:
            obj = await emulator.get("v1", "Pod", name, namespace)
            assert obj is not None and not obj["spec"].get("nodeName")


async def test_a_failing_prebind_and_a_raising_filter_cost_their_own_pod_only(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="4"))
    await emulator.create(
        policy_obj("faulty", multi_point("TestGate", "TestPreBind", "TestRaiser"))
    )
    exceptions = framework_runner.EXCEPTIONS.get(("Filter", "TestRaiser"), 0)

    def labelled(name: str, **labels: str) -> dict[str, Any]:
        return our_pod(name, requests={"cpu": "100m"}, labels=labels)

    async with OperatorThread(kubeconfig):
        await emulator.create(labelled("flaky", **{"test-prebind": "fail"}), namespace)
        await emulator.create(labelled("boom", **{"test-raise": "filter"}), namespace)
        await emulator.create(labelled("hang", **{"test-prebind": "hang"}), namespace)
        await emulator.create(labelled("calm"), namespace)

        # PreBind failed once: FailedScheduling naming the plugin, unreserved, retried, bound.
        assert await event_message(emulator, namespace, "flaky", "FailedScheduling") == (
            'running PreBind plugin "TestPreBind": the volume is not ready yet (failure 1)'
        )
        assert await bound_node(emulator, namespace, "flaky") == "n1"
        flaky = [c[0] for c in testplugins.CALLS if c[1] == "flaky"]
        assert flaky[:4] == ["reserve", "prebind-failed", "unreserve", "reserve"]

        # PreBind past its deadline (1 s): the same, saying so.
        assert await event_message(emulator, namespace, "hang", "FailedScheduling") == (
            'running PreBind plugin "TestPreBind": no answer within 1s'
        )
        # A Filter that raises: that pod's attempt fails naming the plugin, counted.
        assert await event_message(emulator, namespace, "boom", "FailedScheduling") == (
            f'running Filter plugin "TestRaiser": RuntimeError: boom in Filter for {namespace}/boom'
        )
        assert framework_runner.EXCEPTIONS[("Filter", "TestRaiser")] > exceptions
        # The others go on.
        assert await bound_node(emulator, namespace, "calm") == "n1"
        await emulator.create(labelled("after"), namespace)
        assert await bound_node(emulator, namespace, "after") == "n1"


async def test_a_plugin_whose_import_hangs_costs_only_its_own_policy(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hold = tmp_path / "hold"
    hold.write_text("the hung plugin's import waits while this file exists")
    monkeypatch.setenv("POLICY_SCHEDULER_TEST_HANG_FILE", str(hold))
    monkeypatch.setattr(plugin_loading, "LOAD_DEADLINE", 2.0)
    # Imported afresh (another test may have imported it without the hold).
    monkeypatch.setattr(plugin_loading, "_loads", {})
    monkeypatch.delitem(sys.modules, "policy_scheduler_testplugins.hung", raising=False)
    await emulator.create(node("n1", cpu="4"))
    await emulator.create(
        policy_obj("hung", {**multi_point("TestHungImport"), "schedulerName": "hung"})
    )
    await emulator.create(policy_obj("calm", multi_point("TestRaiser")))
    await emulator.create(
        our_pod("waits", requests={"cpu": "100m"}, scheduler_name="hung"), namespace
    )
    health = free_port()
    try:
        async with OperatorThread(kubeconfig, health_port=health):
            await emulator.create(our_pod("calm", requests={"cpu": "100m"}), namespace)
            # Everything else goes on: the other policy's pod binds, /healthz answers.
            assert await bound_node(emulator, namespace, "calm") == "n1"
            status, body = await healthz(health)
            assert (status, body["problems"]) == (200, [])
            # The policy naming the hung plugin is refused, saying why.
            refused = await policy_status(emulator, "hung", 1, "False")
            condition = refused["conditions"][0]
            assert condition["reason"] == "PluginLoadFailed"
            assert "plugin 'TestHungImport'" in condition["message"]
            assert "import timed out after 2 s" in condition["message"]
            assert (await emulator.get("v1", "Pod", "waits", namespace))["spec"].get(
                "nodeName"
            ) is None
            # Once the import finishes, the policy read again is accepted and serves.
            hold.unlink()
            await wait_until(
                lambda: all(load.done.is_set() for load in plugin_loading._loads.values()),
                timeout=10,
                message="the hung import to finish",
            )
            await emulator.patch(
                POLICY_API, "SchedulingPolicy", "hung", {"metadata": {"labels": {"retry": "1"}}}
            )
            await policy_status(emulator, "hung", 1, "True")
            assert await bound_node(emulator, namespace, "waits") == "n1"
    finally:
        hold.unlink(missing_ok=True)


async def test_a_plugin_installed_while_the_operator_runs_is_loaded(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What `pip install -e` writes into site-packages: the distribution's metadata (found
    # at once) and a .pth file naming the source directory (applied by Python only at
    # start-up). Written after the operator has read the installed plugins.
    site_dir, source = tmp_path / "site-packages", tmp_path / "src"
    site_dir.mkdir()
    source.mkdir()
    (source / "policy_scheduler_latecomer.py").write_text(
        "from policy_scheduler.framework import FilterPlugin, Status\n\n\n"
        "class Latecomer(FilterPlugin):\n"
        "    def filter(self, state, pod, node):\n"
        "        return None if node.node.name == 'wanted' else Status.unschedulable('no')\n"
    )
    dist_info = site_dir / "policy_scheduler_latecomer-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: policy-scheduler-latecomer\nVersion: 0.1\n"
    )
    (dist_info / "entry_points.txt").write_text(
        "[policy_scheduler.plugins]\nTestLatecomer = policy_scheduler_latecomer:Latecomer\n"
    )
    await emulator.create(node("other", cpu="8"))
    await emulator.create(node("wanted", cpu="1"))
    async with OperatorThread(kubeconfig):
        assert "TestLatecomer" not in plugin_loading.installed_entry_points()
        (site_dir / "__editable__.policy_scheduler_latecomer-0.1.pth").write_text(f"{source}\n")
        sites = plugin_loading._site_dirs()
        monkeypatch.setattr(plugin_loading, "_site_dirs", lambda: [*sites, str(site_dir)])
        monkeypatch.syspath_prepend(str(site_dir))  # site-packages is on sys.path already
        await emulator.create(policy_obj("late", multi_point("TestLatecomer")))
        status = await policy_status(emulator, "late", 1, "True")
        assert "TestLatecomer" in str(status["plugins"])
        await emulator.create(our_pod("p", requests={"cpu": "100m"}), namespace)
        assert await bound_node(emulator, namespace, "p") == "wanted"
    sys.modules.pop("policy_scheduler_latecomer", None)


async def test_a_slow_filter_costs_its_own_policys_pods_and_health_still_answers(
    emulator: KubeClient, namespace: str, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Filter taking 0.5 s a node, for real, on the operator's loop: 2 s a cycle on four
    # nodes. The other policy's pods, queued behind three of the slow policy's, are bound
    # after one slow cycle, not three (the slow policy's pods wait meanwhile, with a
    # Warning); /healthz answers within 1 s all along.
    def slow_filter(self: Any, state: Any, pod: Any, node: Any) -> None:
        time.sleep(0.5)  # the plugin's own synchronous work

    monkeypatch.setattr(testplugins.Raiser, "filter", slow_filter)
    for i in range(4):
        await emulator.create(node(f"n{i}", cpu="8"))
    slow = multi_point("TestRaiser")
    slow["schedulerName"] = "slow-scheduler"
    await emulator.create(policy_obj("slow", slow))
    await emulator.create(policy_obj("fast", {"schedulerName": SCHEDULER}))
    for i in range(3):
        await emulator.create(
            # Labels of their own: no pod reuses another's Filter answers (equivalence);
            # a higher priority: first in the queue.
            our_pod(
                f"slow-{i}",
                requests={"cpu": "100m"},
                labels={"replica": str(i)},
                scheduler_name="slow-scheduler",
                priority=10,
            ),
            namespace,
        )
    for i in range(3):
        await emulator.create(our_pod(f"fast-{i}", requests={"cpu": "100m"}), namespace)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        health = int(sock.getsockname()[1])
    async with OperatorThread(kubeconfig, health_port=health):
        timeout = aiohttp.ClientTimeout(total=1.0)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def all_bound() -> bool:
                async with session.get(f"http://127.0.0.1:{health}/healthz") as response:
                    assert response.status == 200  # within 1 s, while cycles hold the loop
                return len({b.pod for b in emulator.bindings if b.status == 201}) == 6

            await wait_until(all_bound, timeout=30, interval=0.2, message="every pod bound")
        bound_at = {b.pod: b.time for b in emulator.bindings if b.status == 201}
        # The fast pods were bound after one slow cycle; the slow policy's next cycles
        # (2 s each) came after them.
        assert max(bound_at[f"fast-{i}"] for i in range(3)) < bound_at["slow-1"] - 1.0
        message = await event_message(emulator, namespace, "slow-0", "SlowSchedulingCycle")
        assert message.startswith("the scheduling cycle of policy slow took 2.")


async def test_a_cycle_longer_than_the_renew_deadline_keeps_the_lease(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Leader election on, renew deadline 1.5 s; a Filter taking 0.6 s a node, for real, on
    # the operator's loop, on four nodes: 2.4 s a cycle. The Lease is renewed on a thread
    # of its own, so the leader keeps it and binds what it decided. (Renewed on the loop,
    # every cycle outlived the deadline: the leader lost the Lease, dropped the decision,
    # took the Lease back and decided the same pod again; no pod was ever bound.)
    def slow_filter(self: Any, state: Any, pod: Any, node: Any) -> None:
        time.sleep(0.6)  # the plugin's own synchronous work

    monkeypatch.setattr(testplugins.Raiser, "filter", slow_filter)
    for i in range(4):
        await emulator.create(node(f"n{i}", cpu="8"))
    await emulator.create(policy_obj("slow", multi_point("TestRaiser")))
    for i in range(2):
        await emulator.create(
            our_pod(f"slow-{i}", requests={"cpu": "100m"}, labels={"replica": str(i)}), namespace
        )
    election = dict(
        leader_elect=True,
        lease_name=f"{namespace}-slow",
        lease_duration=2.0,
        renew_deadline=1.5,
        retry_period=0.3,
    )
    caplog.set_level("INFO", logger="policy_scheduler.runtime.leadership")
    async with OperatorThread(kubeconfig, identity="slow-leader", **election):
        for i in range(2):
            await bound_node(emulator, namespace, f"slow-{i}", timeout=20)
        lease = await emulator.get(
            "coordination.k8s.io/v1", "Lease", f"{namespace}-slow", "default"
        )
    assert lease is not None and lease["spec"]["holderIdentity"] == "slow-leader"
    said = [record.getMessage() for record in caplog.records]
    assert "leader election: slow-leader acquired lease default/" + f"{namespace}-slow" in said
    assert not [line for line in said if "lost lease" in line], said
