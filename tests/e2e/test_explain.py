"""``policy-scheduler explain POD -n NS``: why a pending pod is pending, read-only.

Run against the emulator (or a real cluster with KUBECONFIG): the cluster is LISTed
with the user's credentials, the pod is decided under the policy that serves its
schedulerName, every node evaluated, and nothing is written (the pod stays pending).
The CLI form is run too, as the docs show it (docs/troubleshooting.md).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s_client

from builders import claim_volume, node, pod, pv, pvc, storage_class
from coscheduling.gangs import SCHEDULER as GANG_SCHEDULER
from coscheduling.gangs import policy_object
from e2e.harness import KubeClient
from e2e.test_gang_scheduling import our_group, our_member
from extender_server import ExtenderServer, keep
from policy_scheduler.cli import main
from policy_scheduler.extending import HttpExtenderClient
from policy_scheduler.runtime.explaining import explain
from policy_scheduler.simulation import InputError

SCHEDULER = "policy-scheduler"
POLICY_API = "policyscheduler.io/v1alpha1"


def pending_pod(name: str, scheduler_name: str = SCHEDULER, **kwargs: Any) -> dict[str, Any]:
    obj: dict[str, Any] = pod(name, **kwargs)
    obj["spec"]["schedulerName"] = scheduler_name
    del obj["metadata"]["uid"]  # the API server assigns it
    del obj["metadata"]["namespace"]  # the URL decides
    return obj


async def small_and_big(emulator: KubeClient, namespace: str) -> tuple[str, str]:
    """Two nodes named after the test's namespace (unique on a shared real cluster)."""
    small, big = f"{namespace}-small", f"{namespace}-big"
    await emulator.create(node(small, cpu="1", memory="2Gi"))
    await emulator.create(node(big, cpu="16", memory="64Gi"))
    return small, big


async def test_explain_names_the_refusing_predicate_and_scores_the_rest(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    small, big = await small_and_big(emulator, namespace)
    await emulator.create(pending_pod("web", requests={"cpu": "2", "memory": "1Gi"}), namespace)

    policy, decision = await explain(api_client, namespace, "web", SCHEDULER)

    assert policy.name == "default"  # the built-in default serves the default name
    assert policy.percentage_of_nodes_to_score == 100  # every node is in the answer
    assert decision.failed[small] == ["Insufficient cpu"]
    assert big in decision.feasible
    assert set(decision.scores[big].priorities) >= {"LeastRequestedPriority"}
    if emulator.is_emulated:
        assert decision.node == big
    # Read-only: the pod is still pending, with no condition written.
    obj = await emulator.get("v1", "Pod", "web", namespace)
    assert obj is not None
    assert not obj["spec"].get("nodeName")
    assert not (obj.get("status") or {}).get("conditions")


async def test_explain_uses_the_policy_that_serves_the_pods_scheduler_name(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    small, big = await small_and_big(emulator, namespace)
    policy_name = f"{namespace}-only-small"
    scheduler_name = f"{namespace}-sched"
    await emulator.create(
        {
            "apiVersion": POLICY_API,
            "kind": "SchedulingPolicy",
            "metadata": {"name": policy_name},
            "spec": {
                "schedulerName": scheduler_name,
                "predicates": [
                    {
                        "name": "SmallOnly",
                        "argument": {"labelsPresence": {"labels": ["small"], "presence": True}},
                    }
                ],
                "priorities": [{"name": "EqualPriority", "weight": 1}],
            },
        }
    )
    await emulator.create(pending_pod("job", scheduler_name=scheduler_name), namespace)

    policy, decision = await explain(api_client, namespace, "job", SCHEDULER)

    assert policy.name == policy_name
    assert decision.node is None
    assert decision.failed[small] == ["node(s) didn't have the requested labels"]
    assert decision.failed[big] == ["node(s) didn't have the requested labels"]
    assert "node(s) didn't have the requested labels." in decision.message
    # What would make it fit: the label, on either node (no node carries a value).
    [labelled] = [hint for hint in decision.hints if hint.change == "label small="]
    assert {small, big} <= set(labelled.nodes)


async def test_explain_leaves_default_scheduler_pods_to_kube_scheduler_unless_allowed(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    """As the operator: a policy serving ``default-scheduler`` counts only when allowed."""
    small, big = await small_and_big(emulator, namespace)
    policy_name = f"{namespace}-takes-default"
    await emulator.create(
        {
            "apiVersion": POLICY_API,
            "kind": "SchedulingPolicy",
            "metadata": {"name": policy_name},
            "spec": {
                "schedulerName": "default-scheduler",
                "predicates": [{"name": "PodFitsResources"}],
                "priorities": [{"name": "EqualPriority", "weight": 1}],
            },
        }
    )
    await emulator.create(
        # Too big for any node: on a real cluster kube-scheduler leaves it pending too.
        pending_pod("kube", scheduler_name="default-scheduler", requests={"cpu": "1000"}),
        namespace,
    )

    with pytest.raises(InputError) as info:
        await explain(api_client, namespace, "kube", SCHEDULER)
    assert str(info.value) == (
        f'pod "{namespace}/kube" asks for schedulerName "default-scheduler", '
        "kube-scheduler's: the operator leaves its pods to kube-scheduler unless run with "
        "--allow-default-scheduler (explain answers as such an operator would when given "
        "--allow-default-scheduler too)"
    )

    policy, decision = await explain(
        api_client, namespace, "kube", SCHEDULER, allow_default_scheduler=True
    )
    assert policy.name == policy_name
    assert decision.failed[small] == decision.failed[big] == ["Insufficient cpu"]


@pytest.mark.parametrize(
    "setup, expected",
    [
        pytest.param("missing", 'pod "{ns}/ghost" not found', id="no-such-pod"),
        pytest.param("bound", 'pod "{ns}/ghost" is already bound to node', id="already-bound"),
        pytest.param(
            "unserved",
            'no accepted SchedulingPolicy serves schedulerName "nobody-serves-this"',
            id="no-policy-serves-it",
        ),
    ],
)
async def test_explain_refuses_what_it_cannot_explain(
    emulator: KubeClient,
    namespace: str,
    api_client: k8s_client.ApiClient,
    setup: str,
    expected: str,
) -> None:
    small, _ = await small_and_big(emulator, namespace)
    if setup == "bound":
        await emulator.create(pending_pod("ghost", node_name=small), namespace)
    elif setup == "unserved":
        await emulator.create(pending_pod("ghost", scheduler_name="nobody-serves-this"), namespace)
    with pytest.raises(InputError) as info:
        await explain(api_client, namespace, "ghost", SCHEDULER)
    assert expected.format(ns=namespace) in str(info.value)


async def test_the_cli_command_prints_the_table(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    small, big = await small_and_big(emulator, namespace)
    await emulator.create(pending_pod("web", requests={"cpu": "2"}), namespace)

    # main() runs its own event loop (asyncio.run), so it needs a thread of its own here.
    code = await asyncio.to_thread(main, ["explain", "web", "-n", namespace])

    out = capsys.readouterr().out
    assert code == 0
    assert f"{namespace}/web -> " in out
    small_row = next(line for line in out.splitlines() if line.split()[:1] == [small])
    assert "Insufficient cpu" in small_row
    assert any(line.split()[:2] == [big, "fits"] for line in out.splitlines()) or any(
        line.split()[:3] == ["*", big, "fits"] for line in out.splitlines()
    )


async def test_the_cli_reports_a_missing_pod_as_a_user_error(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = await asyncio.to_thread(main, ["explain", "ghost", "-n", namespace])
    assert code == 1
    assert f'error: pod "{namespace}/ghost" not found' in capsys.readouterr().err


async def test_explain_says_what_request_would_fit(
    emulator: KubeClient,
    namespace: str,
    api_client: k8s_client.ApiClient,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    small, big = await small_and_big(emulator, namespace)
    await emulator.create(pending_pod("huge", requests={"cpu": "32"}), namespace)

    _, decision = await explain(api_client, namespace, "huge", SCHEDULER)

    assert decision.node is None
    fits_big = {hint.change for hint in decision.hints if big in hint.nodes}
    fits_small = {hint.change for hint in decision.hints if small in hint.nodes}
    assert "cpu request <= 16" in fits_big and "cpu request <= 16" not in fits_small
    assert "cpu request <= 1" in fits_small and "cpu request <= 1" in fits_big

    code = await asyncio.to_thread(main, ["explain", "huge", "-n", namespace])
    out = capsys.readouterr().out
    assert code == 0
    assert any(line.startswith("  hint: cpu request <= ") for line in out.splitlines())


async def test_explain_says_whom_preemption_would_evict_and_evicts_nobody(
    emulator: KubeClient, namespace: str, api_client: k8s_client.ApiClient
) -> None:
    full = f"{namespace}-full"
    await emulator.create(node(full, cpu="2", memory="4Gi"))
    victim = pending_pod("batch", scheduler_name="default-scheduler", requests={"cpu": "1500m"})
    victim["spec"].update(nodeName=full, priority=0)
    await emulator.create(victim, namespace)
    await emulator.create(pending_pod("urgent", requests={"cpu": "1"}, priority=1000), namespace)
    if not emulator.is_emulated:
        pytest.skip("other nodes of a real cluster may have room or victims of their own")

    _, decision = await explain(api_client, namespace, "urgent", SCHEDULER)

    assert decision.node is None and decision.preemption is not None
    assert decision.preemption.node == full
    assert [v.key for v in decision.preemption.victims] == [f"{namespace}/batch"]
    # Read-only: the victim is still there, the pod has no nomination.
    assert await emulator.get("v1", "Pod", "batch", namespace) is not None
    urgent = await emulator.get("v1", "Pod", "urgent", namespace)
    assert urgent is not None and "nominatedNodeName" not in (urgent.get("status") or {})


async def test_explain_asks_the_policys_extenders_unless_told_not_to(
    emulator: KubeClient,
    namespace: str,
    api_client: k8s_client.ApiClient,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, big = await small_and_big(emulator, namespace)
    scheduler_name = f"{namespace}-gpu"
    with ExtenderServer(
        {"filter": keep(lambda n: "GPU 0 is faulty" if n == big else None)}
    ) as extender:
        await emulator.create(
            {
                "apiVersion": POLICY_API,
                "kind": "SchedulingPolicy",
                "metadata": {"name": f"{namespace}-gpu"},
                "spec": {
                    "schedulerName": scheduler_name,
                    "priorities": [],
                    "extenders": [{"urlPrefix": extender.url, "filterVerb": "filter"}],
                },
            }
        )
        await emulator.create(pending_pod("train", scheduler_name=scheduler_name), namespace)

        async with HttpExtenderClient() as client:
            _, decision = await explain(api_client, namespace, "train", SCHEDULER, extenders=client)
        # The extender refused the node the predicates let through: it is not feasible.
        assert decision.failed[big] == ["GPU 0 is faulty"]
        assert big not in decision.feasible
        assert {r.pod_name for r in extender.received} == {"train"}

        code = await asyncio.to_thread(main, ["explain", "train", "-n", namespace])
        out = capsys.readouterr().out
        assert code == 0
        big_row = next(line for line in out.splitlines() if big in line.split())
        assert "GPU 0 is faulty" in big_row
        asked = len(extender.received)

        code = await asyncio.to_thread(
            main, ["explain", "train", "-n", namespace, "--skip-extenders"]
        )
        out, err = capsys.readouterr()
        assert code == 0
        assert len(extender.received) == asked  # not asked this time
        assert "note: --skip-extenders: policy" in err and "1 extender(s)" in err
        assert "GPU 0 is faulty" not in out


async def test_a_pod_waiting_for_its_volumes_is_said_to_be(
    emulator: KubeClient,
    namespace: str,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # What the operator leaves while the PV controller and the provisioner work: a PV
    # reserved for one claim (claimRef), the other claim annotated with the chosen node.
    small, _ = await small_and_big(emulator, namespace)
    local, fast = f"{namespace}-local", f"{namespace}-fast"
    await emulator.create(storage_class(local, mode="WaitForFirstConsumer"))
    await emulator.create(storage_class(fast, "csi.example.com", mode="WaitForFirstConsumer"))
    volume = f"{namespace}-pv"
    await emulator.create(
        pv(
            volume,
            storage_class=local,
            capacity="10Gi",
            access_modes=["ReadWriteOnce"],
            affinity={"kubernetes.io/hostname": [small]},
            claim=(namespace, "data"),
        )
    )
    for name, class_name, written in (
        ("data", local, None),
        ("cache", fast, {"volume.kubernetes.io/selected-node": small}),
    ):
        claim = pvc(
            name,
            namespace=namespace,
            storage_class=class_name,
            request="1Gi",
            access_modes=["ReadWriteOnce"],
            annotations=written,
        )
        await emulator.create(claim, namespace)
    await emulator.create(
        pending_pod("db", volumes=[claim_volume("data"), claim_volume("cache")]), namespace
    )

    code = await asyncio.to_thread(main, ["explain", "db", "-n", namespace])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(
        f'pod "{namespace}/db" was scheduled and is waiting for its volumes, not for a node: '
        f'claim "data": PV "{volume}" is reserved for it (spec.claimRef), the PV controller '
        'has yet to bind them; claim "cache": to be provisioned for node '
        f'"{small}" (volume.kubernetes.io/selected-node), the provisioner has yet to create '
        "its volume. The scheduler binds the pod once every claim is bound"
    )
    assert "NODE" not in out  # no table: the pod is not waiting for a node


async def test_explain_of_a_gang_member_runs_the_gangs_plan(
    emulator: KubeClient,
    namespace: str,
    api_client: k8s_client.ApiClient,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await emulator.create(node(f"{namespace}-n", cpu="4", memory="8Gi"))
    await emulator.create(policy_object())
    await emulator.create(our_group("big", 3), namespace)
    for i in (1, 2, 3):
        await emulator.create(our_member(f"big-{i}", "big", cpu="2"), namespace)
    await emulator.create(our_group("short", 3), namespace)
    for i in (1, 2):
        await emulator.create(our_member(f"short-{i}", "short", cpu="100m"), namespace)

    # All three members exist; two fit: the group's reason is CPU, not missing members.
    _, decision = await explain(api_client, namespace, "big-1", GANG_SCHEDULER)
    assert decision.node is None
    assert decision.message.startswith(
        f'Coscheduling: pod group "{namespace}/big": 2 of 3 members would fit; none is placed'
    )
    assert "Insufficient cpu" in decision.message
    assert "current pods number" not in decision.message
    assert decision.gang is not None and decision.gang.min_member == 3

    # Two of three exist: it says it waits for members.
    _, decision = await explain(api_client, namespace, "short-1", GANG_SCHEDULER)
    assert decision.node is None
    assert decision.message.startswith(
        f'Coscheduling: pod group "{namespace}/short": waiting for members, 2 of 3 members '
        "exist; none is placed"
    )
    # The CLI prints the group's answer.
    code = await asyncio.to_thread(main, ["explain", "big-1", "-n", namespace])
    out = capsys.readouterr().out
    assert code == 0
    assert f'pod group "{namespace}/big": 2 of 3 members would fit; none is placed' in out
    assert "gang" in out and "minMember 3" in out
    # Nothing was written: every member is still pending.
    for name in ("big-1", "big-2", "big-3", "short-1"):
        assert not (await emulator.get("v1", "Pod", name, namespace))["spec"].get("nodeName")
