"""Plugins whose every answer is scripted by their arguments: the points' contract tests.

``ScriptA``, ``ScriptB`` and ``ScriptC`` are one class under three names, so that a
policy can enable several at one point and each answer differently; each implements
every point a policy can name (PreFilter, Filter, PostFilter, PreScore, Score with
NormalizeScore, Reserve, Permit, PreBind, Bind, PostBind). What a plugin answers at a
point is in its ``pluginConfig`` args (:class:`ScriptArgs`); with no args it passes
everywhere and skips Bind. Every call is recorded in :data:`SCRIPT_CALLS` as
``(plugin, point, pod name, node or "")``, in order.

``hold`` names a point (``Filter`` or ``Reserve``) where the plugin holds the event loop
it is called on, as a slow synchronous plugin does, until the test sets :data:`HOLD`
(or ``holdSeconds`` pass): the call is recorded first, so a test knows the loop is held.
``ScriptHinted`` is the same plugin with QueueingHints: it registers node additions
and label changes, and its hint says Queue only for a node that carries the label its
``wakeOnLabel`` arg names (every hint call is recorded in :data:`HINT_CALLS`). The other
three register nothing: any change wakes the pods they refused.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from policy_scheduler.framework import (
    QUEUE,
    QUEUE_SKIP,
    ActionType,
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FilterPlugin,
    Handle,
    Node,
    NodeInfoView,
    NodeScore,
    PermitPlugin,
    Pod,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)

#: (plugin, point, pod name, node name or "") for every call of a scripted plugin.
SCRIPT_CALLS: list[tuple[str, str, str, str]] = []
#: Bindings the scripted Bind made: (plugin, pod name, node).
SCRIPT_BINDINGS: list[tuple[str, str, str]] = []
#: (pod name, node name) for every call of ScriptHinted's queueing hint.
HINT_CALLS: list[tuple[str, str]] = []

#: The answers a point can be scripted to give (besides passing).
CODES: Final = ("", "skip", "unschedulable", "unresolvable", "error")


#: Set by a test to let a plugin holding the loop (``hold``) go on.
HOLD = threading.Event()


def reset() -> None:
    SCRIPT_CALLS.clear()
    SCRIPT_BINDINGS.clear()
    HOLD.clear()
    HINT_CALLS.clear()


class ScriptArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    preFilter: str = Field(default="", description="skip / unschedulable / unresolvable / error")
    preFilterNodes: list[str] | None = Field(
        default=None, description="PreFilter's node set (a PreFilterResult)"
    )
    filterRejects: list[str] = Field(default=[], description="Nodes Filter rejects")
    postFilter: str = Field(
        default="unschedulable",
        description="success (nominate postFilterNode) / unschedulable / unresolvable / error",
    )
    postFilterNode: str = ""
    preScore: str = Field(default="", description="skip / error")
    scores: dict[str, int] = Field(default={}, description="Score per node (absent: 0)")
    normalize: str = Field(default="", description="'' (none), invert (100 - s), zero, or error")
    reserve: str = Field(default="", description="unschedulable / error")
    permit: str = Field(default="", description="unschedulable, or wait")
    permitWaitSeconds: float = 30.0
    bind: str = Field(default="skip", description="skip / bind / error")
    hold: str = Field(default="", description="Filter / Reserve: hold the loop there until HOLD")
    holdSeconds: float = 30.0
    wakeOnLabel: str = Field(
        default="",
        description="ScriptHinted: the node label whose appearance may undo its refusals",
    )


class Script(
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    BindPlugin,
    PostBindPlugin,
):
    """Answers at every point as its arguments script it, and records every call."""

    name = "Script"
    Args = ScriptArgs

    args: ScriptArgs

    def __init__(self, args: ScriptArgs, handle: Handle) -> None:
        super().__init__(args, handle)

    def _record(self, point: str, pod: Pod, node: str = "") -> None:
        SCRIPT_CALLS.append((self.name, point, pod.name, node))
        if point == self.args.hold:
            HOLD.wait(self.args.holdSeconds)  # blocks the caller's thread: its event loop

    def _status(self, code: str, message: str) -> Status | None:
        if code == "skip":
            return Status.skip()
        if code == "unschedulable":
            return Status.unschedulable(message)
        if code == "unresolvable":
            return Status.unresolvable(message)
        if code == "error":
            return Status.error(message)
        return None

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        self._record("PreFilter", pod)
        if self.args.preFilterNodes is not None:
            return PreFilterResult(frozenset(self.args.preFilterNodes))
        return self._status(self.args.preFilter, f"{self.name} refused the pod")

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        self._record("Filter", pod, node.name)
        if node.name in self.args.filterRejects:
            return Status.unschedulable(f"node(s) were refused by {self.name}")
        return None

    async def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> PostFilterResult | Status | None:
        self._record("PostFilter", pod)
        if self.args.postFilter == "success":
            return PostFilterResult(self.args.postFilterNode)
        return self._status(self.args.postFilter, f"{self.name} has nothing to offer")

    def pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfoView]
    ) -> Status | None:
        self._record("PreScore", pod)
        return self._status(self.args.preScore, f"{self.name} cannot score")

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        self._record("Score", pod, node.name)
        return self.args.scores.get(node.name, 0)

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        if self.args.normalize == "invert":
            for entry in scores:
                entry.score = 100 - entry.score
        elif self.args.normalize == "zero":
            for entry in scores:
                entry.score = 0
        elif self.args.normalize == "error":
            return Status.error(f"{self.name} cannot normalize")
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._record("Reserve", pod, node_name)
        return self._status(self.args.reserve, f"{self.name} cannot reserve")

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._record("Unreserve", pod, node_name)

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._record("Permit", pod, node_name)
        if self.args.permit == "wait":
            return Status.wait(self.args.permitWaitSeconds)
        return self._status(self.args.permit, f"{self.name} does not permit it")

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._record("PreBind", pod, node_name)
        return None

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._record("Bind", pod, node_name)
        if self.args.bind == "bind":
            SCRIPT_BINDINGS.append((self.name, pod.name, node_name))
            return None
        return self._status(self.args.bind, f"{self.name} cannot bind")

    async def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._record("PostBind", pod, node_name)


class ScriptA(Script):
    name = "ScriptA"


class ScriptB(Script):
    name = "ScriptB"


class ScriptC(Script):
    name = "ScriptC"


class ScriptHinted(Script):
    name = "ScriptHinted"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        label = self.args.wakeOnLabel

        def hint(pod: Pod, old: object, new: object) -> str:
            assert isinstance(new, Node)
            HINT_CALLS.append((pod.name, new.name))
            return QUEUE if label in new.labels else QUEUE_SKIP

        event = ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        return [ClusterEventWithHint(event, hint)]
