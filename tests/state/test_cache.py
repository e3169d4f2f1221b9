"""SchedulerCache: the assume / finish / confirm / forget / expire state machine, the
snapshot a decision runs on, and how stale or duplicate watch events are absorbed on
the way in (``World.observe``), checked through the node sums the engine reads
(``cluster.nodes[n].requested_cpu`` and ``.pods``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from builders import node, pod
from fakes import FakeClock
from policy_scheduler.objects import Pod, parse_node, parse_pod
from policy_scheduler.state.cache import (
    TRANSITIONS,
    CacheError,
    Event,
    PodState,
    SchedulerCache,
)
from policy_scheduler.state.world import World

TTL = 30.0


def raw_pod(name: str = "web", cpu: str = "500m") -> dict[str, Any]:
    return pod(name, requests={"cpu": cpu, "memory": "1Gi"})


def raw_copy(
    raw: dict[str, Any], *, node_name: str | None = None, phase: str | None = None
) -> dict[str, Any]:
    """The same pod (same uid) as a watch would deliver it at some point of its life."""
    obj = copy.deepcopy(raw)
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def copy_of(raw: dict[str, Any], *, node_name: str | None = None, phase: str | None = None) -> Pod:
    return parse_pod(raw_copy(raw, node_name=node_name, phase=phase))


def new_cache(clock: FakeClock, nodes: tuple[str, ...] = ("n1", "n2")) -> SchedulerCache:
    cache = SchedulerCache(ttl=TTL, clock=clock)
    for name in nodes:
        cache.set_node(parse_node(node(name, cpu="4")))
    return cache


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


@pytest.fixture
def world(cache: SchedulerCache) -> World:
    return World(cache=cache)


def seen(world: World, raw: dict[str, Any]) -> str | None:
    """Feed a watch event; where the pod is now: "placed", or its queue part, or None."""
    world.observe("MODIFIED", raw)
    uid = str(raw["metadata"]["uid"])
    return "placed" if world.cache.is_placed(uid) else world.queue.where(uid)


# -- the state machine, as data ------------------------------------------------------------


def _drive(
    cache: SchedulerCache, clock: FakeClock, raw: dict[str, Any], state: PodState | None
) -> None:
    """Bring the pod of ``raw`` into ``state`` by legal steps."""
    if state is PodState.ADDED:
        cache.confirm(copy_of(raw, node_name="n1"))
    elif state is not None:
        cache.assume(copy_of(raw), "n1")
        if state is PodState.BINDING_FINISHED:
            cache.finish_binding(copy_of(raw).uid)


STATES = [None, PodState.ASSUMED, PodState.BINDING_FINISHED, PodState.ADDED]


@pytest.mark.parametrize("event", list(Event), ids=lambda e: e.value)
@pytest.mark.parametrize("state", STATES, ids=lambda s: s.value if s else "absent")
def test_every_transition_is_the_tables(
    cache: SchedulerCache, clock: FakeClock, state: PodState | None, event: Event
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    _drive(cache, clock, raw, state)
    clock.now += 2 * TTL  # an expiry, if allowed at all, is due
    actions = {
        Event.ASSUME: lambda: cache.assume(copy_of(raw), "n2"),
        Event.FINISH_BINDING: lambda: cache.finish_binding(uid),
        Event.FORGET: lambda: cache.forget(uid),
        Event.CONFIRM: lambda: cache.confirm(copy_of(raw, node_name="n2")),
        Event.EXPIRE: lambda: cache._move(uid, Event.EXPIRE),
        Event.REMOVE: lambda: cache.remove_pod(uid),
    }
    if (state, event) not in TRANSITIONS:
        with pytest.raises(CacheError, match=f"pod {uid}: cannot {event.value}"):
            actions[event]()
        assert cache.state_of(uid) is state  # nothing changed
        return
    actions[event]()
    if event is not Event.EXPIRE:  # _move only answers; expire() applies it (below)
        assert cache.state_of(uid) is TRANSITIONS[(state, event)]


def test_expire_takes_only_finished_bindings_past_their_deadline(
    cache: SchedulerCache, clock: FakeClock
) -> None:
    assumed, finished, added = raw_pod("a"), raw_pod("f"), raw_pod("d")
    cache.assume(copy_of(assumed), "n1")
    cache.assume(copy_of(finished), "n1")
    cache.finish_binding(copy_of(finished).uid)
    cache.confirm(copy_of(added, node_name="n2"))
    clock.now += TTL
    assert [p.name for p in cache.expire()] == ["f"]
    assert cache.state_of(copy_of(assumed).uid) is PodState.ASSUMED
    assert cache.state_of(copy_of(added).uid) is PodState.ADDED


# -- the snapshot a decision runs on -------------------------------------------------------


def test_writes_during_a_snapshot_wait_until_it_ends(cache: SchedulerCache) -> None:
    raw = raw_pod()
    with cache.snapshot() as cluster:
        cache.remove_node("n2")
        cache.set_node(parse_node(node("n3")))
        cache.confirm(copy_of(raw, node_name="n1"))
        # The decision still sees the cluster it started with...
        assert sorted(cluster.nodes) == ["n1", "n2"]
        assert sums(cache) == EMPTY
        assert cache.held_writes == 3
        # ... while the pod bookkeeping answers for the live stream at once.
        assert cache.node_of(copy_of(raw).uid) == "n1"
    assert sorted(cache.cluster.nodes) == ["n1", "n3"]
    assert sums(cache)["n1"] == (500, ["web"])
    assert cache.held_writes == 0


def test_nested_snapshots_release_writes_once_the_outer_one_ends(cache: SchedulerCache) -> None:
    with cache.snapshot():
        with cache.snapshot():
            cache.remove_node("n2")
        assert "n2" in cache.cluster.nodes
    assert "n2" not in cache.cluster.nodes


def test_held_writes_apply_in_arrival_order(cache: SchedulerCache) -> None:
    raw = raw_pod()
    with cache.snapshot():
        cache.assume(copy_of(raw), "n1")
        cache.forget(copy_of(raw).uid)
        cache.assume(copy_of(raw), "n2")
    assert sums(cache) == ON_N2


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
    with pytest.raises(CacheError, match="cannot assume: it is Assumed"):
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


def test_forgetting_a_confirmed_pod_is_refused(cache: SchedulerCache) -> None:
    raw = raw_pod()
    cache.assume(copy_of(raw), "n1")
    cache.confirm(copy_of(raw, node_name="n1"))
    with pytest.raises(CacheError, match="cannot forget: it is Added"):
        cache.forget(copy_of(raw).uid)
    assert cache.state_of(copy_of(raw).uid) is PodState.ADDED
    assert sums(cache) == ON_N1


def test_forgetting_an_unknown_pod_is_refused(cache: SchedulerCache) -> None:
    with pytest.raises(CacheError, match="cannot forget: it is not in the cache"):
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
        cache.finish_binding(pending.uid)
    clock.now += elapsed
    assert [p.uid for p in cache.expire()] == ([pending.uid] if expired else [])
    assert cache.is_placed(pending.uid) is not expired
    assert sums(cache) == (EMPTY if expired else ON_N1)


def test_a_confirmed_pod_never_expires(cache: SchedulerCache, clock: FakeClock) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    cache.finish_binding(uid)
    cache.confirm(copy_of(raw, node_name="n1"))
    clock.now += 100 * TTL
    assert cache.expire() == []
    assert sums(cache) == ON_N1


def test_binding_finished_after_the_watch_confirmed_changes_nothing(
    cache: SchedulerCache, clock: FakeClock
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    cache.confirm(copy_of(raw, node_name="n1"))  # the watch was faster than the reply
    cache.finish_binding(uid)
    clock.now += 10 * TTL
    assert cache.expire() == []
    assert cache.state_of(uid) is PodState.ADDED
    assert sums(cache) == ON_N1


# -- what the watches say ------------------------------------------------------------------


def test_watch_confirms_an_assumption(cache: SchedulerCache, world: World) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    assert seen(world, raw_copy(raw, node_name="n1")) == "placed"
    assert cache.state_of(uid) is PodState.ADDED
    assert cache.assumed_count == 0
    assert sums(cache) == ON_N1


def test_the_api_node_wins_over_an_assumption_elsewhere(
    cache: SchedulerCache, world: World
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    cache.assume(copy_of(raw), "n1")
    seen(world, raw_copy(raw, node_name="n2"))  # another scheduler bound it first
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
    cache: SchedulerCache, world: World, prior: str
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    if prior == "added":
        seen(world, raw_copy(raw, node_name="n1"))
    else:
        cache.assume(copy_of(raw), "n1")
        if prior == "assumed-and-bound":
            cache.finish_binding(uid)
    before = cache.state_of(uid)
    # A re-list replays an older copy, from before the binding.
    assert seen(world, raw_copy(raw)) == "placed"
    assert cache.state_of(uid) is before
    assert cache.node_of(uid) == "n1"
    assert sums(cache) == ON_N1


def test_an_unplaced_pod_is_a_candidate(cache: SchedulerCache, world: World) -> None:
    raw = raw_pod()
    assert seen(world, raw_copy(raw)) == "waiting"  # default-scheduler: no policy serves it
    assert not cache.is_placed(copy_of(raw).uid)
    assert sums(cache) == EMPTY


def test_duplicate_added_events_count_once(cache: SchedulerCache, world: World) -> None:
    raw = raw_pod()
    for _ in range(3):
        assert seen(world, raw_copy(raw, node_name="n1")) == "placed"
    assert sums(cache) == ON_N1
    assert len(cache.cluster.pods) == 1


def test_a_deleted_pod_is_not_resurrected_by_a_late_replay(
    cache: SchedulerCache, world: World
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    seen(world, raw_copy(raw, node_name="n1"))
    world.observe("DELETED", raw_copy(raw, node_name="n1"))
    assert sums(cache) == EMPTY
    assert cache.was_deleted(uid)
    # The replayed copies (bound, or from before the binding) are neither placed again
    # nor offered for scheduling.
    assert seen(world, raw_copy(raw, node_name="n1")) is None
    assert seen(world, raw_copy(raw)) is None
    assert sums(cache) == EMPTY
    assert not cache.is_placed(uid)


def test_deleting_an_assumed_pod_frees_its_node(cache: SchedulerCache) -> None:
    pending = copy_of(raw_pod())
    cache.assume(pending, "n1")
    cache.remove_pod(pending.uid)
    assert sums(cache) == EMPTY
    assert cache.assumed_count == 0


def test_deleted_uids_are_forgotten_after_a_while(cache: SchedulerCache, clock: FakeClock) -> None:
    cache.remove_pod("gone")
    clock.now += 10 * TTL - 1
    cache.expire()
    assert cache.was_deleted("gone")
    clock.now += 2
    cache.expire()
    assert not cache.was_deleted("gone")


def test_a_uid_deleted_again_is_remembered_from_its_last_deletion(
    cache: SchedulerCache, clock: FakeClock
) -> None:
    cache.remove_pod("twice")
    clock.now += 5 * TTL
    cache.remove_pod("once")
    clock.now += 1
    cache.remove_pod("twice")  # a replay of its deletion: remembered from now on
    clock.now += 10 * TTL - 0.5  # past "once"'s horizon, not yet past "twice"'s
    cache.expire()
    assert not cache.was_deleted("once")
    assert cache.was_deleted("twice")


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
@pytest.mark.parametrize("prior", ["added", "assumed"])
def test_finished_pods_release_their_resources(
    cache: SchedulerCache, world: World, phase: str, prior: str
) -> None:
    raw = raw_pod()
    uid = copy_of(raw).uid
    if prior == "added":
        seen(world, raw_copy(raw, node_name="n1"))
    else:
        cache.assume(copy_of(raw), "n1")
    assert seen(world, raw_copy(raw, node_name="n1", phase=phase)) is None
    assert sums(cache) == EMPTY
    assert not cache.is_placed(uid)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_is_never_a_candidate(
    cache: SchedulerCache, world: World, phase: str
) -> None:
    # kube-scheduler's pending-pod informer excludes Succeeded and Failed pods.
    assert seen(world, raw_copy(raw_pod(), phase=phase)) is None
    assert sums(cache) == EMPTY


def test_a_running_pod_is_counted(cache: SchedulerCache, world: World) -> None:
    assert seen(world, raw_copy(raw_pod(), node_name="n2", phase="Running")) == "placed"
    assert sums(cache) == ON_N2


def test_sums_follow_several_pods_through_their_lives(
    cache: SchedulerCache, clock: FakeClock
) -> None:
    a, b, c = raw_pod("a", "100m"), raw_pod("b", "200m"), raw_pod("c", "400m")
    ua, ub, uc = (copy_of(x).uid for x in (a, b, c))
    cache.confirm(copy_of(a, node_name="n1"))
    cache.assume(copy_of(b), "n1")
    cache.assume(copy_of(c), "n2")
    assert sums(cache) == {"n1": (300, ["a", "b"]), "n2": (400, ["c"])}
    cache.finish_binding(uc)
    cache.forget(ub)  # b's binding failed
    assert sums(cache) == {"n1": (100, ["a"]), "n2": (400, ["c"])}
    clock.now += TTL  # c's binding was never confirmed
    assert [p.uid for p in cache.expire()] == [uc]
    cache.remove_pod(ua)
    assert sums(cache) == EMPTY
    assert cache.cluster.pods == {}


def test_a_pod_on_a_node_not_yet_seen_is_counted_when_it_arrives(clock: FakeClock) -> None:
    cache = new_cache(clock, nodes=())
    cache.confirm(copy_of(raw_pod(), node_name="late"))
    cache.set_node(parse_node(node("late")))
    assert sums(cache) == {"late": (500, ["web"])}
