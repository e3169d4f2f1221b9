"""The shared helpers: kube-scheduler v1.30's TestDefaultNormalizeScore, and statuses."""

from __future__ import annotations

import pytest

from policy_scheduler.engine.functions import Unresolvable
from policy_scheduler.engine.interface import Code, NodeScore
from policy_scheduler.engine.intree.helper import (
    default_normalize_score,
    normalize_node_scores,
    status_of,
)


@pytest.mark.parametrize(
    ("reverse", "scores", "want"),
    [
        pytest.param(False, [1, 2, 3, 4], [25, 50, 75, 100], id="case_0"),
        pytest.param(True, [1, 2, 3, 4], [75, 50, 25, 0], id="case_1"),
        pytest.param(False, [1000, 10, 20, 30], [100, 1, 2, 3], id="case_2"),
        pytest.param(True, [1000, 10, 20, 30], [0, 99, 98, 97], id="case_3"),
        pytest.param(False, [1, 1, 1, 1], [100, 100, 100, 100], id="case_4"),
        pytest.param(False, [1000, 1, 1, 1], [100, 0, 0, 0], id="case_5"),
        pytest.param(True, [0, 1, 1, 1], [100, 0, 0, 0], id="case_6"),
        pytest.param(False, [0, 0], [0, 0], id="all zero stays zero"),
        pytest.param(True, [0, 0], [100, 100], id="all zero reversed is the maximum"),
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], want: list[int]) -> None:
    values = list(scores)
    default_normalize_score(100, reverse, values)
    assert values == want
    listed = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    normalize_node_scores(reverse, listed)
    assert [entry.score for entry in listed] == want


def test_status_of_reasons() -> None:
    assert status_of(()) is None
    plain = status_of(("Insufficient cpu", "Insufficient memory"))
    assert plain is not None and plain.code is Code.UNSCHEDULABLE
    assert plain.message == "Insufficient cpu, Insufficient memory"
    hard = status_of((Unresolvable("node(s) were unschedulable"),))
    assert hard is not None and hard.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
