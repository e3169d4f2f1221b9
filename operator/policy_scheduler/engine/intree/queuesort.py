"""PrioritySort, kube-scheduler v1.30's QueueSort: higher priority first, then earlier.

``less(a, b)``: a's priority (``spec.priority``, 0 when unset) is higher, or equal and a
entered the queue (its ``timestamp``) before b.
"""

from __future__ import annotations

from typing import Any, Final

from ..interface import Handle, QueuedPodInfo, QueueSortPlugin

NAME: Final = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    """Priority, then time in the queue."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = a.pod.priority, b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)
