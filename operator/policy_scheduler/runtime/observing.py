"""The watch side of the runtime: objects in, and who must hear of them.

The Kopf handlers and the LISTs (the first one, and every resync) call
:meth:`WatchSide.handle` / :meth:`WatchSide.resync` with each object; the world parses
it once and files it (``state/world.py``), and the outcome goes to each observer,
registered once, in order:

* the PodGroup status writer (a member came, went or was placed);
* the volume binder, which waits on PVs and PVCs and writes from their last copy;
* a pod the scheduler cannot read gets a Warning ``FailedScheduling`` event (never
  dropped silently, never fatal); another object it cannot read is logged;
* a pod whose policy went away gets the ``NoSchedulingPolicy`` condition;
* a nomination the world found stale is cleared in the API;
* a policy: its status (verdicts written, shadows' windows forgotten on deletion);
* a pod deleted: its reports forgotten, its volume wait ended, and if a Permit plugin
  held it, let go (kube-scheduler rejects it).

Synchronous and cheap: writes to the API go to background tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any

from ..kinds import POD, SCHEDULING_POLICY, Kind, PolicyObject
from ..objects import Pod
from ..state.cache import VOLUME_KINDS
from ..state.shadows import ShadowRunner
from ..state.world import DELETED, World
from ..state.world import Outcome as WorldOutcome
from .podgroups import PodGroupStatusWriter
from .policies import PolicyStatusWriter
from .reporting import Reporter
from .volumebinding import VolumeBinder

logger = logging.getLogger(__name__)

NO_POLICY_REASON = "NoSchedulingPolicy"

#: Who hears of an observed object: its outcome, the event's type, the object (None
#: for a deletion a LIST revealed).
Observer = Callable[[WorldOutcome, str | None, Mapping[str, Any] | None], None]


class WatchSide:
    """Files watched and listed objects, and tells the observers (module docstring)."""

    def __init__(
        self,
        world: World,
        *,
        reporter: Reporter,
        report: Callable[[Coroutine[Any, Any, None]], None],
        pod_groups: PodGroupStatusWriter,
        volume_binder: VolumeBinder,
        policy_status: PolicyStatusWriter,
        shadows: ShadowRunner,
        clear_nomination: Callable[[Pod], None],
    ) -> None:
        self.world = world
        self.reporter = reporter
        self._report = report
        self.pod_groups = pod_groups
        self.volume_binder = volume_binder
        self.policy_status = policy_status
        self.shadows = shadows
        #: The first LIST went through (events of type None now mean a re-list).
        self.primed = False
        #: Called when a watch started over with a LIST (deletions may have been missed).
        self.on_relist: Callable[[], None] | None = None
        self.observers: tuple[Observer, ...] = (
            lambda outcome, event_type, raw: pod_groups.observe(outcome, event_type),
            self._volumes,
            self._unreadable,
            self._parked,
            lambda outcome, event_type, raw: (
                clear_nomination(outcome.stale_nomination)
                if outcome.stale_nomination is not None
                else None
            ),
            self._policy,
            self._pod_deleted,
        )

    def handle(
        self, event_type: str | None, raw: Mapping[str, Any], kind: Kind | None = None
    ) -> WorldOutcome:
        """One object from a watch event or a LIST: file it, then tell whom it concerns.

        Kopf delivers the items of its own LISTs as events of type None; after the first
        LIST of ours, such an event means a watch started over, and may have missed
        deletions: ``on_relist`` is told (the operator then reconciles).
        """
        outcome = self.world.observe(event_type, raw, kind)
        self._tell(outcome, event_type, raw)
        if event_type is None and self.primed and self.on_relist is not None:
            self.on_relist()
        return outcome

    def resync(self, kind: Kind, listed: Sequence[Mapping[str, Any]], since: float) -> int:
        """A LIST of ``kind`` begun at ``since``: file its objects (unless a watch event
        about one came since), then delete what it shows is gone. Returns how many."""
        return self.forget_unlisted(kind, self.file_listed(kind, listed, since), since)

    def file_listed(
        self, kind: Kind, listed: Sequence[Mapping[str, Any]], since: float
    ) -> set[str]:
        """File objects of a LIST of ``kind`` begun at ``since`` (all of it, or a page),
        unless a watch event about one came since; returns their identities."""
        for raw in listed:
            self._tell(self.world.observe(None, raw, kind, listed_since=since), None, raw)
        return {kind.identity(raw) for raw in listed}

    def forget_unlisted(self, kind: Kind, present: Collection[str], since: float) -> int:
        """Delete what a LIST of ``kind`` begun at ``since``, whose objects had the
        identities ``present``, shows is gone. Returns how many."""
        gone = self.world.reconcile(kind, present, since)
        for outcome in gone:
            self._tell(outcome, DELETED, None)
        return len(gone)

    def _tell(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        for observer in self.observers:
            observer(outcome, event_type, raw)

    # -- the observers -------------------------------------------------------------------

    def _volumes(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        if outcome.kind not in VOLUME_KINDS or outcome.error is not None:
            return
        if event_type == DELETED:
            self.volume_binder.deleted(outcome.kind, outcome.key)
        elif raw is not None:
            self.volume_binder.observe(event_type, raw, outcome.kind)

    def _unreadable(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        if outcome.error is None or raw is None:
            return
        if outcome.kind is POD:
            self._report_malformed_pod(raw, outcome.error)
        else:
            logger.warning("ignoring an object the scheduler cannot read: %s", outcome.error)

    def _parked(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        for pod in outcome.parked:
            self._report(self._no_policy(pod))

    def _policy(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        if outcome.kind is not SCHEDULING_POLICY:
            return
        if isinstance(outcome.obj, PolicyObject):
            self.policy_status.observe(outcome.obj)
        if outcome.verdicts:
            self._report(self.policy_status.write(outcome.verdicts))
        if event_type == DELETED:
            self.shadows.forget(outcome.key)

    def _pod_deleted(
        self, outcome: WorldOutcome, event_type: str | None, raw: Mapping[str, Any] | None
    ) -> None:
        if outcome.kind is not POD or event_type != DELETED or not outcome.key:
            return
        self.reporter.forget_pod(outcome.key)
        self.volume_binder.pod_deleted(outcome.key)
        self.world.handle.waiting.reject(outcome.key, "", "the pod was deleted")

    async def _no_policy(self, pod: Pod) -> None:
        message = (
            f'no accepted SchedulingPolicy serves schedulerName "{pod.scheduler_name}"; '
            "the pod waits until one does"
        )
        await self.reporter.pod_condition(pod, message, reason=NO_POLICY_REASON)

    def _report_malformed_pod(self, raw: Mapping[str, Any], message: str) -> None:
        logger.warning("cannot schedule a malformed pod: %s", message)
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
            return
        scheduler_name = spec.get("schedulerName") or "default-scheduler"
        if spec.get("nodeName") or not self.world.book.serves(str(scheduler_name)):
            return
        namespace, name = meta.get("namespace"), meta.get("name")
        if not namespace or not name:
            return
        self._report(
            self.reporter.event(
                namespace=str(namespace),
                involved={
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": namespace,
                    "name": name,
                    "uid": meta.get("uid", ""),
                },
                event_type="Warning",
                reason="FailedScheduling",
                message=f"the scheduler cannot read this pod: {message}",
                action="Scheduling",
                component=str(scheduler_name),
            )
        )
