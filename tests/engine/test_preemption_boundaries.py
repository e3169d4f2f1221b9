"""Preemption rules a mutation check found untested (issue 26, item 6).

* Eligibility (``podEligibleToPreemptOthers``): a pod nominated to a node where a pod of
  *lower* priority is still terminating does not preempt again; a terminating pod of
  *equal* priority is not its victim, and does not hold it back.
* An extender's preempt answer narrows the candidates, nothing more: whatever order it
  lists them in, ties go to the first node in NodeTree order; a node it adds that was
  not offered (one where the pod cannot go) is ignored.

Each test fails if its rule were mutated (``<`` made ``<=``; the extender's answer
taken as it comes).
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import cluster
from engine.test_preemption import FITS, HIGH, LOW, START, incoming, machines, placed
from fakes import FakeExtenders
from policy_scheduler.engine.extenders import CompiledExtender, MetaVictims
from policy_scheduler.engine.preemption import extender_hook, preempt

CPU = {"cpu": "300m"}


@pytest.mark.parametrize(
    ("terminating_priority", "preempts"),
    [
        pytest.param(HIGH, True, id="equal-priority-does-not-hold-it-back"),
        pytest.param(HIGH - 1, False, id="lower-priority-does"),
    ],
)
async def test_a_terminating_pod_on_the_nominated_node_holds_back_only_if_lower(
    terminating_priority: int, preempts: bool
) -> None:
    # machine1 (500m): a terminating pod and a low one; the preemptor needs 300m.
    terminating = placed("leaving", "machine1", terminating_priority, {"cpu": "100m"})
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    state = cluster(
        machines("machine1", cpu="500m"), [terminating, placed("low", "machine1", LOW, CPU)]
    )
    preemptor = incoming("pod1", HIGH, CPU)
    state.set_nominated(preemptor, "machine1")
    result = await preempt(preemptor, state, FITS, {})
    if preempts:
        assert (result.node, [v.name for v in result.victims]) == ("machine1", ["low"])
    else:
        assert result.node is None
        assert result.reason == (
            'the pod may not preempt: it is nominated to node "machine1", where pods of '
            "lower priority are still terminating"
        )


URL = "http://preempt.example/scheduler"
INSUFFICIENT = ["Insufficient cpu"]
SELECTOR = "node(s) didn't match node selector"


def tied_cluster() -> Any:
    """machine1 and machine2 each need one identical victim; machine3 is empty but the
    pod may not go there (its node selector), so it is no candidate."""
    return cluster(
        machines("machine1", "machine2", "machine3", cpu="500m"),
        [
            placed("v1", "machine1", LOW, CPU, start=START),
            placed("v2", "machine2", LOW, CPU, start=START),
        ],
    )


FAILED = {"machine1": INSUFFICIENT, "machine2": INSUFFICIENT, "machine3": [SELECTOR]}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            {"machine1": MetaVictims(("v1",)), "machine2": MetaVictims(("v2",))},
            ("machine1", ["v1"]),
            id="as-offered",
        ),
        pytest.param(
            {"machine2": MetaVictims(("v2",)), "machine1": MetaVictims(("v1",))},
            ("machine1", ["v1"]),
            id="reordered-the-tie-still-goes-to-the-first-node",
        ),
        pytest.param(
            {
                "machine3": MetaVictims(()),
                "machine2": MetaVictims(("v2",)),
                "machine1": MetaVictims(("v1",)),
            },
            ("machine1", ["v1"]),
            id="a-node-it-adds-is-ignored",
        ),
        pytest.param(
            {"machine3": MetaVictims(()), "machine2": MetaVictims(("v2",))},
            ("machine2", ["v2"]),
            id="added-and-narrowed",
        ),
    ],
)
async def test_an_extenders_preempt_answer_only_narrows_the_candidates(
    answer: dict[str, MetaVictims], expected: tuple[str, list[str]]
) -> None:
    state = tied_cluster()
    extenders = FakeExtenders({("preempt", URL): lambda pod, candidates: answer})
    hook = extender_hook(extenders, [CompiledExtender(URL, preempt_verb="preempt")], state)
    result = await preempt(incoming("pod1", HIGH, CPU), state, FITS, FAILED, process=hook)
    assert extenders.calls == [("preempt", URL, ("machine1", "machine2"))]
    assert (result.node, [v.name for v in result.victims]) == expected
    assert list(result.candidates) == [n for n in ("machine1", "machine2") if n in answer]
