"""scheduler-plugins' Coscheduling integration scenarios, through ``simulate``.

Ported from scheduler-plugins v0.30's ``test/integration/coscheduling_test.go``
(TestCoschedulingPlugin: one node with 300 bytes of memory and room for 32 pods;
TestPodgroupBackoff: four nodes of 6, 2, 2 and 2 CPUs), each case on a fresh cluster.
Upstream waits until the expected pods are bound and asserts nothing about the others;
here, decisions being exact, every pod's outcome is asserted: the expected pods placed,
every other one not, and no group partly placed. Then the cases the planner adds: two
gangs that fit alone but not together, a group short of members, minResources.
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import node
from coscheduling.gangs import member, placements, pod_group

MID, HIGH = 100, 1000


def memory_node() -> dict[str, Any]:
    return node("fake-node", cpu="4", memory="300", pods=32)


def members(prefix: str, group: str, count: int, memory: str, priority: int = MID) -> list[Any]:
    return [
        member(f"{prefix}-{i}", group, memory=memory, priority=priority)
        for i in range(1, count + 1)
    ]


def interleave(*lists: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i in range(max(len(items) for items in lists)):
        out += [items[i] for items in lists if i < len(items)]
    return out


CASES = [
    pytest.param(
        [pod_group("pg1-1", 3), pod_group("pg1-2", 4)],
        members("t1-p1", "pg1-1", 3, "50") + members("t1-p2", "pg1-2", 4, "100"),
        {"t1-p1-1", "t1-p1-2", "t1-p1-3"},
        id="equal-priority-sequentially-pg1-meets-min-pg2-does-not",
    ),
    pytest.param(
        [pod_group("pg2-1", 3), pod_group("pg2-2", 4)],
        interleave(members("t2-p1", "pg2-1", 3, "50"), members("t2-p2", "pg2-2", 4, "100")),
        {"t2-p1-1", "t2-p1-2", "t2-p1-3"},
        id="equal-priority-interleaved-pg1-meets-min-pg2-does-not",
    ),
    pytest.param(
        [pod_group("pg3-1", 4)],
        interleave(
            members("t3-p1", "pg3-1", 3, "50"),
            [member("t3-p2", None, memory="100", priority=MID)],
            [member("t3-p3", None, memory="100", priority=MID)],
        ),
        {"t3-p2", "t3-p3"},
        id="equal-priority-group-short-of-min-and-regular-pods",
    ),
    pytest.param(
        [pod_group("pg4-1", 3), pod_group("pg4-2", 3)],
        members("t4-p1", "pg4-1", 3, "100") + members("t4-p2", "pg4-2", 3, "50", HIGH),
        {"t4-p2-1", "t4-p2-2", "t4-p2-3"},
        id="different-priority-sequentially-the-higher-group-first",
    ),
    pytest.param(
        [pod_group("pg5-1", 3), pod_group("pg5-2", 3)],
        interleave(members("t5-p1", "pg5-1", 3, "100"), members("t5-p2", "pg5-2", 3, "50", HIGH)),
        {"t5-p2-1", "t5-p2-2", "t5-p2-3"},
        id="different-priority-interleaved-the-higher-group-first",
    ),
    pytest.param(
        [pod_group("pg6-1", 3)],
        interleave(
            members("t6-p1", "pg6-1", 3, "50"),
            [member(f"t6-p{i}", None, memory="100", priority=HIGH) for i in (2, 3, 4)],
        ),
        {"t6-p2", "t6-p3", "t6-p4"},
        id="different-priority-higher-regular-pods-first",
    ),
    pytest.param(
        [pod_group("pg7-1", 3), pod_group("pg7-2", 4), pod_group("pg7-3", 4)],
        interleave(
            members("t7-p1", "pg7-1", 3, "50"),
            members("t7-p2", "pg7-2", 4, "100"),
            members("t7-p3", "pg7-3", 4, "100"),
        ),
        {"t7-p1-1", "t7-p1-2", "t7-p1-3"},
        id="equal-priority-three-groups-one-meets-min",
    ),
    pytest.param(
        [
            pod_group("pg8-1", 3, min_resources={"memory": "150"}),
            pod_group("pg8-2", 4, min_resources={"memory": "400"}),
            pod_group("pg8-3", 4, min_resources={"memory": "400"}),
        ],
        interleave(
            members("t8-p1", "pg8-1", 3, "50"),
            members("t8-p2", "pg8-2", 4, "100"),
            members("t8-p3", "pg8-3", 4, "100"),
        ),
        {"t8-p1-1", "t8-p1-2", "t8-p1-3"},
        id="equal-priority-three-groups-with-min-resources",
    ),
    pytest.param(
        [
            pod_group("pg9-1", 3, min_resources={"memory": "150"}),
            pod_group("pg9-2", 4, min_resources={"memory": "400"}),
        ],
        interleave(members("t9-p1", "pg9-1", 3, "50"), members("t9-p2", "pg9-2", 4, "100")),
        {"t9-p1-1", "t9-p1-2", "t9-p1-3"},
        id="equal-priority-two-groups-with-min-resources",
    ),
]


@pytest.mark.parametrize(("groups", "pods", "placed"), CASES)
def test_coscheduling_plugin(groups: list[Any], pods: list[Any], placed: set[str]) -> None:
    got = placements([memory_node(), *groups, *pods], {"permitWaitingTimeSeconds": 3})
    assert {name for name, (node_name, _) in got.items() if node_name is not None} == placed
    assert set(got) == {p["metadata"]["name"] for p in pods}


def test_pod_group_backoff() -> None:
    """TestPodgroupBackoff: a group of six 4-CPU pods cannot fit (one 6-CPU node, three of
    2); a one-pod group behind it is placed."""
    nodes = [node("fake-node-1", cpu="6", pods=32)] + [
        node(f"fake-node-{i}", cpu="2", pods=32) for i in (2, 3, 4)
    ]
    pods = [member(f"t1-p1-{i}", "pg1-1", cpu="4", priority=MID) for i in range(1, 7)]
    pods.append(member("t1-p2-1", "pg2-1", cpu="2", priority=MID))
    got = placements(
        [*nodes, pod_group("pg1-1", 6), pod_group("pg2-1", 1), *pods],
        {"permitWaitingTimeSeconds": 3, "podGroupBackoffSeconds": 1},
    )
    assert [name for name, (where, _) in got.items() if where is not None] == ["t1-p2-1"]
    assert got["t1-p1-1"][1].startswith(
        'Coscheduling: pod group "default/pg1-1": 1 of 6 members would fit; none is placed'
    )


# -- what the planner adds ----------------------------------------------------------------


def test_two_gangs_that_fit_alone_but_not_together_do_not_deadlock() -> None:
    # Room for four 100-byte pods; two gangs of three, their members interleaved. The
    # first (older PodGroup) is placed whole; the second holds nothing, so the plain pod
    # after them gets the fourth slot.
    node_obj = node("n1", cpu="4", memory="400", pods=32)
    pods = interleave(members("a", "gang-a", 3, "100"), members("b", "gang-b", 3, "100"))
    pods.append(member("after", None, memory="100", priority=MID, second=9))
    got = placements(
        [
            node_obj,
            pod_group("gang-a", 3, created="2024-05-01T00:00:00Z"),
            pod_group("gang-b", 3, created="2024-05-01T00:00:01Z"),
            *pods,
        ]
    )
    assert {name: where for name, (where, _) in got.items()} == {
        "a-1": "n1",
        "a-2": "n1",
        "a-3": "n1",
        "b-1": None,
        "b-2": None,
        "b-3": None,
        "after": "n1",
    }
    assert got["b-1"][1] == (
        'Coscheduling: pod group "default/gang-b": 1 of 3 members would fit; none is placed '
        "(default/b-2: 0/1 nodes are available: 1 Insufficient memory.)"
    )


def test_a_group_short_of_members_holds_nothing_and_says_so() -> None:
    got = placements([memory_node(), pod_group("short", 3), *members("s", "short", 2, "50")])
    assert got["s-1"] == (
        None,
        'Coscheduling: pod group "default/short": waiting for members, 2 of 3 members exist; '
        "none is placed "
        "(default/s-1: 0/1 nodes are available: pre-filter pod s-1 cannot find enough "
        "sibling pods, current pods number: 2, minMember of group: 3.)",
    )
    assert got["s-2"][0] is None


def test_a_member_whose_pod_group_is_missing_is_not_placed() -> None:
    got = placements([memory_node(), member("lost", "nowhere", memory="50")])
    assert got["lost"] == (
        None,
        "0/1 nodes are available: PodGroup default/nowhere not found.",
    )


def test_min_resources_counts_what_the_cluster_has_free() -> None:
    # 300 bytes: the group asks for 250 of them free; a plain pod already uses 100.
    got = placements(
        [
            memory_node(),
            member("busy", None, memory="100", node_name="fake-node"),
            pod_group("big", 2, min_resources={"memory": "250"}),
            *members("m", "big", 2, "50"),
        ]
    )
    assert got["m-1"][0] is None
    assert "resource gap: memory: 50" in got["m-1"][1]


def test_more_members_than_min_member_are_placed_as_far_as_they_fit() -> None:
    # minMember 2 of 4 members; room for three: three are placed, the fourth waits.
    got = placements([memory_node(), pod_group("elastic", 2), *members("e", "elastic", 4, "100")])
    assert [where for where, _ in (got[f"e-{i}"] for i in range(1, 5))] == [
        "fake-node",
        "fake-node",
        "fake-node",
        None,
    ]
    assert got["e-4"][1] == "0/1 nodes are available: 1 Insufficient memory."


def test_members_already_placed_count_towards_the_quorum() -> None:
    # Two members bound already; the third completes minMember 3 alone.
    got = placements(
        [
            memory_node(),
            pod_group("half", 3),
            member("h-1", "half", memory="50", node_name="fake-node"),
            member("h-2", "half", memory="50", node_name="fake-node"),
            member("h-3", "half", memory="50"),
        ]
    )
    assert got == {"h-3": ("fake-node", "")}
