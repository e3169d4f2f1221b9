"""The Coscheduling plugin point by point: registration, arguments, QueueSort, PreFilter,
PostFilter, Permit and Unreserve, on a world built from objects (the simulation's)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

from builders import node
from coscheduling.gangs import inputs, member, pod_group, policy_object
from policy_scheduler.cli import main
from policy_scheduler.engine.interface import Code, QueuedPodInfo, Status
from policy_scheduler.engine.plugins import PluginProblem, check_args, plugin_class
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.plugins.coscheduling import Coscheduling, CoschedulingArgs
from policy_scheduler.state.world import World

#: Coscheduling keeps nothing in the cycle state: none is needed to call it.
STATE: Any = None


def plugin_in(objects: list[dict[str, Any]], **args: Any) -> tuple[Coscheduling, World]:
    world = inputs(objects).world
    return Coscheduling(CoschedulingArgs(**args), world.handle), world


def parsed(raw: dict[str, Any]) -> Pod:
    return parse_pod(raw)


# -- registration and arguments -----------------------------------------------------------


def test_registered_through_the_entry_point_like_any_installed_plugin() -> None:
    (entry,) = [
        ep
        for ep in importlib.metadata.entry_points(group="policy_scheduler.plugins")
        if ep.name == "Coscheduling"
    ]
    assert entry.value == "policy_scheduler.plugins.coscheduling:Coscheduling"
    assert plugin_class("Coscheduling") is Coscheduling


def test_arguments_default_as_scheduler_plugins_v1() -> None:
    args = check_args(Coscheduling, None, "spec.pluginConfig[0].args")
    assert (args.permitWaitingTimeSeconds, args.podGroupBackoffSeconds) == (60, 0)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"podGroupBackoffSeconds": -1},
            "spec.pluginConfig[0].args.podGroupBackoffSeconds: input should be greater than "
            "or equal to 0, got -1",
            id="negative-backoff",
        ),
        pytest.param(
            {"permitWaitingTimeSeconds": "60"},
            "spec.pluginConfig[0].args.permitWaitingTimeSeconds: input should be a valid "
            "integer, got '60'",
            id="a-string",
        ),
        pytest.param(
            {"kubeConfigPath": "/etc/kubeconfig"},
            "spec.pluginConfig[0].args.kubeConfigPath: extra inputs are not permitted",
            id="unknown-field",
        ),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginProblem) as caught:
        check_args(Coscheduling, raw, "spec.pluginConfig[0].args")
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        pytest.param(
            {"permitWaitingTimeSeconds": 30}, 0, 'SchedulingPolicy "gangs" is valid', id="ok"
        ),
        pytest.param(
            {"podGroupBackoffSeconds": -5},
            1,
            'SchedulingPolicy "gangs": spec.pluginConfig[0].args.podGroupBackoffSeconds: '
            "input should be greater than or equal to 0, got -5",
            id="bad-args",
        ),
    ],
)
def test_validate_judges_a_policy_enabling_it_as_the_docs_show(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: dict[str, int],
    code: int,
    said: str,
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy_object(args)))
    assert main(["validate", str(path)]) == code
    out = capsys.readouterr()
    assert said in (out.out + out.err).splitlines()


# -- QueueSort ------------------------------------------------------------------------------


def info(raw: dict[str, Any], timestamp: float = 0.0) -> QueuedPodInfo:
    return QueuedPodInfo(parsed(raw), timestamp, 0.0)


def test_queue_sort_priority_then_group_age_then_group_name() -> None:
    plugin, _ = plugin_in(
        [
            pod_group("old", 2, created="2024-05-01T00:00:00Z"),
            pod_group("new", 2, created="2024-05-01T00:05:00Z"),
            pod_group("also-old", 2, created="2024-05-01T00:00:00Z"),
        ]
    )
    # Pods of the newer group were created first: the group's age counts, not theirs.
    new_1 = info(member("z-new-1", "new", second=1))
    old_2 = info(member("a-old-2", "old", second=59))
    also_old = info(member("b-also-old", "also-old", second=30))
    plain_early = info(member("plain", None, second=0))
    high = info(member("high", "new", priority=10, second=59))
    ordered = sorted(
        [new_1, old_2, also_old, plain_early, high],
        key=lambda item: _Rank(plugin, item),
    )
    assert [i.pod.name for i in ordered] == [
        "high",  # priority first
        "b-also-old",  # groups of the same age: by the group's namespace/name
        "a-old-2",
        "plain",  # a pod in no group: its own creation time (00:01:00)
        "z-new-1",
    ]


class _Rank:
    def __init__(self, plugin: Coscheduling, item: QueuedPodInfo) -> None:
        self.plugin, self.item = plugin, item

    def __lt__(self, other: _Rank) -> bool:
        return self.plugin.less(self.item, other.item)


# -- PreFilter ------------------------------------------------------------------------------


def test_pre_filter_lets_pods_in_no_group_through() -> None:
    plugin, _ = plugin_in([])
    assert plugin.pre_filter(STATE, parsed(member("plain", None))) is None


def test_pre_filter_refuses_a_group_short_of_members_without_preemption() -> None:
    objects = [pod_group("g", 3), member("g-1", "g"), member("g-2", "g")]
    plugin, _ = plugin_in(objects)
    status = plugin.pre_filter(STATE, parsed(objects[1]))
    assert status == Status.unresolvable(
        "pre-filter pod g-1 cannot find enough sibling pods, current pods number: 2, "
        "minMember of group: 3"
    )


def test_pre_filter_counts_placed_members_too() -> None:
    objects = [
        node("n1"),
        pod_group("g", 3),
        member("g-1", "g", node_name="n1"),
        member("g-2", "g"),
        member("g-3", "g"),
    ]
    plugin, _ = plugin_in(objects)
    assert plugin.pre_filter(STATE, parsed(objects[3])) is None


def test_pre_filter_backs_a_failed_group_off_for_its_seconds() -> None:
    objects = [node("n1", cpu="1"), pod_group("g", 2), member("g-1", "g"), member("g-2", "g")]
    plugin, world = plugin_in(objects, podGroupBackoffSeconds=30)
    clock = [100.0]
    world.handle.clock = lambda: clock[0]
    pod = parsed(objects[2])
    refused = asyncio.run(plugin.post_filter(STATE, pod, {}))
    assert refused == Status.unschedulable(
        "PodGroup default/g gets rejected due to Pod g-1 is unschedulable even after PostFilter"
    )
    assert plugin.pre_filter(STATE, pod) == Status.unresolvable(
        "podGroup default/g failed recently"
    )
    clock[0] = 130.0
    assert plugin.pre_filter(STATE, pod) is None


def test_post_filter_leaves_a_group_with_its_quorum_alone() -> None:
    objects = [
        node("n1"),
        pod_group("g", 2),
        member("g-1", "g", node_name="n1"),
        member("g-2", "g", node_name="n1"),
        member("g-3", "g"),
    ]
    plugin, _ = plugin_in(objects, podGroupBackoffSeconds=30)
    pod = parsed(objects[4])
    assert asyncio.run(plugin.post_filter(STATE, pod, {})) == Status.unschedulable()
    assert plugin.pre_filter(STATE, pod) is None  # not backed off


def test_pre_filter_min_resources_gap_excludes_the_groups_own_pods() -> None:
    objects = [
        node("n1", cpu="2", pods=10),
        pod_group("g", 2, min_resources={"cpu": "2"}),
        member("g-1", "g", cpu="1", node_name="n1"),
        member("g-2", "g", cpu="1"),
        member("other", None, cpu="1", node_name="n1"),
    ]
    plugin, _ = plugin_in(objects)
    # n1 has 0 CPU free, 1 of it held by the group itself: 1 of the 2 asked for.
    assert plugin.pre_filter(STATE, parsed(objects[3])) == Status.unresolvable(
        "resource gap: cpu: 1000m"
    )


# -- Permit and Unreserve ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout", "args", "seconds"),
    [
        pytest.param(None, {}, 60, id="the-default"),
        pytest.param(None, {"permitWaitingTimeSeconds": 5}, 5, id="permitWaitingTimeSeconds"),
        pytest.param(10, {"permitWaitingTimeSeconds": 5}, 10, id="the-groups-scheduleTimeout"),
        pytest.param(0, {"permitWaitingTimeSeconds": 5}, 5, id="a-zero-timeout-is-none"),
        pytest.param(None, {"permitWaitingTimeSeconds": 0}, 60, id="zero-means-60"),
    ],
)
def test_permit_waits_for_the_quorum(
    timeout: int | None, args: dict[str, int], seconds: float
) -> None:
    objects = [node("n1"), pod_group("g", 2, timeout=timeout), member("g-1", "g")]
    plugin, _ = plugin_in(objects, **args)
    status = plugin.permit(STATE, parsed(objects[2]), "n1")
    assert status is not None and status.code is Code.WAIT and status.timeout == seconds


def test_permit_of_the_member_completing_the_quorum_allows_the_waiting_ones() -> None:
    objects = [
        node("n1"),
        pod_group("g", 2),
        member("g-1", "g"),
        member("g-2", "g"),
        member("h-1", "h"),
    ]
    plugin, world = plugin_in(objects)

    async def scenario() -> tuple[Status | None, Status, bool]:
        first, second, stranger = (parsed(o) for o in objects[2:])
        world.cache.assume(first, "n1")
        waiting = world.handle.waiting.add(first, "n1", {"Coscheduling": 60})
        other = world.handle.waiting.add(stranger, "n1", {"Coscheduling": 60})
        world.cache.assume(second, "n1")
        status = plugin.permit(STATE, second, "n1")
        return status, await waiting.outcome, other.done

    status, allowed, other_done = asyncio.run(scenario())
    assert status is None
    assert allowed.is_success
    assert not other_done  # another group's member still waits


def test_unreserve_rejects_the_groups_waiting_members() -> None:
    objects = [node("n1"), pod_group("g", 3), member("g-1", "g"), member("g-2", "g")]
    plugin, world = plugin_in(objects)

    async def scenario() -> Status:
        first, second = parsed(objects[2]), parsed(objects[3])
        waiting = world.handle.waiting.add(first, "n1", {"Coscheduling": 60})
        plugin.unreserve(STATE, second, "n1")
        return await waiting.outcome

    assert asyncio.run(scenario()) == Status(
        Code.UNSCHEDULABLE, ("rejection in Unreserve",), "Coscheduling"
    )


def test_gang_of_names_the_group_and_counts_placed_members() -> None:
    objects = [
        node("n1"),
        pod_group("g", 3),
        member("g-1", "g", node_name="n1"),
        member("g-2", "g"),
        member("plain", None),
    ]
    plugin, _ = plugin_in(objects)
    gang = plugin.gang_of(parsed(objects[3]))
    assert gang is not None and (gang.key, gang.min_member, gang.placed) == ("default/g", 3, 1)
    assert plugin.gang_of(parsed(objects[4])) is None
    assert plugin.gang_of(parsed(member("lost", "missing"))) is None
