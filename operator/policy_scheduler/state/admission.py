"""Which pods the scheduler takes, and in what order: one rule for the operator and ``simulate``.

:func:`admit` sorts a pod as the API reports it into one :class:`Admission`:

* ``PLACED`` — it has ``spec.nodeName``: it runs (or is about to) and uses its node's
  resources; never scheduled again;
* ``FINISHED`` — phase Succeeded or Failed: it holds no resources and is never
  scheduled, placed or not (kube-scheduler's informers filter such pods out);
* ``DELETING`` — it has a ``deletionTimestamp``;
* ``GATED`` — it has ``spec.schedulingGates``: it waits until they are removed;
* ``OTHER_NAMESPACE`` — the scheduler was told to schedule some namespaces only;
* ``PENDING`` — a pod to decide, if a policy serves its ``spec.schedulerName``.

:func:`queue_key` is the order pending pods are decided in: higher ``spec.priority``
first, then the older pod (``creationTimestamp``); callers break the remaining ties by
arrival (the queue) or file order (``simulate``).
"""

from __future__ import annotations

from collections.abc import Collection
from enum import Enum

from ..objects import Pod


class Admission(Enum):
    """Where a pod stands for the scheduler (see the module docstring)."""

    PENDING = "pending"
    PLACED = "placed"
    FINISHED = "finished"
    DELETING = "being deleted"
    GATED = "has schedulingGates"
    OTHER_NAMESPACE = "in a namespace this scheduler does not serve"


def admit(pod: Pod, namespaces: Collection[str] = ()) -> Admission:
    """The one rule: what the scheduler does with ``pod``. ``namespaces`` empty: all."""
    if pod.phase in ("Succeeded", "Failed"):
        return Admission.FINISHED
    if pod.node_name:
        return Admission.PLACED
    if pod.deleting:
        return Admission.DELETING
    if pod.gated:
        return Admission.GATED
    if namespaces and pod.namespace not in namespaces:
        return Admission.OTHER_NAMESPACE
    return Admission.PENDING


def queue_key(pod: Pod) -> tuple[int, float]:
    """Decision order: higher priority first, then older first."""
    return (-pod.priority, pod.created)
