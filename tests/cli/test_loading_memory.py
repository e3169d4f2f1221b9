"""Loading leaves the garbage collector as it found it, with nothing young to walk.

``collector_paused`` (documents.py) pauses collections while a big input is decoded and
parsed; everything made inside lives on, so on the way out it is handed to the oldest
generation instead of waiting, all in the youngest, for a collection to walk it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from policy_scheduler.documents import collector_paused


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector enabled and nothing frozen, whatever the test does; restored after."""
    was_enabled = gc.isenabled()
    gc.unfreeze()
    gc.enable()
    yield
    gc.unfreeze()
    if not was_enabled:
        gc.disable()


def young_ids() -> set[int]:
    """Objects in the two younger generations, by id."""
    return {id(o) for generation in (0, 1) for o in gc.get_objects(generation=generation)}


def test_what_was_made_inside_goes_to_the_oldest_generation(collector: None) -> None:
    gc.collect()  # every count at 0: the first collection after the pause is of gen 0 only
    with collector_paused():
        assert not gc.isenabled()
        kept = [[i] for i in range(50_000)]
    assert gc.isenabled()
    # Had they waited in the youngest generation, the first collection would have walked
    # all of them and moved them to the middle one.
    young = young_ids()
    assert id(kept[0]) not in young and id(kept[-1]) not in young
    assert gc.get_freeze_count() == 0
    assert kept[-1] == [49_999]


def test_objects_the_process_froze_stay_frozen(collector: None) -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    with collector_paused():
        kept = [[i] for i in range(1000)]
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled()
    assert len(kept) == 1000


def test_a_pause_inside_a_pause_leaves_the_collector_off(collector: None) -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
