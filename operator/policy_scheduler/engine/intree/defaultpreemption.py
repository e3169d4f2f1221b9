"""DefaultPreemption, kube-scheduler v1.30's PostFilter: make room for a pod that fits nowhere.

The v1.30 ``Evaluator.Preempt`` with DefaultPreemption's policies, run on the
cluster state itself through the legacy preemption's machinery (:mod:`..preemption`,
:mod:`..fitting`): a :meth:`~..cluster.ClusterState.trial` per node takes the
victims off and puts them back, undone exactly before the next node, and every check
runs the policy's filters with a fresh cycle state, nominated pods' two passes
included (``RunFilterPluginsWithNominatedPods``). Nothing is copied; nothing is changed
when the answer is returned (acting on it is the framework's).

1. **Eligibility** (``PodEligibleToPreemptOthers``): ``preemptionPolicy: Never`` ->
   ``not eligible due to preemptionPolicy=Never.``; a pod nominated to a node (its
   ``status.nominatedNodeName``, or the nomination the scheduler holds) may not preempt
   while a lower-priority pod there is terminating *because of a preemption* (its
   ``DisruptionTarget`` condition, reason ``PreemptionByScheduler``: the
   PodDisruptionConditions gate is on in v1.30) -> ``not eligible due to a terminating
   pod on the nominated node.``, unless the filters found that node
   UnschedulableAndUnresolvable for the pod, which makes it eligible again.
2. **Where it might help** (``nodesWherePreemptionMightHelp``): the nodes, in
   NodeTree order, whose Filter status is Unschedulable. A node the filters found
   UnschedulableAndUnresolvable (a reason wrapped in
   :class:`~..functions.Unresolvable`), or that they did not examine, is not one: it
   reads ``Preemption is not helpful for scheduling``. None left: the pod's own
   nomination is cleared and the answer is Unschedulable.
3. **How many to try** (``GetOffsetAndNumCandidates``): ``max(nodes *
   minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``, at most every node
   (defaults 10% and 100); starting at a random offset into the nodes, taken
   circularly. The offset comes from the plugin's ``random.Random``: seeded with 0 in
   ``simulate`` (the handle is offline), so a preview is reproducible; ``offsets`` may
   be replaced altogether.
4. **Dry run** (``DryRunPreemption``): node by node from the offset, in chunks that
   yield to the event loop (:func:`~..parallel.parallelize_until`),
   ``selectVictimsOnNode``: every lower-priority pod taken off (none:
   UnschedulableAndUnresolvable ``No preemption victims found for incoming pod``); the
   pod must then pass the filters (else that status); then the pods are put back one by
   one, most important first (higher priority, then earlier ``status.startTime``),
   those whose eviction would violate a PodDisruptionBudget before the others, each
   kept if the pod still fits; the rest are the victims. PDB counting is v1.30's: a
   budget of the pod's namespace whose selector (not nil, not empty) matches counts
   the pod against ``status.disruptionsAllowed`` *decremented pod by pod* (the first
   pods may fit in the budget, the later ones violate it), except pods already listed
   in its ``status.disruptedPods``. A node needing no victim is an Error for that node
   (``expected at least one victim pod on node "n"``), not a candidate. Candidates
   without PDB violations and those with are kept apart, each list at most the number
   to try; the run stops once there is at least one without and the two together
   reach that number.
5. **Extenders** with a ``preemptVerb`` narrow or veto the candidates (the legacy
   ``process`` hook, :data:`~..preemption.PreemptionHook`).
6. **The node** (``pickOneNodeForPreemption``, v1.30's order): the fewest PDB
   violations; then the lowest priority of the most important victim; then the lowest
   sum of victim priorities each offset by MaxInt32 + 1; then the fewest victims; then
   the latest start among the victims of the highest priority (their earliest start);
   then the first candidate (without violations first, in dry-run order).
7. **The answer**: a :class:`~..interface.PostFilterResult` naming the node and the
   victims, most important first; the lower-priority pods nominated to that node lose
   their nomination (:attr:`PreemptionOutcome.clear`). The
   :class:`~..preemption.Preemption` it becomes has ``marks_victims`` set: acting on it
   as v1.30's ``prepareCandidate`` does, the operator patches each victim's status with
   ``DisruptionTarget`` (``PreemptionByScheduler``) before deleting it (what step 1
   reads on the preemptor's next attempt), and rejects a victim held at Permit instead
   of deleting it. Without candidates:
   Unschedulable ``preemption: 0/N nodes are available: <counted reasons>.``, N the
   nodes given a status (the dry run's and the not-helpful ones); a node's Error with
   no candidate at all: Error ``preemption: ...``.

Versus the legacy (v1.13-v1.17) preemption of :mod:`..preemption`, whose decisions are
unchanged (this module only calls its helpers):

* v1.17 tried every node where preemption might help; v1.30 tries from a random offset
  until enough candidates are found (step 3/4), so on a big cluster the node chosen
  may differ, and between equally good candidates the first found wins;
* v1.17 took a node needing no victim at once; v1.30 makes it an Error for that node;
* v1.17's PDB rule: a budget allowing no disruption (``disruptionsAllowed <= 0``)
  makes every matching pod violating; v1.30 decrements the allowance across the
  victims and skips ``disruptedPods`` (step 4);
* v1.17 gave up on nodes refused for a fixed list of reasons (and tried nodes the
  filter never reached); v1.30 asks the status code: Unresolvable reasons, or not
  examined, means no;
* v1.17's terminating-pod rule looked at any terminating lower-priority pod on the
  nominated node; v1.30 only at pods terminating by preemption, and not when that
  node is Unresolvable for the pod;
* v1.17's tie-break among the best candidates was the first in NodeTree order;
  v1.30's is Go's map order (random): here the first candidate in dry-run order.
* An extender that keeps a node without victims is an Error in v1.30 unless ignorable;
  the legacy hook keeps such a node (the hook merges every extender's answer).

Performance: with ``PolicySettings.fast`` and a policy that checks resources, nodes
whose allocatable is below the pod's own request (``too_small``) are no candidates
whatever is evicted and are passed over without a trial; they get their status (for
the message) only if no candidate is found at all.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol

from ... import pluginargs
from ...objects import PREEMPT_NEVER, Pod, PodDisruptionBudget
from ..builtins import PREEMPTION_KEY, PreemptionContext
from ..cluster import ClusterState
from ..compiler import CompiledPolicy
from ..extenders import ExtenderError, Victims
from ..fitting import fits_on_node, nominated_for
from ..functions import Unresolvable, is_unresolvable
from ..interface import (
    Code,
    CycleState,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    Status,
)
from ..nodeinfo import NodeInfo
from ..parallel import parallelize_until
from ..pipeline import NodeStatuses, PreFilterReplay
from ..preemption import Preemption, PreemptionHook, importance, reprieve, too_small

NAME: Final = "DefaultPreemption"

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: Final = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: Final = 100

NOT_ELIGIBLE_NEVER: Final = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_CANDIDATE: Final = "no candidate node for preemption"
MESSAGE_PREFIX: Final = "preemption: "
_NO_VICTIMS: Final = Status.unresolvable(NO_VICTIMS)

#: (What a PostFilter call needs besides the statuses, the compiled policy whose filters
#: the dry run runs and the extenders' hook, the scheduler leaves in the cycle state under
#: ``builtins.PREEMPTION_KEY``.)
#: Where ``post_filter`` leaves its :class:`PreemptionOutcome` (nominations to clear).
OUTCOME_STATE_KEY: Final = "DefaultPreemption/outcome"

#: MaxInt32 + 1, added to every victim priority when summing (so all are >= 0).
_PRIORITY_OFFSET: Final = 2**31
#: The offset stream when the handle is offline (``simulate``): reproducible.
OFFLINE_SEED: Final = 0


# -- arguments -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreemptionArgs:
    """DefaultPreemptionArgs' two knobs, defaulted."""

    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE

    @classmethod
    def of(cls, args: Any) -> PreemptionArgs:
        """From the args model (``minCandidateNodesPercentage`` / ``..Absolute``, in
        either spelling), defaults for what it does not say."""
        if args is None:
            return cls()
        if isinstance(args, PreemptionArgs):
            return args

        def get(*names: str, default: int) -> int:
            for name in names:
                value = args.get(name) if isinstance(args, Mapping) else getattr(args, name, None)
                if value is not None:
                    return int(value)
            return default

        return cls(
            get(
                "min_candidate_nodes_percentage",
                "minCandidateNodesPercentage",
                default=DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
            ),
            get(
                "min_candidate_nodes_absolute",
                "minCandidateNodesAbsolute",
                default=DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
            ),
        )


def calculate_num_candidates(num_nodes: int, args: PreemptionArgs) -> int:
    """``calculateNumCandidates``: the percentage of the nodes (integer arithmetic),
    at least the absolute minimum, at most every node."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    n = max(n, args.min_candidate_nodes_absolute)
    return min(n, num_nodes)


# -- eligibility and the nodes where it might help ------------------------------------------


def node_status(reasons: Sequence[str]) -> Status:
    """A node's Filter status from the engine's reasons (none: Success)."""
    if not reasons:
        return Status.success()
    if any(is_unresolvable(reason) for reason in reasons):
        return Status.unresolvable(*(str(reason) for reason in reasons))
    return Status.unschedulable(*reasons)


def statuses_from_reasons(failed: Mapping[str, Sequence[str]]) -> dict[str, Status]:
    """The Filter statuses of the nodes the decision refused, from their reasons."""
    return {name: node_status(reasons) for name, reasons in failed.items()}


def eligible(pod: Pod, cluster: ClusterState, statuses: Mapping[str, Status]) -> str | None:
    """``PodEligibleToPreemptOthers``: None when the pod may preempt, else why not."""
    if pod.preemption_policy == PREEMPT_NEVER:
        return NOT_ELIGIBLE_NEVER
    nominated = cluster.nomination_of(pod.uid) or pod.nominated_node_name
    if not nominated:
        return None
    status = statuses.get(nominated)
    if status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return None  # its nominated node is out anyway: let it preempt elsewhere
    info = cluster.nodes.get(nominated)
    if info is not None:
        priority = pod.priority
        for other in info.pods.values():
            if other.priority < priority and other.deleting and other.disrupted_by_scheduler:
                return NOT_ELIGIBLE_TERMINATING
    return None


def nodes_where_preemption_might_help(
    nodes: Iterable[NodeInfo], statuses: Mapping[str, Status]
) -> tuple[list[NodeInfo], dict[str, Status]]:
    """The nodes found Unschedulable, and the not-helpful status of those found
    UnschedulableAndUnresolvable or not examined (``nodesWherePreemptionMightHelp``)."""
    potential: list[NodeInfo] = []
    unresolvable: dict[str, Status] = {}
    not_helpful = Status.unresolvable(NOT_HELPFUL)
    if isinstance(statuses, NodeStatuses):
        # The scheduler's own statuses: their codes read from the reasons, as
        # NodeStatuses would build them, without a Status per node.
        failed = statuses.failed
        for info in nodes:
            reasons = failed.get(info.name)
            if reasons is None or any(type(r) is Unresolvable for r in reasons):
                unresolvable[info.name] = not_helpful
            else:
                potential.append(info)
        return potential, unresolvable
    for info in nodes:
        status = statuses.get(info.name)
        if status is None or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            unresolvable[info.name] = not_helpful
        elif status.code is Code.UNSCHEDULABLE:
            potential.append(info)
    return potential, unresolvable


# -- victims on one node ----------------------------------------------------------------------


def pdb_violation_split(
    pods: Iterable[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation`` (v1.30): (violating, others), order kept; each
    matching budget's allowance is decremented pod by pod."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no budget
            for i, pdb in enumerate(pdbs):
                if not pdb.selects(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else others).append(pod)
    return violating, others


def select_victims_on_node(
    pod: Pod,
    info: NodeInfo,
    cluster: ClusterState,
    policy: CompiledPolicy,
    pdbs: Sequence[PodDisruptionBudget],
    nominated: Mapping[str, Sequence[Pod]],
    replay: PreFilterReplay | None = None,
) -> Victims | Status:
    """``SelectVictimsOnNode``: the fewest pods to evict (possibly none), or the status
    saying why the node is no candidate. The cluster is as it was afterwards.
    ``replay``: the pod's PreFilter recorded before the dry run (what the trials cannot
    change is not run again)."""
    priority = pod.priority
    lower = [other for other in info.pods.values() if other.priority < priority]
    if not lower:
        # No trial to open and undo: on a cluster of equal priorities, every node.
        return _NO_VICTIMS
    with cluster.trial(info.name) as trial:
        for other in lower:
            trial.remove(other.uid)
        reasons = fits_on_node(
            pod, info, cluster, policy, check_all=False, nominated=nominated, replay=replay
        )
        if reasons:
            return node_status(reasons)
        lower.sort(key=importance)
        violating, others = pdb_violation_split(lower, pdbs)
        victims, violations = reprieve(
            pod, info, cluster, policy, trial, violating, others, nominated, replay
        )
    if violating and others:
        victims.sort(key=importance)
    return Victims(tuple(victims), violations)


# -- the dry run ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the pod would fit once ``victims`` are evicted."""

    node: str
    victims: Victims


@dataclass(slots=True)
class DryRun:
    """What the dry run found: candidates in order, each examined node's status, the
    nodes' Errors, and the nodes passed over as too small (given statuses on demand)."""

    candidates: list[Candidate] = field(default_factory=list)
    statuses: dict[str, Status] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    skipped: list[NodeInfo] = field(default_factory=list)


async def dry_run_preemption(
    pod: Pod,
    cluster: ClusterState,
    policy: CompiledPolicy,
    potential: Sequence[NodeInfo],
    pdbs: Sequence[PodDisruptionBudget],
    offset: int,
    num_candidates: int,
    *,
    chunk_size: int = 64,
) -> DryRun:
    """``DryRunPreemption`` over ``potential`` from ``offset``, circularly (see the
    module docstring, step 4); yields to the event loop between chunks."""
    found = DryRun()
    priority = pod.priority
    if not any(other.priority < priority for info in potential for other in info.pods.values()):
        # No node holds a pod of lower priority (a cluster of one priority): every node
        # says so, as select_victims_on_node would one by one.
        found.statuses.update((info.name, _NO_VICTIMS) for info in potential)
        return found
    nominated = nominated_for(pod, cluster)
    replay = policy.pre_filter_replay(pod, cluster)
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    skip_small = policy.settings.fast and policy.checks_resources
    count = len(potential)

    def check(info: NodeInfo) -> None:
        outcome = select_victims_on_node(pod, info, cluster, policy, pdbs, nominated, replay)
        if isinstance(outcome, Status):
            found.statuses[info.name] = outcome
            return
        if not outcome.pods:
            text = f'expected at least one victim pod on node "{info.name}"'
            found.statuses[info.name] = Status.error(text)
            found.errors.append(text)
            return
        target = non_violating if outcome.num_pdb_violations == 0 else violating
        if len(target) < num_candidates:  # candidateList.add drops what overflows
            target.append(Candidate(info.name, outcome))

    def work(lo: int, hi: int) -> bool:
        for i in range(lo, hi):
            info = potential[(offset + i) % count]
            if skip_small and too_small(pod, info):
                found.skipped.append(info)
                continue
            check(info)
            if non_violating and len(non_violating) + len(violating) >= num_candidates:
                return False
        return True

    await parallelize_until(count, work, chunk_size=chunk_size)
    found.candidates = non_violating + violating
    if not found.candidates:
        for info in found.skipped:  # their statuses only matter for the message
            check(info)
    return found


# -- choosing the node ----------------------------------------------------------------------


def _earliest_start_of_most_important(victims: Victims) -> float:
    """``GetEarliestPodStartTime``: the earliest start among the highest-priority
    victims (a victim not started yet counts as starting now, after every start)."""
    top = max(p.priority for p in victims.pods)
    return min(importance(p)[1] for p in victims.pods if p.priority == top)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """``pickOneNodeForPreemption`` (v1.30): the criteria in order, each keeping the
    best; the first remaining candidate in the end."""
    if not candidates:
        return None
    pool = list(candidates)
    criteria: tuple[Callable[[Victims], float], ...] = (
        lambda v: -v.num_pdb_violations,
        lambda v: -max(p.priority for p in v.pods),
        lambda v: -sum(p.priority + _PRIORITY_OFFSET for p in v.pods),
        lambda v: -len(v.pods),
        _earliest_start_of_most_important,
    )
    for score in criteria:
        values = [score(c.victims) for c in pool]
        best = max(values)
        pool = [c for c, value in zip(pool, values, strict=True) if value == best]
        if len(pool) == 1:
            break
    return pool[0]


# -- Preempt ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreemptionOutcome:
    """The PostFilter's answer and what acting on it takes.

    ``node`` and ``victims``: where to nominate the pod and whom to evict (Success);
    ``status`` otherwise (Unschedulable or Error, its message ``preemption: ...``).
    ``clear``: pods whose nomination must go (the lower-priority pods nominated to
    ``node``; or the pod itself when no node might help). ``candidates``: what the dry
    run found, in its order.
    """

    node: str | None
    victims: tuple[Pod, ...] = ()
    status: Status = field(default_factory=Status.success)
    clear: tuple[Pod, ...] = ()
    candidates: tuple[Candidate, ...] = ()

    def result(self) -> PostFilterResult | Status:
        if self.node is not None:
            return PostFilterResult(self.node, self.victims)
        return self.status


def fit_error_message(statuses: Mapping[str, Status]) -> str:
    """``FitError.Error()`` over these statuses: ``0/N nodes are available: <count>
    <reason>, ...`` with the counted reasons sorted as strings, then a period."""
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    message = f"0/{len(statuses)} nodes are available:"
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    if histogram:
        message += f" {', '.join(histogram)}."
    return message


def _failure(code: Code, message: str, **kwargs: Any) -> PreemptionOutcome:
    return PreemptionOutcome(None, status=Status(code, (MESSAGE_PREFIX + message,)), **kwargs)


def _aggregate(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b]``."""
    return errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"


async def preempt(
    pod: Pod,
    cluster: ClusterState,
    policy: CompiledPolicy,
    statuses: Mapping[str, Status],
    *,
    args: PreemptionArgs | None = None,
    offsets: Callable[[int], int] | None = None,
    process: PreemptionHook | None = None,
    chunk_size: int = 64,
) -> PreemptionOutcome:
    """``Evaluator.Preempt`` for a pod that fits nowhere, ``statuses`` being the Filter
    status of each node (see the module docstring). Changes nothing."""
    args = args or PreemptionArgs()
    why_not = eligible(pod, cluster, statuses)
    if why_not is not None:
        return _failure(Code.UNSCHEDULABLE, why_not)
    nodes = cluster.ordered_nodes()
    if not nodes:
        return _failure(Code.ERROR, "no nodes available")
    potential, not_helpful = nodes_where_preemption_might_help(nodes, statuses)
    if not potential:
        own = (pod,) if cluster.nomination_of(pod.uid) or pod.nominated_node_name else ()
        return _failure(Code.UNSCHEDULABLE, fit_error_message(not_helpful), clear=own)
    pdbs = [pdb for pdb in cluster.pdbs.values() if pdb.selector is not None]
    offset = (offsets or random.Random().randrange)(len(potential))
    number = calculate_num_candidates(len(potential), args)
    found = await dry_run_preemption(
        pod, cluster, policy, potential, pdbs, offset, number, chunk_size=chunk_size
    )
    candidates = found.candidates
    if not candidates:
        if found.errors:
            return _failure(Code.ERROR, _aggregate(found.errors))
        return _failure(Code.UNSCHEDULABLE, fit_error_message({**found.statuses, **not_helpful}))
    if process is not None:
        offered = {c.node: c.victims for c in candidates}
        try:
            kept = await process(pod, dict(offered))
        except ExtenderError as exc:
            return _failure(Code.ERROR, str(exc), candidates=tuple(candidates))
        # Keep the dry run's order, whatever order the extenders answer in.
        candidates = [Candidate(c.node, kept[c.node]) for c in candidates if c.node in kept]
    chosen = pick_one_node_for_preemption(candidates)
    if chosen is None:
        return _failure(Code.UNSCHEDULABLE, NO_CANDIDATE, candidates=tuple(found.candidates))
    lower = tuple(
        other
        for other in cluster.nominated.get(chosen.node, {}).values()
        if other.priority < pod.priority and other.uid != pod.uid
    )
    return PreemptionOutcome(
        chosen.node,
        chosen.victims.pods,
        clear=lower,
        candidates=tuple(found.candidates),
    )


# -- the plugin -----------------------------------------------------------------------------


class Preemptor(Protocol):
    """The PostFilter in the engine's shape: ``(pod, cluster, policy, statuses) ->
    outcome``, with the extenders' hook when the policy has preempting extenders."""

    def __call__(
        self,
        pod: Pod,
        cluster: ClusterState,
        policy: CompiledPolicy,
        statuses: Mapping[str, Status],
        *,
        process: PreemptionHook | None = None,
    ) -> Awaitable[PreemptionOutcome]: ...


class DefaultPreemption(PostFilterPlugin):
    """kube-scheduler's DefaultPreemption: PostFilter (module docstring)."""

    name = NAME
    Args = pluginargs.DefaultPreemptionArgs
    #: It evaluates the cluster, yielding between node chunks: no deadline.
    timeout_seconds: ClassVar[float] = float("inf")

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)
        self.preemption_args = PreemptionArgs.of(args)
        offline = handle is not None and handle.offline
        self.rng = random.Random(OFFLINE_SEED if offline else None)
        #: The random offset into the nodes where the dry run starts, given their number.
        self.offsets: Callable[[int], int] = self.rng.randrange

    def preemptor(self) -> Preemptor:
        """The PostFilter as the engine runs it (no CycleState needed)."""
        return self.preempt

    async def preempt(
        self,
        pod: Pod,
        cluster: ClusterState,
        policy: CompiledPolicy,
        statuses: Mapping[str, Status],
        *,
        process: PreemptionHook | None = None,
    ) -> PreemptionOutcome:
        return await preempt(
            pod,
            cluster,
            policy,
            statuses,
            args=self.preemption_args,
            offsets=self.offsets,
            process=process,
        )

    async def post_filter(  # type: ignore[override]  # a built-in's richer answer
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[Preemption | None, Status | None]:
        """(the preemption, its status): the node and victims with the nominations to
        clear (Success), or why none (Unschedulable, ``preemption: ...``, and the pod's own
        nomination to clear, as v1.30's empty nominated node does)."""
        if PREEMPTION_KEY not in state:
            return None, Status.error(
                f"{MESSAGE_PREFIX}no policy in the cycle state to filter with"
            )
        context: PreemptionContext = state.read(PREEMPTION_KEY)
        policy: CompiledPolicy = context.policy
        outcome = await self.preempt(pod, state.cluster, policy, statuses, process=context.process)
        state.write(OUTCOME_STATE_KEY, outcome)
        found = Preemption(
            outcome.node,
            victims=outcome.victims,
            clear=outcome.clear,
            reason="" if outcome.node is not None else outcome.status.message,
            marks_victims=True,
        )
        return found, None if outcome.node is not None else outcome.status
