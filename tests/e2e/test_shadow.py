"""A Shadow policy on live traffic: the real operator, over HTTP, against the emulator.

The cluster is built so the two policies provably disagree on a known number of pods:
the active policy prefers nodes labelled disk=ssd, the shadow prefers the others and
does not check taints. The test also decides every pod with the engine itself, under
each policy, and expects the shadow's status to count exactly what that comparison
finds. Then the shadow is promoted (``mode: Active``, the old policy demoted to
``Shadow``) and the next decisions are the new policy's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from builders import cluster, node, pod
from e2e.harness import KubeClient
from e2e.operator_harness import OperatorThread
from e2e.test_operator import POLICY_API, SCHEDULER, bound_node, our_pod, policy_obj, unschedulable
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import parse_policy
from policy_scheduler.state.shadows import Comparison

NODES = [
    node("ssd", cpu="8", memory="16Gi", labels={"disk": "ssd", "tier": "fast"}),
    node("hdd", cpu="8", memory="16Gi"),
    node(
        "gpu",
        cpu="8",
        memory="16Gi",
        # Labelled disk too, so the shadow (which prefers nodes without) never ties it
        # with "hdd": a round-robin between the two would depend on the order of pods.
        labels={"pool": "gpu", "disk": "ssd"},
        taints=[{"key": "gpu", "effect": "NoSchedule"}],
    ),
]
#: name -> pod spec: four go anywhere, two need node "ssd", one asks for the tainted pool
#: without tolerating it (the active policy places it nowhere, the shadow on "gpu").
PODS: dict[str, dict[str, Any]] = {
    **{f"web-{i}": {} for i in range(4)},
    **{f"db-{i}": {"node_selector": {"tier": "fast"}} for i in range(2)},
    "trainer": {"node_selector": {"pool": "gpu"}},
}


def disk_spec(presence: bool, mode: str, **spec: Any) -> dict[str, Any]:
    preference = {"labelPreference": {"label": "disk", "presence": presence}}
    return {
        "schedulerName": SCHEDULER,
        "mode": mode,
        "priorities": [{"name": "PreferDisk", "weight": 2, "argument": preference}],
        **spec,
    }


ACTIVE = disk_spec(True, "Active")
#: Node selectors and resources only: no taint check.
SHADOW = disk_spec(
    False, "Shadow", predicates=[{"name": "PodFitsResources"}, {"name": "MatchNodeSelector"}]
)


async def expected_shadow_status() -> dict[str, Any]:
    """What the shadow's status must count, from the engine's own decisions."""
    policies = [
        compile_policy(parse_policy(policy_obj(name, spec)))
        for name, spec in (("active", ACTIVE), ("trial", SHADOW))
    ]
    counts: Counter[str] = Counter()
    differences = []
    for name, spec in PODS.items():
        subject = parse_pod(pod(name, requests={"cpu": "100m"}, **spec))
        # Plenty of room everywhere: each pod's decisions do not depend on the others'.
        # Not explaining, as the operator: a lone feasible node is taken unscored.
        active, shadow = [
            await Scheduler(explain=False).schedule(subject, cluster(NODES), policy)
            for policy in policies
        ]
        comparison = Comparison(f"NS/{name}", active.node, shadow.node, active.total, shadow.total)
        counts[comparison.result] += 1
        if comparison.differs:
            differences.append(comparison.to_json())
    return {"compared": len(PODS), **counts, "differences": differences}


def shadow_of(obj: dict[str, Any] | None) -> dict[str, Any]:
    return dict(((obj or {}).get("status") or {}).get("shadow") or {})


def condition(obj: dict[str, Any] | None) -> tuple[str, str]:
    [accepted] = [
        c
        for c in ((obj or {}).get("status") or {}).get("conditions", [])
        if c["type"] == "Accepted"
    ]
    return accepted["status"], accepted["reason"]


async def test_a_shadow_policy_is_compared_on_live_traffic_then_promoted(
    emulator: KubeClient, namespace: str, kubeconfig: Path
) -> None:
    expected = await expected_shadow_status()
    # The cluster was built for these numbers; the engine agrees.
    assert (expected["compared"], expected["differentNode"], expected["sameNode"]) == (7, 4, 2)
    assert expected["onlyShadowPlaced"] == 1

    for obj in NODES:
        await emulator.create(obj)
    await emulator.create(policy_obj("active", ACTIVE))
    await emulator.create(policy_obj("trial", SHADOW))
    for name, spec in PODS.items():
        await emulator.create(our_pod(name, requests={"cpu": "100m"}, **spec), namespace)

    async with OperatorThread(kubeconfig):
        # Bound where the active policy says, and only by it.
        for name in PODS:
            if name != "trainer":
                assert await bound_node(emulator, namespace, name) == "ssd"
        await unschedulable(emulator, namespace, "trainer")
        if emulator.is_emulated:
            assert Counter(b.pod for b in emulator.bindings) == Counter(
                name for name in PODS if name != "trainer"
            )

        trial = await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "trial",
            None,
            lambda o: shadow_of(o).get("compared") == expected["compared"],
            timeout=20,
        )
        status = shadow_of(trial)
        assert condition(trial) == ("True", "Shadow")
        assert {k: v for k, v in status.items() if k != "recentDifferences"} == {
            "compared": 7,
            "sameNode": expected["sameNode"],
            "differentNode": expected["differentNode"],
            "onlyActivePlaced": expected.get("onlyActivePlaced", 0),
            "onlyShadowPlaced": expected["onlyShadowPlaced"],
            "neitherPlaced": expected.get("neitherPlaced", 0),
        }
        differences = [
            dict(d, pod=d["pod"].replace(f"{namespace}/", "NS/"))
            for d in status["recentDifferences"]
        ]
        assert sorted(differences, key=lambda d: d["pod"]) == sorted(
            expected["differences"], key=lambda d: d["pod"]
        )
        active = await emulator.get(POLICY_API, "SchedulingPolicy", "active")
        assert "shadow" not in (active or {}).get("status", {})

        # Promote: the new policy first (refused while the older one is active)...
        await emulator.patch(POLICY_API, "SchedulingPolicy", "trial", {"spec": {"mode": "Active"}})
        await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "trial",
            None,
            lambda o: condition(o) == ("False", "SchedulerNameConflict"),
        )
        # ...then the old one steps down to Shadow: the name changes hands at once.
        await emulator.patch(POLICY_API, "SchedulingPolicy", "active", {"spec": {"mode": "Shadow"}})
        promoted = await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "trial",
            None,
            lambda o: condition(o) == ("True", "Accepted"),
        )
        assert "shadow" not in (promoted or {}).get("status", {})
        # The next decisions are the new policy's: no ssd preference, no taint check.
        await emulator.create(our_pod("after", requests={"cpu": "100m"}), namespace)
        assert await bound_node(emulator, namespace, "after") == "hdd"
        assert await bound_node(emulator, namespace, "trainer", timeout=15) == "gpu"
        # And the old policy now reports how it compares with the new one.
        demoted = await emulator.wait_for(
            POLICY_API,
            "SchedulingPolicy",
            "active",
            None,
            lambda o: shadow_of(o).get("compared") == 2,
            timeout=20,
        )
        assert condition(demoted) == ("True", "Shadow")
        status = shadow_of(demoted)
        assert (status["differentNode"], status["onlyActivePlaced"]) == (1, 1)
        assert {d["pod"]: d.get("shadowNode") for d in status["recentDifferences"]} == {
            f"{namespace}/after": "ssd",
            f"{namespace}/trainer": None,
        }
