"""SchedulingGates, kube-scheduler v1.30's PreEnqueue: a gated pod stays out of the queue.

A pod with ``spec.schedulingGates`` is not let into the active queue (it is never
attempted) until its gates are all removed: UnschedulableAndUnresolvable, ``waiting
for scheduling gates: [a b]`` (the gate names as Go prints a string slice).
"""

from __future__ import annotations

from typing import Any, Final

from ...objects import Pod
from ..interface import Handle, PreEnqueuePlugin, Status

NAME: Final = "SchedulingGates"


def waiting_message(gates: tuple[str, ...]) -> str:
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates(PreEnqueuePlugin):
    """Pods with scheduling gates wait outside the queue."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(waiting_message(pod.scheduling_gates))
