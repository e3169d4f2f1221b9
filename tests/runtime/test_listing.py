"""The operator's LIST is filed page by page as the pages arrive, and only the whole
LIST says what is gone.

A LIST of 10 000 pods held at once, decoded, was the operator's peak memory (CPython
keeps a peak mapped): each page is filed before the next is asked for. What the LIST
shows gone is deleted only once the last page is in: an object on page 2 is not gone
because page 1 lacked it. The operator is the real :class:`Operator`; only its LIST is
replaced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from builders import node
from fakes import FakeClock
from policy_scheduler.kinds import NODE, Kind
from policy_scheduler.operating import Operator, Options


@pytest.fixture
async def operator() -> AsyncIterator[Operator]:
    options = Options(metrics_port=0, health_port=0, lease_namespace="default")
    async with client.ApiClient(client.Configuration(host="http://127.0.0.1:9")) as api_client:
        yield Operator(options, api_client)


async def test_each_page_is_filed_before_the_next_and_only_the_whole_list_deletes(
    operator: Operator,
) -> None:
    runtime = operator.runtime
    clock = FakeClock()
    runtime.world.clock = clock
    for name in ("a", "b", "gone"):
        runtime.handle("ADDED", node(name))
    clock.now += 5
    known_between_pages: list[set[str]] = []

    async def pages(kind: Kind) -> AsyncIterator[list[dict[str, Any]]]:
        if kind is not NODE:
            return
        yield [node("a"), node("new")]
        known_between_pages.append(set(runtime.cache.cluster.nodes))
        yield [node("b")]

    operator.api.list_pages = pages  # type: ignore[method-assign]
    assert await operator.resync() == 1
    # Page 1 was filed ("new") before page 2 was asked for, and nothing was deleted then
    # (not "b", which only page 2 holds; not even "gone").
    assert known_between_pages == [{"a", "b", "gone", "new"}]
    assert set(runtime.cache.cluster.nodes) == {"a", "b", "new"}


async def test_the_operators_process_freezes_the_heap_once_its_first_list_is_filed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The cluster the first LIST filed is most of the heap and lives as long as the
    # process: it goes to the collector's permanent generation, once (a resync later
    # does not freeze again; nor does an Operator a test builds, which shares its process).
    from policy_scheduler import operating

    frozen_with: list[set[str]] = []
    options = Options(metrics_port=0, health_port=0, lease_namespace="default")
    async with client.ApiClient(client.Configuration(host="http://127.0.0.1:9")) as api_client:
        for freeze in (True, False):
            op = Operator(options, api_client, freeze_after_listing=freeze)
            monkeypatch.setattr(
                operating,
                "freeze_heap",
                lambda op=op: frozen_with.append(set(op.runtime.cache.cluster.nodes)),
            )

            async def pages(kind: Kind) -> AsyncIterator[list[dict[str, Any]]]:
                if kind is NODE:
                    yield [node("a"), node("b")]

            op.api.list_pages = pages  # type: ignore[method-assign]
            await op.prime()
            await op.prime()  # leadership lost and won again: a second first LIST
            assert op.runtime.primed
    assert frozen_with == [{"a", "b"}]


def test_freeze_heap_leaves_existing_objects_out_of_full_collections() -> None:
    import gc

    from policy_scheduler.operating import freeze_heap

    before = gc.get_freeze_count()
    try:
        freeze_heap()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()  # the test process's heap goes back to the collector
