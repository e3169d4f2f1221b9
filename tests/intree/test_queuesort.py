"""PrioritySort: kube-scheduler v1.30's TestLess table, and a queue sorted by it."""

from __future__ import annotations

import functools

import pytest

from intree.cases import make_plugin, st_pod
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.interface import QueuedPodInfo
from policy_scheduler.objects import parse_pod

LOW, HIGH = 10, 100


def info(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    spec = {} if priority is None else {"priority": priority}
    pod = parse_pod(st_pod(name=name, **spec))
    return QueuedPodInfo(pod, timestamp=timestamp, initial_timestamp=timestamp)


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        pytest.param(
            info("t1-p1", LOW, 1),
            info("t1-p2", HIGH, 2),
            False,
            id="p1.priority less than p2.priority",
        ),
        pytest.param(
            info("t2-p1", HIGH, 1),
            info("t2-p2", LOW, 2),
            True,
            id="p1.priority greater than p2.priority",
        ),
        pytest.param(
            info("t3-p1", HIGH, 1),
            info("t3-p2", HIGH, 2),
            True,
            id="equal priority. p1 is added to schedulingQ earlier than p2",
        ),
        pytest.param(
            info("t4-p1", HIGH, 2),
            info("t4-p2", HIGH, 1),
            False,
            id="equal priority. p2 is added to schedulingQ earlier than p1",
        ),
        pytest.param(
            info("unset", None, 1), info("negative", -5, 0), True, id="unset priority is 0"
        ),
    ],
)
def test_less(a: QueuedPodInfo, b: QueuedPodInfo, want: bool) -> None:
    plugin = make_plugin("PrioritySort", None, ClusterState())
    assert plugin.less(a, b) is want


def test_queue_order() -> None:
    plugin = make_plugin("PrioritySort", None, ClusterState())
    queue = [info("late-high", HIGH, 5), info("early-low", LOW, 1), info("early-high", HIGH, 2)]

    def compare(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if plugin.less(a, b) else 1 if plugin.less(b, a) else 0

    ordered = sorted(queue, key=functools.cmp_to_key(compare))
    assert [q.pod.name for q in ordered] == ["early-high", "late-high", "early-low"]
