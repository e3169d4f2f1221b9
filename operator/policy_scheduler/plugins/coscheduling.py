"""Coscheduling: scheduler-plugins' gang scheduling (v0.30), planned as a whole.

Pods labelled ``scheduling.x-k8s.io/pod-group: NAME`` are members of the PodGroup
``NAME`` of their namespace (``scheduling.x-k8s.io/v1alpha1``, the CRD scheduler-plugins
ships); ``spec.minMember`` of them must run together. The plugin implements
scheduler-plugins v0.30's points, reading PodGroups and pods from the handle's snapshot:

* **QueueSort**: higher priority first; then the older PodGroup (a pod in none: the
  older pod), so that a group's members are next to each other; then the group's
  ``namespace/name`` and the pod's (upstream compares the pods' names only, which
  interleaves two groups created in the same second);
* **PreFilter** (UnschedulableAndUnresolvable, so no preemption is tried for it): the
  PodGroup must exist; it must not have failed within ``podGroupBackoffSeconds``; it
  must have at least ``minMember`` pods (placed or pending); the cluster must have
  ``minResources`` free (the group's own placed pods not counted against it; a pass is
  remembered for ``permitWaitingTimeSeconds``);
* **PostFilter**: a member that fits nowhere while the group is more than 10% short of
  its quorum backs the group off (``podGroupBackoffSeconds``) with upstream's message;
* **Permit**: a member waits (the PodGroup's ``scheduleTimeoutSeconds``, else
  ``permitWaitingTimeSeconds``) until ``minMember`` members are placed; the one that
  completes the quorum allows the group's waiting members;
* **Reserve** (nothing) / **Unreserve** (the group's waiting members are rejected);
* :class:`~policy_scheduler.framework.GangPlugin` ``gang_of``: the framework plans a
  group's pending members together on the snapshot, all or nothing (a group that cannot
  have ``minMember`` placed holds nothing: docs/gang-scheduling.md).

Unlike upstream, PostFilter does not reject the group's waiting members ("optimistic
rejection"): the planner keeps or gives up the whole group once every member has been
tried, so a member rejected half-way through the plan would only be lost to a group
that still reaches its quorum, and bound later on its own.

Nothing here imports anything but :mod:`policy_scheduler.framework` and pydantic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from policy_scheduler.framework import (
    POD_GROUP_LABEL,
    CycleState,
    Gang,
    GangPlugin,
    NodeInfoView,
    PermitPlugin,
    Pod,
    PodGroup,
    PostFilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    Snapshot,
    Status,
)

__all__ = ["Coscheduling", "CoschedulingArgs"]

#: scheduler-plugins' ``util.DefaultWaitTime``: the wait when nothing else says one.
DEFAULT_WAIT_SECONDS = 60
#: PostFilter leaves a group alone while it is at most this short of its quorum.
QUORUM_GAP = 0.1
#: An int64 of seconds, not negative (upstream refuses a negative backoff).
Seconds = Annotated[int, Field(ge=0, le=2**63 - 1)]


class CoschedulingArgs(BaseModel):
    """Coscheduling's arguments (scheduler-plugins' ``CoschedulingArgs``, v1 defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: How long a member waits at Permit for its group's quorum, when its PodGroup
    #: sets no ``scheduleTimeoutSeconds`` (0: 60 s).
    permitWaitingTimeSeconds: Seconds = 60
    #: After a group failed, how long its members are refused at once (0: never).
    podGroupBackoffSeconds: Seconds = 0


class Coscheduling(
    GangPlugin, QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, ReservePlugin, PermitPlugin
):
    """Gang scheduling of scheduler-plugins' PodGroups: a group's members are placed all
    or nothing (``minMember`` of them), planned together."""

    name = "Coscheduling"
    Args = CoschedulingArgs

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        checked: CoschedulingArgs = args if args is not None else CoschedulingArgs()
        self.args = checked
        #: Group key -> until when its members are refused (podGroupBackoffSeconds).
        self._backoff: dict[str, float] = {}
        #: Group key -> until when its minResources check holds (upstream's permittedPG).
        self._permitted: dict[str, float] = {}

    # -- reading the cluster -----------------------------------------------------------

    @staticmethod
    def _group_name(pod: Pod) -> str:
        return pod.labels.get(POD_GROUP_LABEL, "")

    def _group(self, snapshot: Snapshot, pod: Pod) -> PodGroup | None:
        name = self._group_name(pod)
        if not name:
            return None
        found = snapshot.objects("PodGroup").get(f"{pod.namespace}/{name}")
        return found if isinstance(found, PodGroup) else None

    @staticmethod
    def _placed(snapshot: Snapshot, group: PodGroup) -> Iterable[Pod]:
        """The group's placed members (bound or assumed)."""
        return snapshot.pods(group.namespace, labels={POD_GROUP_LABEL: group.name})

    @staticmethod
    def _members(snapshot: Snapshot, group: PodGroup, enough: int) -> int:
        """How many pods the group has, placed or pending; counting stops at ``enough``
        (the planner's members are looked at first: they are being scheduled)."""
        labels = {POD_GROUP_LABEL: group.name}
        count = 0
        for _ in snapshot.pods(group.namespace, labels=labels):
            count += 1
            if count >= enough:
                return count
        for _ in snapshot.pending_pods(group.namespace, labels=labels):
            count += 1
            if count >= enough:
                return count
        return count

    def _wait_seconds(self, group: PodGroup | None) -> float:
        """The PodGroup's scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60."""
        if group is not None and group.schedule_timeout_seconds:
            return float(group.schedule_timeout_seconds)
        return float(self.args.permitWaitingTimeSeconds or DEFAULT_WAIT_SECONDS)

    # -- GangPlugin ----------------------------------------------------------------------

    def gang_of(self, pod: Pod) -> Gang | None:
        snapshot = self.handle.snapshot()
        group = self._group(snapshot, pod)
        if group is None:
            return None  # in no group, or its PodGroup is missing (PreFilter says so)
        placed = sum(1 for member in self._placed(snapshot, group) if member.uid != pod.uid)
        return Gang(group.key, group.min_member, placed)

    def members_of(self, pod: Pod, gang: Gang) -> int | None:
        snapshot = self.handle.snapshot()
        group = self._group(snapshot, pod)
        return None if group is None else self._members(snapshot, group, group.min_member)

    # -- QueueSort -----------------------------------------------------------------------

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        snapshot = self.handle.snapshot()
        created_a, key_a = self._order(snapshot, a)
        created_b, key_b = self._order(snapshot, b)
        if created_a != created_b:
            return created_a < created_b
        return key_a < key_b

    def _order(self, snapshot: Snapshot, info: QueuedPodInfo) -> tuple[float, tuple[str, str]]:
        group = self._group(snapshot, info.pod)
        if group is not None:
            return group.created, (group.key, info.pod.key)
        return info.pod.created or info.timestamp, (info.pod.key, "")

    # -- PreFilter -----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        name = self._group_name(pod)
        if not name:
            return None
        snapshot = self.handle.snapshot()
        group = self._group(snapshot, pod)
        if group is None:
            return Status.unresolvable(f"PodGroup {pod.namespace}/{name} not found")
        now = self.handle.now()
        key = group.key
        until = self._backoff.get(key)
        if until is not None:
            if now < until:
                return Status.unresolvable(f"podGroup {key} failed recently")
            del self._backoff[key]
        members = self._members(snapshot, group, group.min_member)
        if members < group.min_member:
            return Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {members}, minMember of group: {group.min_member}"
            )
        if group.min_resources is None or self._permitted.get(key, float("-inf")) > now:
            return None
        gap = _resource_gap(snapshot, group)
        if gap:
            return Status.unresolvable(f"resource gap: {gap}")
        self._permitted[key] = now + self._wait_seconds(None)
        return None

    # -- PostFilter ----------------------------------------------------------------------

    async def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> Status | None:
        if not self._group_name(pod):
            return Status.unschedulable()  # not a gang's: nothing to say
        snapshot = self.handle.snapshot()
        group = self._group(snapshot, pod)
        if group is None:
            return Status.unschedulable("can not find pod group")
        assigned = sum(1 for _ in self._placed(snapshot, group))
        if assigned >= group.min_member:
            return Status.unschedulable()  # the quorum is there: the group stands
        if (group.min_member - assigned) / group.min_member <= QUORUM_GAP:
            return Status.unschedulable()  # a small gap: later members may close it
        backoff = self.args.podGroupBackoffSeconds
        if backoff and self._members(snapshot, group, group.min_member) >= group.min_member:
            self._backoff[group.key] = self.handle.now() + backoff
        self._permitted.pop(group.key, None)
        return Status.unschedulable(
            f"PodGroup {group.key} gets rejected due to Pod {pod.name} "
            "is unschedulable even after PostFilter"
        )

    # -- Reserve / Unreserve -------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        name = self._group_name(pod)
        if not name:
            return
        for waiting in self.handle.waiting_pods():
            other = waiting.pod
            if other.namespace == pod.namespace and self._group_name(other) == name:
                waiting.reject(self.name, "rejection in Unreserve")
        self._permitted.pop(f"{pod.namespace}/{name}", None)

    # -- Permit --------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        name = self._group_name(pod)
        if not name:
            return None
        snapshot = self.handle.snapshot()
        group = self._group(snapshot, pod)
        if group is None:
            return Status.unschedulable("PodGroup not found")
        # The pod is assumed already, so it is among the placed members.
        placed = {member.uid for member in self._placed(snapshot, group)} | {pod.uid}
        if len(placed) < group.min_member:
            return Status.wait(self._wait_seconds(group))
        for waiting in self.handle.waiting_pods():
            other = waiting.pod
            if other.namespace == group.namespace and self._group_name(other) == group.name:
                waiting.allow(self.name)
        return None


def _resource_gap(snapshot: Snapshot, group: PodGroup) -> str:
    """What the cluster lacks for the group's ``minResources`` plus ``minMember`` pods
    (scheduler-plugins' ``CheckClusterResource``): "" when the nodes' free resources,
    the group's own placed pods not counted as using any, add up to enough."""
    wanted = group.min_resources
    assert wanted is not None
    need: dict[str, int] = {
        "cpu": wanted.milli_cpu,
        "memory": wanted.memory,
        "ephemeral-storage": wanted.ephemeral_storage,
        **wanted.scalar,
        "pods": group.min_member,
    }
    need = {name: amount for name, amount in need.items() if amount > 0}
    own: dict[str, list[Pod]] = {}
    for member in snapshot.pods(group.namespace, labels={POD_GROUP_LABEL: group.name}):
        own.setdefault(member.node_name, []).append(member)
    for info in snapshot.nodes():
        free = _free(info, own.get(info.name, ()))
        for name in list(need):
            left = need[name] - max(0, free.get(name, 0))
            if left > 0:
                need[name] = left
            else:
                del need[name]
        if not need:
            return ""
    return ", ".join(
        f"{name}: {amount}m" if name == "cpu" else f"{name}: {amount}"
        for name, amount in sorted(need.items())
    )


def _free(info: NodeInfoView, own: Iterable[Pod]) -> dict[str, int]:
    """A node's unrequested resources, the given pods' requests given back."""
    allocatable = info.allocatable
    mine = list(own)
    free = {
        "cpu": allocatable.milli_cpu - info.requested_cpu,
        "memory": allocatable.memory - info.requested_memory,
        "ephemeral-storage": allocatable.ephemeral_storage - info.requested_ephemeral,
        "pods": allocatable.allowed_pods - len(info.pods) + len(mine),
    }
    for name, amount in allocatable.scalar.items():
        free[name] = amount - info.requested_scalar.get(name, 0)
    for pod in mine:
        request = pod.node_request
        free["cpu"] += request.milli_cpu
        free["memory"] += request.memory
        free["ephemeral-storage"] += request.ephemeral_storage
        for name, amount in request.scalar.items():
            free[name] = free.get(name, 0) + amount
    return free
