"""Coscheduling's PostFilter at its 10% boundary (scheduler-plugins v0.30): when the
members still missing are at most a tenth of minMember, the group is not rejected (later
members may close the gap) and not backed off; above that, it is, and its backoff starts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import node
from coscheduling.gangs import inputs, member, pod_group
from policy_scheduler.engine.interface import Status
from policy_scheduler.objects import parse_pod
from policy_scheduler.plugins.coscheduling import Coscheduling, CoschedulingArgs

STATE: Any = None


@pytest.mark.parametrize(
    ("min_member", "placed", "rejected"),
    [
        pytest.param(10, 9, False, id="10pct-missing-left-alone"),
        pytest.param(10, 8, True, id="20pct-missing-rejected"),
        pytest.param(20, 18, False, id="exactly-10pct-left-alone"),
        pytest.param(20, 17, True, id="15pct-missing-rejected"),
        pytest.param(5, 4, True, id="one-of-five-missing-is-20pct"),
    ],
)
def test_the_group_is_rejected_only_when_more_than_a_tenth_is_missing(
    min_member: int, placed: int, rejected: bool
) -> None:
    objects: list[dict[str, Any]] = [node("n1", cpu="64", pods="200"), pod_group("g", min_member)]
    objects += [member(f"g-{i}", "g", node_name="n1") for i in range(placed)]
    objects += [member(f"g-{i}", "g") for i in range(placed, min_member)]
    world = inputs(objects).world
    plugin = Coscheduling(CoschedulingArgs(podGroupBackoffSeconds=30), world.handle)
    pod = parse_pod(objects[-1])
    status = asyncio.run(plugin.post_filter(STATE, pod, {}))
    if rejected:
        assert status == Status.unschedulable(
            f"PodGroup default/g gets rejected due to Pod {pod.name} "
            "is unschedulable even after PostFilter"
        )
        assert plugin.pre_filter(STATE, pod) == Status.unresolvable(
            "podGroup default/g failed recently"
        )
    else:
        assert status == Status.unschedulable()
        assert plugin.pre_filter(STATE, pod) is None
