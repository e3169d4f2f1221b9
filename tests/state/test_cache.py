"""SchedulerCache: the assume / bind / confirm / forget / expire state machine, and how
stale or duplicate watch events are absorbed, checked through the node sums the engine
reads (``cluster.nodes[n].requested_cpu`` and ``.pods``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeClock
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.objects import Pod, parse_node, parse_pod
from policy_scheduler.state.cache import PodState, SchedulerCache

TTL = 30.0


def raw_pod(name: str = "web", cpu: str = "500m") -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu, "memory": "1Gi"})


def copy_of(raw: dict[str, Any], *, node_name: str | None = None, phase: str | None = None) -> Pod:
    """The same pod (same uid) as a watch would deliver it at some point of its life."""
    obj = copy.deepcopy(raw)
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if phase:
        obj["status"] = {"phase": phase}
    return parse_pod(obj)


def new_cache(clock: FakeClock, nodes: tuple[str, ...] = ("n1", "n2")) -> SchedulerCache:
    state = ClusterState()
    for name in nodes:
        state.set_node(parse_node(node(name, cpu="4")))
    return SchedulerCache(state, ttl=TTL, clock=clock)


def sums(cache: SchedulerCache) -> dict[str, tuple[int, list[str]]]:
    """What the engine sees per node: requested milli-CPU and the pods placed there."""
    return {
        name: (info.requested_cpu, sorted(p.name for p in info.pods.values()))
        for name, info in cache.cluster.nodes.items()
    }


EMPTY = {"n1": (0, []), "n2": (0, [])}
ON_N1 = {"n1": (500, ["web"]), "n2": (0, [])}
ON_N2 = {"n1": (0, []), "n2": (500, ["web"])}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cache(clock: FakeClock) -> SchedulerCache:
    return new_cache(clock)


# -- our own transitions -------------------------------------------------------------------


def test_assume_places_the_pod_at_once(cache: SchedulerCache) -> None:
    raw = raw_pod()
    placed = cache.assume(copy_of(raw), "n1")
    assert placed.node_name == "n1"
    assert cache.state_of(placed.uid) is PodState.ASSUMED
    assert cache.is_placed(placed.uid)
    assert cache.assumed_count == 1
    assert sums(cache) == ON_N1
    assert cache.cluster.pods[placed.uid].node_name == "n1"


def test_assuming_twice_is_refused(cache: SchedulerCache) -> None:
    pending = copy_of(raw_pod())
    cache.assume(pending, "n1")
    with pytest.raises(ValueError, match="already assumed"):
        cache.assume(pending, "n2")
    assert sums(cache) == ON_N1


def test_forget_undoes_an_assumption(cache: SchedulerCache) -> None:
    pending = copy_of(raw_pod())
    cache.assume(pending, "n1")
    cache.forget(pending.uid)
    assert not cache.is_placed(pending.uid)
    assert cache.assumed_count == 0
    assert sums(cache) == EMPTY
    assert cache.cluster.pods == {}
    # ... and the pod can be decided again.
    cache.assume(pending, "n2")
    assert sums(cache) == ON_N2


def test_forget_leaves_a_confirmed_pod_in_place(cache: SchedulerCache) -> None:
    raw = raw_pod()
    cache.assume(copy_of(raw), "n1")
    cache.pod_seen(copy_of(raw, node_name="n1"))
    cache.forget(copy_of(raw).uid)
    assert cache.state_of(copy_of(raw).uid) is PodState.ADDED
    assert sums(cache) == ON_N1


def test_forget_of_an_unknown_pod_is_harmless(cache: SchedulerCache) -> None:
    cache.forget("nobody")
    assert sums(cache) == EMPTY


@pytest.mark.parametrize(
    ("finished", "elapsed", "expired"),
    [
        pytest.param(False, 10 * TTL, False, id="binding-not-finished-never-expires"),
        pytest.param(True, TTL - 1, False, id="finished-before-ttl-stays"),
        pytest.param(True, TTL, True, id="finished-at-ttl-expires"),
        pytest.param(True, TTL + 100, True, id="finished-long-ago-expires"),
    ],
)
def test_an_unconfirmed_assumption_expires_after_its_binding_finished(
    cache: SchedulerCache, clock: FakeClock, finished: bool, elapsed: float, expired: bool
) -> None:
    pending = copy_of(raw_pod())
    cache.assume(pending, "n1")
    if finished:
        cache.binding_finished(pending.uid)
    clock.now += elapsed
    assert cache.cleanup_expired() == ([pending.uid] if expired else [])
    assert cache.is_placed(pending.uid) is not expired
    assert sums(cache) == (EMPTY if expired else ON_N1)


def test_a_confirmed_pod_never_expires(cache: SchedulerCache, clock: FakeClock) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    cache.binding_finished(uid)
    cache.pod_seen(copy_of(raw, node_name="n1"))
    clock.now += 100 * TTL
    assert cache.cleanup_expired() == []
    assert sums(cache) == ON_N1


def test_binding_finished_after_the_watch_confirmed_changes_nothing(
    cache: SchedulerCache, clock: FakeClock
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    cache.pod_seen(copy_of(raw, node_name="n1"))  # the watch was faster than the reply
    cache.binding_finished(uid)
    clock.now += 10 * TTL
    assert cache.cleanup_expired() == []
    assert cache.state_of(uid) is PodState.ADDED
    assert sums(cache) == ON_N1


# -- what the watches say ------------------------------------------------------------------


def test_watch_confirms_an_assumption(cache: SchedulerCache) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    assert cache.pod_seen(copy_of(raw, node_name="n1")) is True
    assert cache.state_of(uid) is PodState.ADDED
    assert cache.assumed_count == 0
    assert sums(cache) == ON_N1


def test_the_api_node_wins_over_an_assumption_elsewhere(cache: SchedulerCache) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    cache.pod_seen(copy_of(raw, node_name="n2"))  # another scheduler bound it first
    assert cache.node_of(uid) == "n2"
    assert cache.state_of(uid) is PodState.ADDED
    assert sums(cache) == ON_N2


@pytest.mark.parametrize(
    "prior",
    [
        pytest.param("assumed", id="assumed"),
        pytest.param("added", id="added"),
        pytest.param("assumed-and-bound", id="assumed-binding-finished"),
    ],
)
def test_a_stale_copy_without_node_never_undoes_a_placement(
    cache: SchedulerCache, clock: FakeClock, prior: str
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    if prior == "added":
        cache.pod_seen(copy_of(raw, node_name="n1"))
    else:
        cache.assume(copy_of(raw), "n1")
        if prior == "assumed-and-bound":
            cache.binding_finished(uid)
    before = cache.state_of(uid)
    # A re-list replays an older copy, from before the binding.
    assert cache.pod_seen(copy_of(raw)) is True
    assert cache.state_of(uid) is before
    assert cache.node_of(uid) == "n1"
    assert sums(cache) == ON_N1


def test_an_unplaced_pod_is_a_candidate(cache: SchedulerCache) -> None:
    pending = copy_of(raw_pod())
    assert cache.pod_seen(pending) is False
    assert not cache.is_placed(pending.uid)
    assert sums(cache) == EMPTY


def test_duplicate_added_events_count_once(cache: SchedulerCache) -> None:
    raw = raw_pod()
    for _ in range(3):
        assert cache.pod_seen(copy_of(raw, node_name="n1")) is True
    assert sums(cache) == ON_N1
    assert len(cache.cluster.pods) == 1


def test_a_deleted_pod_is_not_resurrected_by_a_late_replay(cache: SchedulerCache) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.pod_seen(copy_of(raw, node_name="n1"))
    cache.pod_deleted(uid)
    assert sums(cache) == EMPTY
    assert cache.was_deleted(uid)
    # The replayed copies (bound, or from before the binding) are neither placed again
    # nor offered for scheduling.
    assert cache.pod_seen(copy_of(raw, node_name="n1")) is True
    assert cache.pod_seen(copy_of(raw)) is True
    assert sums(cache) == EMPTY
    assert not cache.is_placed(uid)


def test_deleting_an_assumed_pod_frees_its_node(cache: SchedulerCache) -> None:
    pending = copy_of(raw_pod())
    cache.assume(pending, "n1")
    cache.pod_deleted(pending.uid)
    assert sums(cache) == EMPTY
    assert cache.assumed_count == 0


def test_deleted_uids_are_forgotten_after_a_while(cache: SchedulerCache, clock: FakeClock) -> None:
    cache.pod_deleted("gone")
    clock.now += 10 * TTL - 1
    cache.cleanup_expired()
    assert cache.was_deleted("gone")
    clock.now += 2
    cache.cleanup_expired()
    assert not cache.was_deleted("gone")


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
@pytest.mark.parametrize("prior", ["added", "assumed"])
def test_finished_pods_release_their_resources(
    cache: SchedulerCache, phase: str, prior: str
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    if prior == "added":
        cache.pod_seen(copy_of(raw, node_name="n1"))
    else:
        cache.assume(copy_of(raw), "n1")
    assert cache.pod_seen(copy_of(raw, node_name="n1", phase=phase)) is True
    assert sums(cache) == EMPTY
    assert not cache.is_placed(uid)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_is_never_a_candidate(cache: SchedulerCache, phase: str) -> None:
    # kube-scheduler's pending-pod informer excludes Succeeded and Failed pods.
    assert cache.pod_seen(copy_of(raw_pod(), phase=phase)) is True
    assert sums(cache) == EMPTY


def test_a_running_pod_is_counted(cache: SchedulerCache) -> None:
    assert cache.pod_seen(copy_of(raw_pod(), node_name="n2", phase="Running")) is True
    assert sums(cache) == ON_N2


def test_sums_follow_several_pods_through_their_lives(
    cache: SchedulerCache, clock: FakeClock
) -> None:
    a, b, c = raw_pod("a", "100m"), raw_pod("b", "200m"), raw_pod("c", "400m")
    ua, ub, uc = (copy_of(x).uid for x in (a, b, c))
    cache.pod_seen(copy_of(a, node_name="n1"))
    cache.assume(copy_of(b), "n1")
    cache.assume(copy_of(c), "n2")
    assert sums(cache) == {"n1": (300, ["a", "b"]), "n2": (400, ["c"])}
    cache.binding_finished(uc)
    cache.forget(ub)  # b's binding failed
    assert sums(cache) == {"n1": (100, ["a"]), "n2": (400, ["c"])}
    clock.now += TTL  # c's binding was never confirmed
    assert cache.cleanup_expired() == [uc]
    cache.pod_deleted(ua)
    assert sums(cache) == EMPTY
    assert cache.cluster.pods == {}


def test_a_pod_on_a_node_not_yet_seen_is_counted_when_it_arrives(clock: FakeClock) -> None:
    cache = new_cache(clock, nodes=())
    cache.pod_seen(copy_of(raw_pod(), node_name="late"))
    cache.cluster.set_node(parse_node(node("late")))
    assert sums(cache) == {"late": (500, ["web"])}
