"""Which SchedulingPolicy serves which schedulerName: the policy acceptance state machine.

Each SchedulingPolicy object the operator sees goes through::

    apply(obj) ──valid, name free──────────> Accepted (serves spec.schedulerName)
        │      ──valid, name claimed by an older policy──> Rejected: SchedulerNameConflict
        │      ──invalid──> Rejected: Invalid (a previously accepted version keeps serving)
    apply(obj) ──valid, serves "default-scheduler" without the run flag──> Rejected:
        │         DefaultSchedulerNotAllowed (kube-scheduler's name: see below)
    remove(name) ──> its schedulerName is freed: the oldest policy waiting for the name
                     is accepted in its place; if none, pods with that name wait
                     (the name is remembered as orphaned), except for the default name,
                     which the built-in default policy serves again. An update that
                     changes the schedulerName a policy serves orphans the old name too.

An accepted policy whose predicates leave out one that keeps placements correct
(``policy.SAFEGUARDS``: resources, ports, selectors, taints, pod affinity, topology spread,
volumes) is accepted all the same, its message ending with a warning naming them.

``default-scheduler`` is kube-scheduler's own name: an active policy claiming it is
refused (``DefaultSchedulerNotAllowed``, its message saying how to allow it) unless the
book is told to serve it (``run --allow-default-scheduler``, the chart's
``allowDefaultScheduler``), so that applying an example never takes over kube-scheduler's
pods. A Shadow policy of it is accepted either way: it never binds.

"Older" is by ``metadata.creationTimestamp``, then name, so the outcome does not depend
on the order events arrive in. Every call returns the :class:`Verdict` of each policy
whose verdict changed, for the operator to write into ``status``.

Shadow policies (``spec.mode: Shadow``) never claim a name, so they never conflict and
never serve: :meth:`PolicyBook.policy_for` and everything that decides which pods are
served ignore them, and :meth:`PolicyBook.shadows_of` lists them per name. A valid
shadow is accepted whatever else exists; its verdict says what it is compared with::

    apply(obj with mode: Shadow) ──valid──> Accepted, reason Shadow (an active policy,
        │                                   or the built-in default, serves its name)
        │                        ──valid──> Accepted, reason NoActivePolicy (nothing to
        │                                   compare with: its name's pods wait)
        └── invalid ──> Rejected: Invalid (a previously accepted version keeps shadowing)

The two reasons follow the active side: a policy taking or freeing the name re-judges
its shadows. Promotion is ``mode: Active``: the policy then claims its name by the rule
above (the older of two active claimants serves, the later is refused), and a demoted
policy (``mode: Shadow``) frees its name at once for the next claimant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.compiler import CompiledPolicy, compile_policy
from ..engine.interface import Handle
from ..kinds import PolicyObject
from ..names import DEFAULT_SCHEDULER_NAME, KUBE_SCHEDULER_NAME
from ..policy import PolicyError, SchedulingPolicy, default_policy, missing_safeguards

ACCEPTED = "Accepted"
INVALID = "Invalid"
CONFLICT = "SchedulerNameConflict"
#: Accepted as a shadow of the policy serving its name.
SHADOW = "Shadow"
#: Accepted as a shadow, but no policy serves its name: nothing to compare with.
NO_ACTIVE_POLICY = "NoActivePolicy"
#: An active policy serving kube-scheduler's name, without the operator told to serve it.
DEFAULT_SCHEDULER_NOT_ALLOWED = "DefaultSchedulerNotAllowed"
#: What a policy refused for serving it is told.
DEFAULT_SCHEDULER_MESSAGE = (
    f'schedulerName "{KUBE_SCHEDULER_NAME}" is kube-scheduler\'s: the operator serves it '
    "only when run with --allow-default-scheduler (chart value allowDefaultScheduler: "
    "true); use a schedulerName of its own, or allow it"
)


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
    #: The schedulerName whose decisions this policy shadows now (its version in
    #: service is a Shadow one), if any.
    shadowing: str | None = None


@dataclass(slots=True)
class _Record:
    name: str
    created: float
    generation: int
    wanted_name: str | None  # schedulerName of the latest spec, None if invalid
    candidate: CompiledPolicy | None  # latest valid version
    serving: CompiledPolicy | None  # version in service (last accepted), maybe a shadow
    verdict: Verdict | None = None
    extenders: int = 0  # in the latest valid spec
    source: SchedulingPolicy | None = None  # what ``candidate`` was compiled from

    @property
    def claim(self) -> str | None:
        """The schedulerName this record claims: its latest valid version's, if active;
        else (invalid now) the active version still in service's."""
        if self.candidate is not None:
            return _active_name(self.candidate)
        return _active_name(self.serving)

    def serving_names(self) -> tuple[str | None, str | None]:
        """(the name it serves, the name it shadows) with its version in service."""
        if self.serving is None:
            return None, None
        if self.serving.shadow is not None:
            return None, self.serving.scheduler_name
        return self.serving.scheduler_name, None


def _active_name(policy: CompiledPolicy | None) -> str | None:
    return policy.scheduler_name if policy is not None and policy.shadow is None else None


class PolicyBook:
    """Which accepted policy serves which schedulerName (see the module docstring)."""

    def __init__(
        self,
        default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        *,
        serve_all: CompiledPolicy | None = None,
        handle: Handle | None = None,
        allow_default_scheduler: bool = True,
    ) -> None:
        """``serve_all``: one policy for every schedulerName (``simulate --policy``);
        ``handle``: what the policies' plugins are given (the scheduler's);
        ``allow_default_scheduler``: whether a policy may serve ``default-scheduler``
        (the operator's ``--allow-default-scheduler``; offline commands decide anyway)."""
        self.default_scheduler_name = default_scheduler_name
        self.allow_default_scheduler = allow_default_scheduler
        self._serve_all = serve_all
        self.handle = handle
        self._records: dict[str, _Record] = {}
        self._orphaned: set[str] = set()
        self._removed_serving: set[str] = set()
        builtin = default_policy()
        spec = builtin.spec.model_copy(update={"schedulerName": default_scheduler_name})
        self._builtin = compile_policy(SchedulingPolicy(name=builtin.name, spec=spec), handle)

    # -- lookups -----------------------------------------------------------------------

    def versions(self) -> tuple[CompiledPolicy | None, ...]:
        """The compiled policies the book holds (in service and latest): the same
        objects before and after :meth:`apply` when the object changed nothing that
        schedules (our own status write, come back as an event)."""
        found = [self._serve_all]
        for record in self._records.values():
            found += [record.serving, record.candidate]
        return tuple(found)

    def policy_for(self, scheduler_name: str) -> CompiledPolicy | None:
        """The active policy deciding (and binding) pods of ``scheduler_name``."""
        if self._serve_all is not None:
            return self._serve_all
        for record in self._records.values():
            if _active_name(record.serving) == scheduler_name:
                return record.serving
        if scheduler_name == self.default_scheduler_name:
            return self._builtin
        return None

    def shadows_of(self, scheduler_name: str) -> list[CompiledPolicy]:
        """The Shadow policies of ``scheduler_name``, oldest first (none with
        ``serve_all``: one policy decides everything then)."""
        if self._serve_all is not None:
            return []
        return [
            record.serving
            for record in sorted(self._records.values(), key=lambda r: (r.created, r.name))
            if record.serving is not None
            and record.serving.shadow is not None
            and record.serving.scheduler_name == scheduler_name
        ]

    def served_names(self) -> set[str]:
        names = {name for r in self._records.values() if (name := self._served(r)) is not None}
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
            if obj.policy is not None and (record.candidate is None or obj.policy != record.source):
                # Compiled again only when the spec changed: our own status writes come
                # back as events, and a policy's identity keys the schedulers' caches
                # (equivalence tables, a shadow's window).
                record.candidate = compile_policy(obj.policy, self.handle)
                record.source = obj.policy
                record.wanted_name = record.candidate.scheduler_name
                record.extenders = len(obj.policy.spec.extenders)
        except PolicyError as exc:
            error = str(exc)
            reason = exc.reason
        else:
            reason = obj.reason
            if error is None and self._refused_default(record.candidate):
                error, reason = DEFAULT_SCHEDULER_MESSAGE, DEFAULT_SCHEDULER_NOT_ALLOWED
        if error is not None:
            record.candidate = None
            record.wanted_name = None
        changed = self._settle()
        if error is not None:
            verdict = Verdict(name, False, reason, error, generation, *record.serving_names())
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
        served = self._served(record)
        if served is not None:
            self._removed_serving.add(served)
        return self._settle()

    def _refused_default(self, policy: CompiledPolicy | None) -> bool:
        """An active policy claiming kube-scheduler's name, which the book may not serve."""
        return not self.allow_default_scheduler and _active_name(policy) == KUBE_SCHEDULER_NAME

    @staticmethod
    def _served(record: _Record) -> str | None:
        return record.serving_names()[0]

    def _settle(self) -> list[Verdict]:
        """Give each schedulerName to its oldest valid claimant; report what changed.

        A name that was served before and is served by nobody now (its policy was
        deleted, or renamed the schedulerName it serves) becomes orphaned.
        """
        served_before = {n for r in self._records.values() if (n := self._served(r)) is not None}
        served_before |= self._removed_serving
        self._removed_serving = set()
        changed = self._hand_out()
        served_now = {n for r in self._records.values() if (n := self._served(r)) is not None}
        self._orphaned |= served_before - served_now
        self._orphaned -= served_now
        return changed

    def _hand_out(self) -> list[Verdict]:
        order = sorted(self._records.values(), key=lambda r: (r.created, r.name))
        owner: dict[str, str] = {}
        for record in order:
            # An invalid policy still serving its last accepted version keeps its claim:
            # a broken update must not hand its name to a younger rival. Shadows claim
            # nothing.
            claim = record.claim
            if claim is not None and claim not in owner:
                owner[claim] = record.name
        for record in order:
            if record.candidate is not None:
                if record.candidate.shadow is not None:
                    record.serving = record.candidate  # a valid shadow always runs
                elif owner.get(record.wanted_name or "") == record.name:
                    record.serving = record.candidate
                else:
                    record.serving = None
            elif (served := self._served(record)) is not None:
                # Invalid now; the last accepted version keeps serving unless someone
                # older now validly claims the same name.
                other = owner.get(served)
                if other is not None and other != record.name:
                    record.serving = None
        # Judged once every name has its server: a shadow's verdict names it.
        changed: list[Verdict] = []
        for record in order:
            verdict = record.verdict
            if record.candidate is not None:
                verdict = self._judge(record)
            elif verdict is not None:
                # Still invalid; only what it serves or shadows (if anything) may have
                # changed.
                now_serving, now_shadowing = record.serving_names()
                verdict = replace(verdict, serving=now_serving, shadowing=now_shadowing)
            if verdict != record.verdict and verdict is not None:
                record.verdict = verdict
                changed.append(verdict)
        return changed

    def _judge(self, record: _Record) -> Verdict:
        if record.candidate is not None and record.candidate.shadow is not None:
            return self._judge_shadow(record, record.candidate.scheduler_name)
        serving = self._served(record)
        if record.candidate is not None and record.serving is record.candidate:
            return Verdict(
                record.name,
                True,
                ACCEPTED,
                f'serving schedulerName "{serving}"'
                + _extenders_note(record.extenders)
                + _safeguards_note(record.source),
                record.generation,
                serving,
            )
        holder = next(
            (r.name for r in self._records.values() if self._served(r) == record.wanted_name),
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

    def _judge_shadow(self, record: _Record, name: str) -> Verdict:
        """Accepted either way; the message says what it is compared with, if anything."""
        active = self.policy_for(name)
        note = f"; its {record.extenders} HTTP extender(s) are not called in Shadow mode"
        note = note if record.extenders else ""
        if active is None:
            reason = NO_ACTIVE_POLICY
            message = (
                f'no active SchedulingPolicy serves schedulerName "{name}": nothing to '
                "compare with (its pods wait for one)"
            )
        else:
            reason = SHADOW
            what = (
                "the built-in default policy"
                if active is self._builtin
                else f'SchedulingPolicy "{active.name}"'
            )
            message = (
                f'shadowing {what} on schedulerName "{name}": deciding its pods too, never binding'
            )
        message += note + _safeguards_note(record.source)
        return Verdict(record.name, True, reason, message, record.generation, None, name)


def _safeguards_note(source: SchedulingPolicy | None) -> str:
    """Accepted without a predicate that keeps placements correct: say which, once."""
    missing = missing_safeguards(source.spec) if source is not None else []
    if not missing:
        return ""
    left_out = ", ".join(guard.name for guard in missing)
    return (
        f"; warning: spec.predicates leaves out {left_out}, so what they check is not "
        "checked (`policy-scheduler validate` says what each protects)"
    )


def _extenders_note(count: int) -> str:
    """Accepted with extenders: say how many it calls (``kubectl describe`` shows it)."""
    if not count:
        return ""
    return f"; calls {count} HTTP extender(s)"
