"""The Kopf handlers: each watch event reaches the runtime's door with its type and kind.

The handler functions registered in ``handlers.registry`` are called as Kopf calls them
(an event dict and a memo), and what the runtime then holds is checked."""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from builders import node, pod
from fakes import FakeApi, FakeClock
from policy_scheduler import handlers
from policy_scheduler.runtime.scheduling import SchedulerRuntime


def handler_for(plural: str) -> Any:
    [found] = [
        h for h in handlers.registry._watching.get_all_handlers() if h.id == f"{plural}_event"
    ]
    return found.fn


@pytest.fixture
def runtime() -> SchedulerRuntime:
    return SchedulerRuntime(FakeApi(), clock=FakeClock())


async def deliver(
    runtime: SchedulerRuntime, plural: str, event_type: str, obj: dict[str, Any]
) -> None:
    event = {"type": event_type, "object": obj}
    await handler_for(plural)(event=event, memo=kopf.Memo(runtime=runtime))


async def test_node_events_add_change_and_delete_nodes(runtime: SchedulerRuntime) -> None:
    await deliver(runtime, "nodes", "ADDED", node("n1", cpu="2"))
    await deliver(runtime, "nodes", "MODIFIED", node("n1", cpu="8"))
    assert runtime.cache.cluster.nodes["n1"].node.allocatable.milli_cpu == 8000
    await deliver(runtime, "nodes", "DELETED", node("n1", cpu="8"))
    assert runtime.cache.cluster.nodes == {}


async def test_pod_events_place_and_delete_pods(runtime: SchedulerRuntime) -> None:
    await deliver(runtime, "nodes", "ADDED", node("n1"))
    running = pod("running", requests={"cpu": "1"}, node_name="n1")
    await deliver(runtime, "pods", "ADDED", running)
    assert runtime.cache.cluster.nodes["n1"].requested_cpu == 1000
    await deliver(runtime, "pods", "DELETED", running)
    assert runtime.cache.cluster.nodes["n1"].requested_cpu == 0


async def test_an_object_without_kind_is_read_as_the_kind_it_was_watched_as(
    runtime: SchedulerRuntime,
) -> None:
    bare = node("n1")
    del bare["kind"], bare["apiVersion"]
    await deliver(runtime, "nodes", "ADDED", bare)
    assert list(runtime.cache.cluster.nodes) == ["n1"]


async def test_startup_settings_bound_what_kopf_holds_per_object() -> None:
    # Kopf's defaults: one unpaged LIST per kind, and a worker (with the object's last
    # event) kept 5 s per object after its last event, for every pod of a re-list: at
    # 5000 nodes / 10 000 pods the difference is ~90 MiB of RSS (docs/performance.md).
    settings = kopf.OperatorSettings()
    assert settings.watching.chunk_size is None and settings.queueing.idle_timeout == 5.0
    handlers.configure(settings=settings)
    assert settings.watching.chunk_size == 500
    assert settings.queueing.idle_timeout == 0.5
    assert settings.queueing.worker_limit is None  # a limit made it worse (196 MiB)
    assert isinstance(settings.persistence.diffbase_storage, handlers.NoDiffBase)
    assert settings.scanning.disabled and not settings.posting.enabled
