"""Cluster events and queueing hints, as kube-scheduler v1.34's EnqueueExtensions.

A plugin that rejected a pod may say which changes of the cluster can make it
schedulable: ``events_to_register()`` returns :class:`ClusterEventWithHint` values, each
an event (a resource and the actions on it) and an optional hint function that sees
the pod and the object's old and new copies and answers :data:`QUEUE` (this change may
help: move the pod) or :data:`QUEUE_SKIP` (it cannot: leave it asleep). No hint function
means :data:`QUEUE` for every matching event. A plugin without the method (or returning
None) keeps the behaviour from before hints: any change that could help any pod wakes
the pods it rejected. A hint function that raises counts as :data:`QUEUE`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..objects import Pod

#: The hint's two answers (kube-scheduler's ``Queue`` and ``QueueSkip``).
QUEUE = "Queue"
QUEUE_SKIP = "QueueSkip"

#: Resources of cluster events (kube-scheduler's EventResource names).
NODE = "Node"
#: A pod placed on a node (kube-scheduler's ``AssignedPod``).
ASSIGNED_POD = "AssignedPod"
#: Storage and DRA kinds (their events carry the parsed objects, old and new).
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_SLICE = "ResourceSlice"
DEVICE_CLASS = "DeviceClass"
#: Any resource (kube-scheduler's ``WildCard``).
WILDCARD = "*"


class ActionType(enum.IntFlag):
    """What happened to the resource (kube-scheduler's ActionType bits)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_POD_LABEL = 64
    UPDATE_POD_SCALE_DOWN = 128
    UPDATE_POD_OTHER = 256
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_OTHER
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A resource and the actions on it (a registration may name several)."""

    resource: str
    action: ActionType

    def matches(self, happened: ClusterEvent) -> bool:
        """Whether this registration covers the event that happened."""
        return (self.resource in (WILDCARD, happened.resource)) and bool(
            self.action & happened.action
        )


#: ``hint(pod, old, new) -> QUEUE | QUEUE_SKIP``; old is None on an addition, new on a
#: deletion.
QueueingHintFn = Callable[[Pod, Any, Any], str]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """An event a plugin registers, with its hint function (None: always QUEUE)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None
