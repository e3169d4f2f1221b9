"""PodGroup status, kept up to date as scheduler-plugins v0.30's PodGroup controller does.

scheduler-plugins runs a controller beside its scheduler that writes each PodGroup's
``status``; this operator does its work (so that ``kubectl get podgroups`` shows the
same columns without it). :func:`next_status` is that controller's ``Reconcile`` as a
pure function of the group and its member pods (those labelled
``scheduling.x-k8s.io/pod-group: NAME`` in its namespace, whatever their phase):

=================  ============================================================
phase now          next
=================  ============================================================
(none)             Pending
Pending            Scheduling once the group has ``minMember`` pods (and
                   ``occupiedBy``: the first pod's owners, ``ns/name`` sorted)
any other          the counts of Running, Succeeded and Failed pods are written;
                   Pending when fewer than ``minMember`` pods exist, else
                   Scheduling while running + succeeded < minMember, Running once
                   they reach it, Failed when a pod failed and failed + running +
                   succeeded reach it, Finished when succeeded reach it
Finished, Failed   final: never written again
=================  ============================================================

Upstream takes one step per reconcile (each write triggers the next); here the steps are
taken until nothing changes, and the result is written once. ``scheduleStartTime``,
which v0.30 defines but never writes, is set when the group first reaches Scheduling.
(Upstream also lists member pods of every namespace: here only the group's own.)

**Which groups.** Those of the namespaces this scheduler schedules (all by default),
except a group whose member pods all belong to other schedulers (another scheduler's
controller keeps that one).

**How it is written.** Every pod event about a member, and every event of the group
itself, marks the group; a task then computes its status from the members known at
that moment and writes it with a merge patch of ``status`` through the report lane of
the API (never in the scheduling loop, and never delaying a binding). Writes are
coalesced per group: one in flight at a time, and the marks made meanwhile give one
more write after it. A status equal to the one the watch shows is not written (our own
write comes back as an event, which then changes nothing). Only the leader writes; a
new leader lists the cluster first, which marks every group again.

The members are tracked here from the pod watch, because the scheduler's cache forgets
finished pods, and the controller counts them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..kinds import POD, POD_GROUP
from ..objects import (
    POD_GROUP_FAILED,
    POD_GROUP_FINISHED,
    POD_GROUP_LABEL,
    POD_GROUP_PENDING,
    POD_GROUP_RUNNING,
    POD_GROUP_SCHEDULING,
    Pod,
    PodGroup,
)
from ..state.world import DELETED, World
from ..state.world import Outcome as WorldOutcome
from .reporting import now_rfc3339

logger = logging.getLogger(__name__)

#: Steps of the controller taken at most per write ("" -> Pending -> Scheduling -> ...).
MAX_STEPS = 4


class PodGroupApi(Protocol):
    """The one call this module makes (:meth:`.kubeapi.KubeApi.patch_pod_group_status`)."""

    async def patch_pod_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class Member:
    """What the status of a member pod's group depends on."""

    phase: str
    scheduler_name: str
    #: ``ns/owner-name`` of each owner reference (``occupiedBy``).
    owners: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """The status fields the controller writes."""

    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str = ""
    occupied_by: str = ""

    @classmethod
    def of(cls, group: PodGroup) -> GroupStatus:
        return cls(
            group.phase,
            group.running,
            group.succeeded,
            group.failed,
            group.schedule_start_time,
            group.occupied_by,
        )

    def to_patch(self) -> dict[str, Any]:
        """The ``status`` of a merge patch (an empty string field is left out)."""
        out: dict[str, Any] = {
            "phase": self.phase,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }
        if self.schedule_start_time:
            out["scheduleStartTime"] = self.schedule_start_time
        if self.occupied_by:
            out["occupiedBy"] = self.occupied_by
        return out


def _step(status: GroupStatus, min_member: int, members: list[Member], now: str) -> GroupStatus:
    """One reconcile of scheduler-plugins v0.30's PodGroup controller."""
    phase = status.phase
    if phase in (POD_GROUP_FINISHED, POD_GROUP_FAILED):
        return status
    if phase == "":
        return replace(status, phase=POD_GROUP_PENDING)
    if phase == POD_GROUP_PENDING:
        if len(members) < min_member:
            return status
        occupied = status.occupied_by
        if members and members[0].owners:
            occupied = ",".join(sorted(members[0].owners))
        return replace(
            status,
            phase=POD_GROUP_SCHEDULING,
            schedule_start_time=status.schedule_start_time or now,
            occupied_by=occupied,
        )
    running = sum(1 for m in members if m.phase == "Running")
    succeeded = sum(1 for m in members if m.phase == "Succeeded")
    failed = sum(1 for m in members if m.phase == "Failed")
    if len(members) < min_member:
        phase = POD_GROUP_PENDING
    else:
        if succeeded + running < min_member:
            phase = POD_GROUP_SCHEDULING
        if succeeded + running >= min_member:
            phase = POD_GROUP_RUNNING
        if failed != 0 and failed + running + succeeded >= min_member:
            phase = POD_GROUP_FAILED
        if succeeded >= min_member:
            phase = POD_GROUP_FINISHED
    start = status.schedule_start_time
    if phase == POD_GROUP_SCHEDULING and not start:
        start = now
    return GroupStatus(phase, running, succeeded, failed, start, status.occupied_by)


def next_status(group: PodGroup, members: Iterable[Member], now: str) -> GroupStatus:
    """The status the controller settles on for ``group`` (module docstring)."""
    listed = list(members)
    status = GroupStatus.of(group)
    for _ in range(MAX_STEPS):
        stepped = _step(status, group.min_member, listed, now)
        if stepped == status:
            break
        status = stepped
    return status


class PodGroupStatusWriter:
    """Marks groups as their pods and themselves change, and writes their status."""

    def __init__(
        self,
        api: PodGroupApi,
        world: World,
        *,
        is_leader: Callable[[], bool] = lambda: True,
        now: Callable[[], str] = now_rfc3339,
    ) -> None:
        self.api = api
        self.world = world
        self.is_leader = is_leader
        self.now = now
        self._tasks: set[asyncio.Task[None]] = set()
        #: Member pod uid -> (group key, what counts of it).
        self._members: dict[str, tuple[str, Member]] = {}
        #: Group key -> its member pods' uids.
        self._groups: dict[str, dict[str, None]] = {}
        #: Groups to write (marked since their last write began), and those being written.
        self._marked: set[str] = set()
        self._writing: set[str] = set()
        #: Group key -> (its uid, the status last written), until the watch shows it.
        self._sent: dict[str, tuple[str, GroupStatus]] = {}

    # -- what the watches report ---------------------------------------------------------

    def observe(self, outcome: WorldOutcome, event_type: str | None) -> None:
        """One filed object (``SchedulerRuntime._tell``): a pod or a PodGroup."""
        kind = outcome.kind
        if kind is POD:
            if event_type == DELETED:
                self._forget(outcome.key)
            elif isinstance(outcome.obj, Pod):
                self._pod(outcome.obj)
        elif kind is POD_GROUP and outcome.key:
            self.mark(outcome.key)

    def _pod(self, pod: Pod) -> None:
        name = pod.labels.get(POD_GROUP_LABEL)
        if not name:
            if pod.uid in self._members:
                self._forget(pod.uid)  # relabelled out of its group
            return
        key = f"{pod.namespace}/{name}"
        member = Member(
            pod.phase,
            pod.scheduler_name,
            tuple(f"{pod.namespace}/{ref.name}" for ref in pod.owner_references),
        )
        known = self._members.get(pod.uid)
        if known == (key, member):
            return  # nothing the status depends on changed (a binding, a condition)
        if known is not None and known[0] != key:
            self._forget(pod.uid)
        self._members[pod.uid] = (key, member)
        self._groups.setdefault(key, {})[pod.uid] = None
        self.mark(key)

    def _forget(self, uid: str) -> None:
        known = self._members.pop(uid, None)
        if known is None:
            return
        key = known[0]
        uids = self._groups.get(key)
        if uids is not None:
            uids.pop(uid, None)
            if not uids:
                del self._groups[key]
        self.mark(key)

    def members(self, key: str) -> list[Member]:
        """The group's member pods, in the order they were first seen."""
        return [self._members[uid][1] for uid in self._groups.get(key, ())]

    # -- writing -------------------------------------------------------------------------

    def mark(self, key: str) -> None:
        """The group's status may have changed: have it written (coalesced)."""
        self._marked.add(key)
        if key in self._writing or not self.is_leader():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a synchronous caller: written at the next mark
            return
        self._writing.add(key)
        task = loop.create_task(self._write(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _ours(self, group: PodGroup, members: list[Member]) -> bool:
        world = self.world
        if world.namespaces and group.namespace not in world.namespaces:
            return False
        serves = world.book.serves
        return not members or any(serves(m.scheduler_name) for m in members)

    async def _write(self, key: str) -> None:
        try:
            while key in self._marked and self.is_leader():
                self._marked.discard(key)
                await self._write_once(key)
        except Exception:  # a report: never the scheduler's failure
            logger.exception("could not write the status of PodGroup %s", key)
        finally:
            self._writing.discard(key)

    async def _write_once(self, key: str) -> None:
        group = self.world.cache.cluster.pod_groups.get(key)
        if group is None:
            return  # deleted, or not (yet) known: its next event marks it again
        members = self.members(key)
        if not self._ours(group, members):
            return
        status = next_status(group, members, self.now())
        if status == GroupStatus.of(group):
            self._sent.pop(key, None)  # the watch shows it
            return
        if self._sent.get(key) == (group.uid, status):
            return  # written; the watch has not shown it yet
        code = await self.api.patch_pod_group_status(group.namespace, group.name, status.to_patch())
        if code < 300:
            self._sent[key] = (group.uid, status)
        elif code != 404:
            logger.warning(
                "could not write the status of PodGroup %s: %s",
                key,
                f"HTTP {code}" if code else "no answer",
            )

    async def flush(self) -> None:
        """Wait for the writes under way (shutdown, tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
