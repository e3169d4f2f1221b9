"""Which SchedulingPolicy serves which schedulerName: the policy acceptance state machine.

Each SchedulingPolicy object the operator sees goes through::

    apply(obj) ──valid, name free──────────> Accepted (serves spec.schedulerName)
        │      ──valid, name claimed by an older policy──> Rejected: SchedulerNameConflict
        │      ──invalid──> Rejected: Invalid (a previously accepted version keeps serving)
    remove(name) ──> its schedulerName is freed: the oldest policy waiting for the name
                     is accepted in its place; if none, pods with that name wait
                     (the name is remembered as orphaned), except for the default name,
                     which the built-in default policy serves again. An update that
                     changes the schedulerName a policy serves orphans the old name too.

"Older" is by ``metadata.creationTimestamp``, then name, so the outcome does not depend
on the order events arrive in. Every call returns the :class:`Verdict` of each policy
whose verdict changed, for the operator to write into ``status``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.compiler import CompiledPolicy, compile_policy
from ..kinds import PolicyObject
from ..names import DEFAULT_SCHEDULER_NAME
from ..policy import PolicyError, SchedulingPolicy, default_policy

ACCEPTED = "Accepted"
INVALID = "Invalid"
CONFLICT = "SchedulerNameConflict"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the book decided about one policy: what its Accepted condition says."""

    name: str
    accepted: bool
    reason: str
    message: str
    generation: int
    #: The schedulerName this policy serves now (its last accepted version's), if any.
    serving: str | None


@dataclass(slots=True)
class _Record:
    name: str
    created: float
    generation: int
    wanted_name: str | None  # schedulerName of the latest spec, None if invalid
    candidate: CompiledPolicy | None  # latest valid version
    serving: CompiledPolicy | None  # version in service (last accepted)
    verdict: Verdict | None = None
    extenders: int = 0  # in the latest valid spec


class PolicyBook:
    """Which accepted policy serves which schedulerName (see the module docstring)."""

    def __init__(
        self,
        default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        *,
        serve_all: CompiledPolicy | None = None,
    ) -> None:
        """``serve_all``: one policy for every schedulerName (``simulate --policy``)."""
        self.default_scheduler_name = default_scheduler_name
        self._serve_all = serve_all
        self._records: dict[str, _Record] = {}
        self._orphaned: set[str] = set()
        self._removed_serving: set[str] = set()
        builtin = default_policy()
        spec = builtin.spec.model_copy(update={"schedulerName": default_scheduler_name})
        self._builtin = compile_policy(SchedulingPolicy(name=builtin.name, spec=spec))

    # -- lookups -----------------------------------------------------------------------

    def policy_for(self, scheduler_name: str) -> CompiledPolicy | None:
        if self._serve_all is not None:
            return self._serve_all
        for record in self._records.values():
            if record.serving is not None and record.serving.scheduler_name == scheduler_name:
                return record.serving
        if scheduler_name == self.default_scheduler_name:
            return self._builtin
        return None

    def served_names(self) -> set[str]:
        names = {r.serving.scheduler_name for r in self._records.values() if r.serving}
        names.add(self.default_scheduler_name)
        return names

    def orphaned(self, scheduler_name: str) -> bool:
        """A name a deleted policy served and no policy serves now: its pods wait."""
        return scheduler_name in self._orphaned and self.policy_for(scheduler_name) is None

    def verdict(self, name: str) -> Verdict | None:
        record = self._records.get(name)
        return record.verdict if record is not None else None

    # -- transitions ---------------------------------------------------------------------

    def serves(self, scheduler_name: str) -> bool:
        return self.policy_for(scheduler_name) is not None

    def apply(self, obj: PolicyObject) -> list[Verdict]:
        name, generation = obj.name, obj.generation
        record = self._records.get(name)
        if record is None:
            record = _Record(
                name=name,
                created=obj.created,
                generation=generation,
                wanted_name=None,
                candidate=None,
                serving=None,
            )
            self._records[name] = record
        record.generation = generation
        error = obj.error
        try:
            if obj.policy is not None:
                record.candidate = compile_policy(obj.policy)
                record.wanted_name = record.candidate.scheduler_name
                record.extenders = len(obj.policy.spec.extenders)
        except PolicyError as exc:
            error = str(exc)
        if error is not None:
            record.candidate = None
            record.wanted_name = None
        changed = self._settle()
        if error is not None:
            verdict = Verdict(
                name,
                False,
                INVALID,
                error,
                generation,
                record.serving.scheduler_name if record.serving else None,
            )
            record.verdict = verdict
            changed = [v for v in changed if v.name != name] + [verdict]
        elif record.verdict is None or all(v.name != name for v in changed):
            # Re-applying the same generation: report the current verdict again.
            verdict = self._judge(record)
            record.verdict = verdict
            changed = [v for v in changed if v.name != name] + [verdict]
        return changed

    def remove(self, name: str) -> list[Verdict]:
        record = self._records.pop(name, None)
        if record is None:
            return []
        if record.serving is not None:
            self._removed_serving.add(record.serving.scheduler_name)
        return self._settle()

    def _settle(self) -> list[Verdict]:
        """Give each schedulerName to its oldest valid claimant; report what changed.

        A name that was served before and is served by nobody now (its policy was
        deleted, or renamed the schedulerName it serves) becomes orphaned.
        """
        served_before = {r.serving.scheduler_name for r in self._records.values() if r.serving}
        served_before |= self._removed_serving
        self._removed_serving = set()
        changed = self._hand_out()
        served_now = {r.serving.scheduler_name for r in self._records.values() if r.serving}
        self._orphaned |= served_before - served_now
        self._orphaned -= served_now
        return changed

    def _hand_out(self) -> list[Verdict]:
        order = sorted(self._records.values(), key=lambda r: (r.created, r.name))
        owner: dict[str, str] = {}
        for record in order:
            # An invalid policy still serving its last accepted version keeps its claim:
            # a broken update must not hand its name to a younger rival.
            claim = record.wanted_name
            if record.candidate is None and record.serving is not None:
                claim = record.serving.scheduler_name
            if claim is not None and claim not in owner:
                owner[claim] = record.name
        changed: list[Verdict] = []
        for record in order:
            if record.candidate is not None:
                if owner.get(record.wanted_name or "") == record.name:
                    record.serving = record.candidate
                else:
                    record.serving = None
            elif record.serving is not None:
                # Invalid now; the last accepted version keeps serving unless someone
                # older now validly claims the same name.
                other = owner.get(record.serving.scheduler_name)
                if other is not None and other != record.name:
                    record.serving = None
            verdict = record.verdict
            if record.candidate is not None:
                verdict = self._judge(record)
            elif verdict is not None:
                # Still invalid; only what it serves (if anything) may have changed.
                now_serving = record.serving.scheduler_name if record.serving else None
                verdict = replace(verdict, serving=now_serving)
            if verdict != record.verdict and verdict is not None:
                record.verdict = verdict
                changed.append(verdict)
        return changed

    def _judge(self, record: _Record) -> Verdict:
        serving = record.serving.scheduler_name if record.serving else None
        if record.candidate is not None and record.serving is record.candidate:
            return Verdict(
                record.name,
                True,
                ACCEPTED,
                f'serving schedulerName "{serving}"' + _extenders_note(record.extenders),
                record.generation,
                serving,
            )
        holder = next(
            (
                r.name
                for r in self._records.values()
                if r.serving is not None and r.serving.scheduler_name == record.wanted_name
            ),
            "?",
        )
        return Verdict(
            record.name,
            False,
            CONFLICT,
            f'schedulerName "{record.wanted_name}" is already served by SchedulingPolicy '
            f'"{holder}"',
            record.generation,
            serving,
        )


def _extenders_note(count: int) -> str:
    """Accepted with extenders: say how many it calls (``kubectl describe`` shows it)."""
    if not count:
        return ""
    return f"; calls {count} HTTP extender(s)"
