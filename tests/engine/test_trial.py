"""``ClusterState.trial``: pods off or on a node for a what-if check, undone exactly.

Preemption and the nominated pods' first pass change the cluster itself (no copy): while
the trial lasts, every index follows the change; afterwards the cluster is what it was,
pod order and generations included, whatever happened inside.
"""

from __future__ import annotations

import pytest

from builders import cluster, cluster_picture, node, pod
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.objects import parse_pod
from policy_scheduler.selectors import set_selector

ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
        ]
    }
}


def world() -> ClusterState:
    return cluster(
        [node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"})],
        [
            pod("guard", node_name="a", labels={"app": "guard"}, affinity=ANTI),
            pod("one", node_name="a", requests={"cpu": "1"}, host_ports=[80]),
            pod("two", node_name="a", requests={"cpu": "500m"}, labels={"app": "db"}),
            pod("three", node_name="b", requests={"cpu": "1"}),
        ],
    )


def uid_of(state: ClusterState, name: str) -> str:
    return next(p.uid for p in state.pods.values() if p.name == name)


def test_taking_pods_off_updates_every_index_then_all_comes_back() -> None:
    state = world()
    before = cluster_picture(state)
    one = state.pods[uid_of(state, "one")]
    db = set_selector({"app": "db"})
    assert state.candidates(["default"], [db]).size == 1
    with state.trial("a") as trial:
        for name in ("guard", "one", "two"):
            trial.remove(uid_of(state, name))
        info = state.nodes["a"]
        assert (info.requested_cpu, dict(info.used_ports), info.pods) == (0, {}, {})
        assert state.required_anti_affinity_terms == {}
        assert state.candidates(["default"], [db]).size == 0
        # A reprieve: "one" goes back (to the end of the node's pods), the others stay off.
        trial.add(one)
        assert (info.requested_cpu, list(info.pods)) == (1000, [one.uid])
    assert cluster_picture(state) == before
    assert list(state.nodes["a"].pods)[1] == one.uid


def test_nominated_pods_put_on_a_node_leave_with_the_trial() -> None:
    state = world()
    before = cluster_picture(state)
    waiting = parse_pod(pod("waiting", requests={"cpu": "2"}, labels={"app": "web"}))
    with state.trial("b") as trial:
        trial.add(waiting)
        assert state.nodes["b"].requested_cpu == 3000
        assert state.pods[waiting.uid].node_name == "b"
        trial.remove(waiting.uid)
        trial.add(waiting)
    assert waiting.uid not in state.pods
    assert cluster_picture(state) == before


def test_an_error_inside_the_block_still_undoes_it() -> None:
    state = world()
    before = cluster_picture(state)
    with pytest.raises(RuntimeError), state.trial("a") as trial:
        trial.remove(uid_of(state, "one"))
        raise RuntimeError("boom")
    assert cluster_picture(state) == before


def test_a_pod_of_another_node_cannot_be_taken_off() -> None:
    state = world()
    with pytest.raises(KeyError), state.trial("a") as trial:
        trial.remove(uid_of(state, "three"))


def test_a_placed_pod_is_never_moved_by_a_trial() -> None:
    state = world()
    before = cluster_picture(state)
    three = state.pods[uid_of(state, "three")]
    with state.trial("a") as trial:
        trial.add(three)  # a stale nomination of a pod bound to b
        assert state.pods[three.uid].node_name == "b"
    assert cluster_picture(state) == before
