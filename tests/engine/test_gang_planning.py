"""Gangs planned as a whole (deciding.py): a GangPlugin puts pods in groups; a group's
pending members are decided together, and kept only if at least ``min_member`` fit.

A small test plugin plays Coscheduling's part: group and quorum from labels, Permit
waiting until the quorum is placed and then allowing the group. It is made known to the
policy model and the compiler as a built-in (the registry), not through an installed
package: discovery by entry point is tested with the example plugin (tests/plugins).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from builders import node, pod
from policy_scheduler import names
from policy_scheduler.engine import plugins
from policy_scheduler.engine.functions import CycleState
from policy_scheduler.engine.interface import Gang, GangPlugin, PermitPlugin, Status
from policy_scheduler.objects import Pod
from policy_scheduler.policy import parse_policy
from policy_scheduler.simulation import inputs_from_objects, simulate

GROUP = "example.com/group"
QUORUM = "example.com/quorum"


class Quorum(GangPlugin, PermitPlugin):
    """Pods labelled with a group bind once ``quorum`` of them are placed."""

    name = "TestQuorum"

    def _members_placed(self, group: str) -> int:
        return sum(1 for p in self.handle.snapshot().pods() if p.labels.get(GROUP) == group)

    def gang_of(self, pod: Pod) -> Gang | None:
        group = pod.labels.get(GROUP)
        if group is None:
            return None
        key = f"{pod.namespace}/{group}"
        return Gang(key, int(pod.labels[QUORUM]), self._members_placed(group))

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        group = pod.labels.get(GROUP)
        if group is None:
            return None
        if self._members_placed(group) < int(pod.labels[QUORUM]):
            return Status.wait(60)
        for waiting in self.handle.waiting_pods():
            if waiting.pod.labels.get(GROUP) == group:
                waiting.allow(self.name)
        return None


@pytest.fixture(autouse=True)
def quorum_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(plugins.BUILTIN_PLUGINS, Quorum.name, Quorum)
    monkeypatch.setattr(names, "is_plugin_name", lambda name: True)
    yield


POLICY = parse_policy(
    {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "gangs"},
        "spec": {"plugins": {"permit": {"enabled": [{"name": "TestQuorum"}]}}},
    }
)


def member(name: str, group: str, quorum: int, second: int, cpu: str = "1") -> dict[str, Any]:
    raw = pod(name, labels={GROUP: group, QUORUM: str(quorum)}, requests={"cpu": cpu})
    raw["metadata"]["creationTimestamp"] = f"2024-05-01T00:00:{second:02d}Z"
    raw["spec"]["schedulerName"] = "policy-scheduler"
    return raw


def plain(name: str, second: int, cpu: str = "1") -> dict[str, Any]:
    raw = pod(name, requests={"cpu": cpu})
    raw["metadata"]["creationTimestamp"] = f"2024-05-01T00:00:{second:02d}Z"
    raw["spec"]["schedulerName"] = "policy-scheduler"
    return raw


def outcome(objects: list[dict[str, Any]]) -> dict[str, tuple[str | None, str]]:
    inputs = inputs_from_objects([(o, "test") for o in objects], policy=POLICY)
    decisions = asyncio.run(simulate(inputs, explain=False))
    return {d.pod.name: (d.node, d.message) for d in decisions}


def test_a_gang_that_fits_is_placed_whole() -> None:
    got = outcome(
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            member("a-0", "a", 3, 1),
            member("a-1", "a", 3, 2),
            member("a-2", "a", 3, 3),
        ]
    )
    assert all(placed is not None for placed, _ in got.values()), got


def test_two_gangs_that_fit_alone_but_not_together_do_not_deadlock() -> None:
    # Room for four one-CPU pods; two gangs of three. Planned one at a time, gang "a"
    # (first in the queue) takes three slots, gang "b" cannot have three and holds none:
    # the fourth slot is free for the pod after them.
    got = outcome(
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            member("a-0", "a", 3, 1),
            member("b-0", "b", 3, 2),
            member("a-1", "a", 3, 3),
            member("b-1", "b", 3, 4),
            member("a-2", "a", 3, 5),
            member("b-2", "b", 3, 6),
            plain("after", 7),
        ]
    )
    assert [got[f"a-{i}"][0] is not None for i in range(3)] == [True, True, True]
    assert [got[f"b-{i}"][0] for i in range(3)] == [None, None, None]
    assert got["b-0"][1].startswith(
        'TestQuorum: pod group "default/b": 1 of 3 members would fit; none is placed'
    )
    assert got["after"][0] is not None  # gang "b" holds nothing


def test_a_gang_short_of_members_holds_nothing() -> None:
    got = outcome(
        [node("n1", cpu="4"), member("c-0", "c", 3, 1), member("c-1", "c", 3, 2), plain("p", 3)]
    )
    assert got["c-0"] == (
        None,
        'TestQuorum: pod group "default/c": 2 of 3 members would fit; none is placed',
    )
    assert got["c-1"][0] is None
    assert got["p"][0] is not None


def test_the_reason_names_the_member_that_did_not_fit() -> None:
    got = outcome(
        [
            node("n1", cpu="2"),
            member("d-0", "d", 2, 1),
            member("d-1", "d", 2, 2, cpu="8"),
        ]
    )
    message = got["d-0"][1]
    assert "1 of 2 members would fit; none is placed" in message
    assert "default/d-1: 0/1 nodes are available: 1 Insufficient cpu." in message
