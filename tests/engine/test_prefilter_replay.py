"""Preemption's what-if replays the pod's PreFilter instead of running it for every
trial (``PreFilterReplay``), only where a trial cannot change the answer: the plugins
whose state comes from the pod alone, and the Skips that taking pods off a node and
putting them back cannot undo. Everything else runs again, as before; a plugin of
one's own always does."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from builders import cluster, node, pod
from policy_scheduler.engine.algorithm import Scheduler
from policy_scheduler.engine.compiler import CompiledPolicy, compile_policy
from policy_scheduler.objects import parse_pod
from policy_scheduler.policy import parse_policy

EXAMPLE = Path(__file__).parents[2] / "examples" / "policies" / "kube-scheduler-v1.34.yaml"
POD_LOCAL = {
    "NodeResourcesFit",
    "NodePorts",
    "NodeAffinity",
    "VolumeBinding",
    "VolumeZone",
    "NodeVolumeLimits",
    "DynamicResources",
}


def v134() -> CompiledPolicy:
    return compile_policy(parse_policy(yaml.safe_load(EXAMPLE.read_text())))


def anti_affinity(**labels: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def replayed(policy: CompiledPolicy, incoming: dict[str, Any], *placed: dict[str, Any]) -> set[str]:
    state = cluster([node("n1")], placed)
    replay = policy.pre_filter_replay(parse_pod(incoming), state)
    return set(replay.answers) if replay is not None else set()


def test_a_plain_pod_replays_every_in_tree_pre_filter() -> None:
    found = replayed(v134(), pod("p"))
    assert found == POD_LOCAL | {"InterPodAffinity", "PodTopologySpread", "VolumeRestrictions"}


def test_a_pod_with_anti_affinity_runs_inter_pod_affinity_again() -> None:
    incoming = pod("p", labels={"app": "web"}, affinity=anti_affinity(app="web"))
    assert replayed(v134(), incoming) == POD_LOCAL | {"PodTopologySpread", "VolumeRestrictions"}


def test_an_existing_pods_anti_affinity_against_the_pod_runs_it_again() -> None:
    # Taking that pod off the node changes the answer: not replayed.
    existing = pod("old", node_name="n1", affinity=anti_affinity(app="web"))
    found = replayed(v134(), pod("p", labels={"app": "web"}), existing)
    assert "InterPodAffinity" not in found
    assert found >= POD_LOCAL


def test_the_plain_path_replays_nothing() -> None:
    policy = v134()
    plain = replace(policy, settings=replace(policy.settings, fast=False))
    assert plain.pre_filter_replay(parse_pod(pod("p")), cluster([node("n1")])) is None
    assert policy.pre_filter_replay(parse_pod(pod("p")), cluster([node("n1")])) is not None


def test_a_plugin_of_ones_own_runs_again_in_every_trial() -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["spec"]["plugins"]["preFilter"]["enabled"].append({"name": "Sample"})
    doc["spec"]["pluginConfig"].append({"name": "Sample", "args": {"requiredNodeLabel": "x"}})
    found = replayed(compile_policy(parse_policy(doc)), pod("p"))
    assert "Sample" not in found
    assert found >= POD_LOCAL


def test_a_nominated_pods_anti_affinity_still_keeps_the_preemptor_off_its_node() -> None:
    """The trials replay InterPodAffinity's Skip, recorded with no pod against the
    preemptor in the cluster; the nominated pods' pass adds one, and must still see it:
    a higher-priority pod nominated to n1 refuses the preemptor's label there, so
    preemption evicts on n2, although n1's victim is the cheaper one."""
    policy = v134()
    state = cluster(
        [node("n1", cpu="2"), node("n2", cpu="2")],
        [
            pod("cheap", node_name="n1", requests={"cpu": "2"}, priority=0),
            pod("dear", node_name="n2", requests={"cpu": "2"}, priority=500),
        ],
    )
    preemptor = parse_pod(pod("p", labels={"app": "web"}, requests={"cpu": "1"}, priority=1000))
    assert "InterPodAffinity" in set(policy.pre_filter_replay(preemptor, state).answers)  # type: ignore[union-attr]
    scheduler = Scheduler()

    async def preempted() -> tuple[str | None, list[str]]:
        decision = await scheduler.schedule(preemptor, state, policy)
        assert decision.node is None
        found = await scheduler.preempt(decision, state, policy)
        assert found is not None
        return found.node, [victim.name for victim in found.victims]

    # Without the nomination n1 wins: its victim has the lower priority.
    assert asyncio.run(preempted()) == ("n1", ["cheap"])
    guard = parse_pod(pod("guard", priority=2000, affinity=anti_affinity(app="web")))
    state.set_nominated(guard, "n1")
    assert asyncio.run(preempted()) == ("n2", ["dear"])
