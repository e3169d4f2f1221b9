"""Scores a node keeps between pods are the scores the maps compute, whatever changed.

LeastRequested and BalancedResourceAllocation keep each node's pair under the pod's
non-zero requests, ImageLocality its score under the pod's image spread
(``NodeInfo.scores`` / ``node_scores``, see ``engine/nodeinfo.py``). Each case scores
the nodes with the batch forms twice (the second time from what the nodes kept), then
changes the cluster and scores again: every column must equal the per-node maps, the
plain definitions, at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from builders import cluster, container, cycle, node, pod
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.nodeinfo import MEMO_LIMIT, NodeInfo
from policy_scheduler.engine.priorities import misc, resources
from policy_scheduler.objects import Pod, parse_node, parse_pod

GI = 1024**3
# Near the int64 bounds the parser keeps: sums of two overflow int64, and the kept scores
# must still be the plain maps' (Python's integers) answer.
HUGE_CPU = "9223372036854775"  # cores: 2^63-1 thousandths, almost
HUGE_MEMORY = str(2**62)

#: (name, per-node map, batch form)
PRIORITIES = [
    ("LeastRequested", resources.least_requested, resources.least_requested_batch),
    (
        "BalancedResourceAllocation",
        resources.balanced_resource_allocation,
        resources.balanced_resource_allocation_batch,
    ),
    ("ImageLocality", misc.image_locality, misc.image_locality_batch),
]

IMAGES = [(["registry.example/app:1"], 300 * 1024 * 1024), (["nginx:1.25"], 60 * 1024 * 1024)]

NODES = [
    node("plain", cpu="4", memory="8Gi", images=IMAGES),
    node("no-cpu", cpu="0", memory="8Gi"),
    node("no-memory", cpu="4", memory="0"),
    node("nothing", cpu="0", memory="0", images=IMAGES[:1]),
    node("tiny", cpu="10m", memory="1Mi"),  # any request overcommits it
    node("exact", cpu="1", memory="1Gi"),  # the 1-cpu pod fills it exactly
    node("huge", cpu=HUGE_CPU, memory=HUGE_MEMORY, images=IMAGES[1:]),
    node("huge-memory", cpu="4", memory=HUGE_MEMORY),
]

PLACED = [
    pod("a", node_name="plain", containers=[container({"cpu": "1", "memory": "2Gi"})]),
    pod("b", node_name="tiny", containers=[container({"cpu": "100m"})]),
    pod("c", node_name="huge", containers=[container({"cpu": "3", "memory": "1Gi"})]),
]


def incoming(name: str, requests: dict[str, str] | None, image: str = "nginx:1.25") -> Pod:
    """A pending pod with one container of ``requests`` (None: no requests at all)."""
    return parse_pod(pod(name, containers=[container(requests or {}, image=image)]))


PODS = [
    incoming("one-cpu", {"cpu": "1", "memory": "1Gi"}, image="registry.example/app:1"),
    incoming("defaults", None),  # 100m and 200Mi count
    incoming("zero", {"cpu": "0", "memory": "0"}),  # an explicit 0 stays 0
    incoming("big", {"cpu": "3500m", "memory": "7Gi"}),
    incoming("huge", {"cpu": HUGE_CPU, "memory": HUGE_MEMORY}, image="other:1"),
]


def columns(
    p: Pod, state: ClusterState, infos: Sequence[NodeInfo]
) -> dict[str, tuple[list[int], list[int]]]:
    """Per priority: (the maps' scores, the batch's scores), each on a fresh cycle."""
    out = {}
    for name, map_fn, batch_fn in PRIORITIES:
        plain = [map_fn(p, info, cycle(p, state)) for info in infos]
        out[name] = (plain, batch_fn(p, infos, cycle(p, state)))
    return out


def assert_alike(state: ClusterState, pods: Sequence[Pod] = PODS) -> None:
    infos = state.ordered_nodes()
    for p in pods:
        for name, (plain, batch) in columns(p, state, infos).items():
            assert batch == plain, f"{name} for pod {p.name}"


def add_pod(state: ClusterState) -> None:
    state.add_pod(
        parse_pod(
            pod("late", node_name="plain", containers=[container({"cpu": "2", "memory": "4Gi"})])
        )
    )


def resize_node(state: ClusterState) -> None:
    state.set_node(parse_node(node("plain", cpu="16", memory="64Gi")))  # and no images


def remove_pod(state: ClusterState) -> None:
    uid = next(iter(state.nodes["plain"].pods))
    state.remove_pod(uid)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(add_pod, id="pod-added-to-a-node"),
        pytest.param(remove_pod, id="pod-removed-from-a-node"),
        pytest.param(resize_node, id="node-resized-and-images-gone"),
    ],
)
def test_kept_scores_follow_every_change(change: Callable[[ClusterState], None]) -> None:
    state = cluster(NODES, PLACED)
    assert_alike(state)
    assert_alike(state)  # the second time, from what the nodes kept
    assert state.nodes["plain"].scores, "the pairs were not kept: nothing is tested"
    change(state)
    assert_alike(state)


def test_the_first_and_the_kept_scores_are_the_plain_ones() -> None:
    state = cluster(NODES, PLACED)
    infos = state.ordered_nodes()
    expected = {p.name: columns(p, state, infos) for p in PODS}
    for p in PODS:  # now served from the nodes
        for name, (plain, batch) in columns(p, state, infos).items():
            assert (plain, batch) == expected[p.name][name]
            assert batch == plain


def test_a_copy_and_its_original_keep_their_own_scores() -> None:
    state = cluster(NODES, PLACED)
    assert_alike(state)
    info = state.nodes["plain"]
    twin = info.copy()
    twin.set_node(parse_node(node("plain", cpu="1", memory="1Gi")))
    p = PODS[0]
    for name, map_fn, batch_fn in PRIORITIES:
        assert batch_fn(p, [info], cycle(p, state)) == [map_fn(p, info, cycle(p, state))], name
        assert batch_fn(p, [twin], cycle(p, state)) == [map_fn(p, twin, cycle(p, state))], name
    # LeastRequested tells them apart: 1 cpu of 4 (one placed) against 1 of 1.
    assert resources.least_requested_batch(p, [info, twin], cycle(p, state)) == [5, 0]


def test_a_node_keeps_a_bounded_number_of_scores() -> None:
    state = cluster([node("n", cpu="64", memory="64Gi")])
    info = state.nodes["n"]
    requests: list[dict[str, Any]] = [{"cpu": f"{100 + i}m"} for i in range(3 * MEMO_LIMIT)]
    for i, request in enumerate(requests):
        p = incoming(f"p{i}", request)
        for _name, map_fn, batch_fn in PRIORITIES:
            assert batch_fn(p, [info], cycle(p, state)) == [map_fn(p, info, cycle(p, state))]
        assert len(info.scores) <= MEMO_LIMIT
        assert len(info.node_scores) <= MEMO_LIMIT
