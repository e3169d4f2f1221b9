"""The public API for plugins: everything a plugin needs, and nothing else.

A plugin is a Python class in any installed package, registered under the entry-point
group ``policy_scheduler.plugins``::

    [project.entry-points."policy_scheduler.plugins"]
    RequireRackLabel = "rackplugin:RequireRackLabel"

and enabled by a SchedulingPolicy: a Filter plugin in ``spec.predicates``, a Score plugin
in ``spec.priorities``, the other points in ``spec.plugins``, arguments in
``spec.pluginConfig``. ``docs/plugins.md`` walks through writing, installing and
enabling one, and states each extension point's contract. A plugin may also say which
cluster events can undo its rejections (``events_to_register()``, QueueingHints: see
:mod:`.engine.events`).

Stable within ``policyscheduler.io/v1alpha1``: names exported here keep their meaning;
anything imported from elsewhere in the package is internal and may change.
"""

from __future__ import annotations

from .engine.events import (
    QUEUE,
    QUEUE_SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHintFn,
)
from .engine.functions import CycleState
from .engine.interface import (
    BindPlugin,
    Code,
    EventRecorder,
    FilterPlugin,
    Gang,
    GangPlugin,
    Handle,
    NodeInfoView,
    NodeScore,
    PermitPlugin,
    Plugin,
    PluginApi,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Snapshot,
    Status,
    WaitingPod,
)
from .names import MAX_NODE_SCORE, MAX_PERMIT_WAIT_SECONDS, PLUGIN_ENTRY_POINT_GROUP
from .objects import POD_GROUP_LABEL, Node, OwnerRef, Pod, PodGroup, Resources

__all__ = [
    "MAX_NODE_SCORE",
    "MAX_PERMIT_WAIT_SECONDS",
    "PLUGIN_ENTRY_POINT_GROUP",
    "POD_GROUP_LABEL",
    "QUEUE",
    "QUEUE_SKIP",
    "ActionType",
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EventRecorder",
    "FilterPlugin",
    "Gang",
    "GangPlugin",
    "Handle",
    "Node",
    "NodeInfoView",
    "NodeScore",
    "OwnerRef",
    "PermitPlugin",
    "Plugin",
    "PluginApi",
    "Pod",
    "PodGroup",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHintFn",
    "ReservePlugin",
    "Resources",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "WaitingPod",
]
