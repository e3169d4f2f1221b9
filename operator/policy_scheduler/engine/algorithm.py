"""One scheduling decision: filter the nodes, score the feasible ones, pick the best.

This is kube-scheduler's legacy ``genericScheduler.Schedule`` (v1.13-v1.17):

1. **Basic checks** — every PVC the pod mounts must exist and not be being deleted.
2. **Filter** — nodes are visited in NodeTree order starting where the previous attempt
   stopped (``next_start``), so every node gets its turn across pods. Each node runs the
   policy's predicates in order, stopping at the first failure unless
   ``alwaysCheckAllPredicates``. The search stops once ``numFeasibleNodesToFind`` nodes fit
   (adaptive: 50% minus 1% per 125 nodes, at least 5% and at least 100 nodes; or the
   policy's fixed percentage). The visit runs in chunks through
   :func:`~.parallel.parallelize_until`, yielding to the event loop between chunks.
   Then, if some node passed and the policy has extenders, the filtering extenders
   narrow the feasible nodes, in policy order (:func:`.extenders.filter_nodes`); their
   refusal reasons join the nodes' reasons. An extender's error fails the attempt
   (:attr:`Decision.error`), unless it is ignorable.
3. **Score** — every priority scores every feasible node 0..10 (map, then reduce); the
   total is the sum of weight x score, computed in :mod:`.evaluator` only. With no
   priorities every node totals 0. With two or more feasible nodes the prioritizing
   extenders' raw scores are added too, weight x score (their errors are ignored).
4. **Select** — among the nodes with the highest total, round-robin
   (``lastNodeIndex``), in the order the nodes were found. For a pod with claims, under
   a policy with CheckVolumeBinding, the decision also carries how its claims bind on
   the chosen node (:attr:`Decision.volumes`: the PV matched to each unbound claim, the
   claims to provision), which the scheduler assumes and writes before the pod's
   binding (the legacy volume binder's FindPodVolumes result for that node).

**v1.30's cycle** (``schedule_one.go``), for a policy whose scores are the framework's
(``CompiledPolicy.framework_cycle``, the rule in :func:`~.compiler.framework_cycle`;
every other policy decides exactly as above; the differences are the two strategies
of :mod:`.cycles`, asked where the cycles part):

* no basic checks: a claim that is missing or being deleted is VolumeBinding's
  PreFilter's to refuse (without VolumeBinding, nothing refuses it);
* a pod nominated to a node (a preemption made room there: the cache's nomination, else
  ``status.nominatedNodeName``) tries that node first, alone (``evaluateNominatedNode``):
  if it passes the filters and the filtering extenders, it is the decision and the
  rotation does not move; if the filters refuse it, every node is searched as usual and
  the node's refusal stays in the diagnosis (and moves the rotation) even if the search
  stopped before it;
* when neither a Score plugin nor an extender would tell nodes apart, the search stops
  at the first feasible node (a scheduler that explains then adds the other nodes'
  verdicts, after the choice); without Filter plugins, the rotation's next nodes are
  taken, as many as ``numFeasibleNodesToFind``;
* ties among the best totals are broken by ``selectHost``'s reservoir sampling with the
  scheduler's random generator (``Scheduler.rng``: seeded in ``simulate``);
* PostFilter runs on every fit error, PreFilter's unresolvable ones included, and its
  message ends the decision's (``0/3 nodes are available: 3 Insufficient cpu.
  preemption: 0/3 nodes are available: 3 No preemption victims found for incoming
  pod..``, as v1.30's FitError reads).

**Fast path** (``PolicySettings.fast``, the default; ``fast=False`` runs the steps above
exactly as written, a test compares both on randomized clusters). Filter and Score over
the nodes are a node evaluator's (:mod:`.evaluator`: ``PlainEvaluator``, and
``FastEvaluator`` with what follows), behind one interface; the scheduler keeps the
cycle (the rotation, how many nodes are wanted, the extenders, the choice):

* *plan* — once per attempt the predicates that cannot fail for the pod (their hint
  ``never_fails``, or ``fits_everywhere`` on this attempt's cluster) are dropped, and
  the map priorities that are constant for it (``constant``) are filled without
  per-node calls (their reduce still runs);
* *equivalence cache* — runs of consecutive ``node_local`` predicates, and all
  ``node_local`` maps, are served from :class:`EquivalenceCache`: results per (pod
  fingerprint, functions, settings, per-attempt context) and node name, valid while the
  node's ``NodeInfo.generation`` is the one they were computed at. Between two
  decisions only the nodes that changed miss. A group caches exactly what running its
  predicates in order gives (stopping at the first failure unless
  alwaysCheckAllPredicates), so reasons and their order are unchanged;
* *journaled filter* — when the pod's whole plan is one cached group and no pod is
  nominated, the group's table, once it holds every node, also keeps which nodes it
  refuses; each attempt rechecks only the nodes the cluster's :class:`~.cluster.NodeJournal`
  names since the table last looked (usually the one node the last pod went to) and
  takes the feasible nodes from the rotation in slices: no per-node look-up at all.

Whatever the path, scores are summed one priority at a time (weights applied by
:mod:`.pipeline`'s ``weighted_sum``/``weighted_row``, the Score point's, and nowhere else;
the extenders' scores beside them here, with the same ``weighted_sum``). The per-node
``{priority: score}`` explanation is kept only when the scheduler explains
(``explain=True``, the default; the operator only needs the node and the message), and
even then as score lists: :attr:`Decision.scores` builds its dicts on first read.

"Doesn't fit" is a reason, a bug is an error: a predicate that raises propagates.
No node fitting is not an error either: the :class:`Decision` carries kube-scheduler's
summary, ``0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had taints that the
pod didn't tolerate.``, and, when the scheduler explains, the fit hints of
:mod:`.hinting` (computed then, against the cluster as it is at that decision).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Final, TypeVar

from ..objects import Pod
from .builtins import PREEMPTION_KEY, PreemptionContext
from .cluster import ClusterState
from .compiler import CompiledPolicy
from .cycles import FRAMEWORK, LEGACY, cycle_of
from .evaluator import (
    EquivalenceCache,
    FastEvaluator,
    NodeEvaluator,
    PlainEvaluator,
)
from .extenders import ExtenderClient, ExtenderError, filter_nodes, prioritize_nodes
from .fitting import first_pass, fits_on_node, nominated_for
from .functions import (
    CycleState,
    Unresolvable,
)
from .hinting import Hint, fit_hints
from .interface import Code, Gang, PostFilterResult, Status
from .nodeinfo import NodeInfo
from .pipeline import (
    POST_FILTER,
    Observer,
    PluginFailure,
    run_filter,
    run_post_filter,
    run_pre_filter,
    run_pre_score,
    weighted_sum,
)
from .predicates.volumes import PodVolumes, find_pod_volumes
from .preemption import Preemption, PreemptionHook, preempt

#: ``outside()``: an async context manager around an extender's HTTP call.
Outside = Callable[[], AbstractAsyncContextManager[None]]
_T = TypeVar("_T")


async def _outside(outside: Outside | None, call: Callable[[], Awaitable[_T]]) -> _T:
    if outside is None:
        return await call()
    async with outside():
        return await call()


MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"


@dataclass(slots=True)
class NodeScore:
    """A feasible node's weighted total and its raw 0..10 score per priority."""

    total: int
    priorities: dict[str, int]
    #: urlPrefix -> the raw score each prioritizing extender gave (before its weight).
    extenders: dict[str, int] = field(default_factory=dict)


#: What :attr:`Decision.scores` is built from: priority names, feasible node names,
#: totals, and what gives each priority's raw scores in node order.
_Explanation = tuple[list[str], list[str], list[int], Callable[[], list[list[int]]]]


@dataclass(slots=True, eq=False)
class Decision:
    """The outcome of one scheduling attempt: the node (None: fits nowhere), why each
    refused node was refused, the feasible nodes, their scores when explaining, and
    kube-scheduler's summary message when nothing fits."""

    pod: Pod
    node: str | None
    #: The name of the policy that decided.
    policy: str = ""
    failed: dict[str, list[str]] = field(default_factory=dict)
    message: str = ""
    #: Nodes in the cluster when deciding, and how many were looked at.
    num_all_nodes: int = 0
    evaluated: int = 0
    #: Time spent filtering and scoring (the engine's two phases).
    filter_seconds: float = 0.0
    score_seconds: float = 0.0
    #: When no node fits and the scheduler explains: the verified single changes that
    #: would make the pod fit some nodes (see :mod:`.hinting`).
    hints: list[Hint] = field(default_factory=list)
    #: When no node fits and the caller ran :meth:`Scheduler.preempt`: what preemption
    #: found (a node and its victims, or why none); None when it was not tried.
    preemption: Preemption | None = None
    #: Not "fits nowhere" but a failure of the attempt itself (an extender's error):
    #: the same text as ``message``; the pod is retried with backoff.
    error: str = ""
    #: urlPrefix -> node -> the raw score each prioritizing extender gave.
    extender_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Extender errors that did not fail the attempt (ignorable filters, prioritize).
    extender_errors: list[str] = field(default_factory=list)
    #: When the pod has claims and the policy checks volume binding: how they bind on
    #: the chosen node (FindPodVolumes' result), which the scheduler assumes and writes.
    volumes: PodVolumes | None = None
    #: The chosen node's total (sum of weight x score, extenders included); None when
    #: nothing fits or a lone feasible node was taken without scoring (not explaining).
    total: int | None = None
    #: ``simulate`` only: what each Shadow policy of the pod's schedulerName decided for
    #: the same pod on the same snapshot, by policy name (never bound, never assumed).
    shadows: dict[str, Decision] = field(default_factory=dict)
    #: The attempt's cycle state (kube-scheduler's CycleState): what PreFilter and the
    #: plugins computed, handed on to the pod's Reserve, Permit and binding cycle.
    state: CycleState | None = field(default=None, repr=False)
    #: No node fits and no eviction can change that (a PreFilter's
    #: UnschedulableAndUnresolvable): preemption is not tried.
    unresolvable: bool = False
    #: The gang the pod was planned with, all or nothing (``simulate`` shows it).
    gang: Gang | None = None
    #: PreFilter refused the pod: the plugins that did (QueueingHints; see
    #: :mod:`.rejections`); None when PreFilter let it through.
    rejected_by: frozenset[str] | None = None
    _scores: dict[str, NodeScore] | None = field(default=None, repr=False)
    _explanation: _Explanation | None = field(default=None, repr=False)
    _feasible: Sequence[str] | Sequence[NodeInfo] = field(default_factory=list, repr=False)

    @property
    def feasible(self) -> list[str]:
        """The names of the nodes that passed the filter (and the extenders), in order.

        Named on first read: the operator never reads them (500 names per pod at 5000
        nodes were 3% of its CPU per pod)."""
        found = self._feasible
        if isinstance(found, list) and (not found or isinstance(found[0], str)):
            return found
        names = [item if isinstance(item, str) else item.name for item in found]
        self._feasible = names
        return names

    @feasible.setter
    def feasible(self, value: Sequence[str] | Sequence[NodeInfo]) -> None:
        self._feasible = value

    @property
    def scheduled(self) -> bool:
        return self.node is not None

    @property
    def scores(self) -> dict[str, NodeScore]:
        """Node -> its total and raw score per priority (scored nodes; explaining only).

        Built on first read from the score lists the decision kept: a scheduler that
        nobody asks for an explanation does not pay for a dict per node.
        """
        if self._scores is None:
            scores: dict[str, NodeScore] = {}
            if self._explanation is not None:
                names, nodes, totals, build = self._explanation
                columns = build()
                rows = zip(*columns, strict=True) if columns else ((),) * len(nodes)
                by_extender = self.extender_scores
                for node, total, row in zip(nodes, totals, rows, strict=True):
                    scores[node] = NodeScore(
                        total,
                        dict(zip(names, row, strict=True)),
                        {url: raw[node] for url, raw in by_extender.items() if node in raw},
                    )
                self._explanation = None
            self._scores = scores
        return self._scores

    @scores.setter
    def scores(self, value: dict[str, NodeScore]) -> None:
        self._scores = value
        self._explanation = None

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.pod,
            self.node,
            self.policy,
            self.feasible,
            self.failed,
            self.scores,
            self.message,
            self.num_all_nodes,
            self.evaluated,
            self.filter_seconds,
            self.score_seconds,
            self.hints,
            self.preemption,
            self.error,
            self.extender_errors,
            self.volumes,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return self._fields() == other._fields()


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes are enough (numFeasibleNodesToFind)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = 50 - num_all_nodes // 125
        if adaptive < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            adaptive = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    found = num_all_nodes * adaptive // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


def fit_error_message(num_all_nodes: int, failed: dict[str, list[str]]) -> str:
    """FitError.Error(): reasons counted over nodes, sorted as strings."""
    histogram: Counter[str] = Counter()
    for reasons in failed.values():
        histogram.update(reasons)
    parts = sorted(f"{n} {reason}" for reason, n in histogram.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(parts)}."


def basic_checks(pod: Pod, cluster: ClusterState) -> str | None:
    """podPassesBasicChecks: the pod's PVCs exist and are not being deleted (the legacy
    cycle's; :meth:`.cycles.Cycle.basic_problem`)."""
    return LEGACY.basic_problem(pod, cluster)


def check_node(
    pod: Pod, cluster: ClusterState, policy: CompiledPolicy, node_name: str
) -> list[str]:
    """The policy's verdict on one node as the cluster is now: [] fits, else the reasons.

    Used to re-check a decision taken on a snapshot against the state that followed it
    (the plain path: no plan, no equivalence cache, nothing remembered; nominated pods
    count, as in the filter).
    """
    info = cluster.nodes.get(node_name)
    if info is None:
        return [f'node "{node_name}" not found']
    problem = cycle_of(policy).basic_problem(pod, cluster)
    if problem is not None:
        return [problem]
    return fits_on_node(pod, info, cluster, policy, check_all=policy.always_check_all_predicates)


class Scheduler:
    """Decides pods one at a time; remembers where to start and whose turn a tie is.

    ``explain=False`` leaves :attr:`Decision.scores` and :attr:`Decision.hints` empty
    (and skips scoring when a lone node fits, and hinting when none does): the node, the
    feasible and failed nodes and the message are unchanged.

    ``extenders``: how to reach the policies' HTTP extenders; None leaves them out (a
    preview without them, or a policy that has none).

    ``rng``: what breaks ties among the best nodes of a policy decided by v1.30's cycle
    (``CompiledPolicy.framework_cycle``); a fresh generator seeded by the system when
    None (the operator). ``simulate`` passes a seeded one, so that a preview is
    reproducible. Legacy policies never draw from it (their ties go round-robin).
    """

    def __init__(
        self,
        *,
        chunk_size: int = 64,
        workers: int = 16,
        explain: bool = True,
        cache_tables: int = 64,
        extenders: ExtenderClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.extenders = extenders
        self.rng = rng if rng is not None else random.Random()
        #: Set by the operator on the attempts whose plugin calls it times (metrics).
        self.observe: Observer | None = None
        self.next_start = 0
        self.last_node_index = 0
        self.chunk_size = chunk_size
        self.workers = workers
        self.explain = explain
        self.cache = EquivalenceCache(cache_tables)
        #: The node evaluators: the definitions as written, and the fast path (the plan,
        #: the equivalence cache, the journaled filter), held equal by a test.
        self._plain: NodeEvaluator = PlainEvaluator(chunk_size=chunk_size, workers=workers)
        self._fast: NodeEvaluator = FastEvaluator(
            self.cache, chunk_size=chunk_size, workers=workers
        )

    async def schedule(
        self,
        pod: Pod,
        cluster: ClusterState,
        policy: CompiledPolicy,
        *,
        outside: Outside | None = None,
    ) -> Decision:
        """Decide ``pod``: PreFilter, Filter (and the extenders' filters), PreScore, Score
        (and the extenders' scores), then the best node.

        ``outside``: awaited around every extender call (an async context manager
        factory): the operator releases the cluster there, so that other pods are decided
        while an HTTP peer takes its time (``runtime/scheduling.py``). A plugin's failure
        is the attempt's error (:attr:`Decision.error`), naming the plugin.
        """
        nodes = cluster.ordered_nodes()
        decision = Decision(pod=pod, node=None, policy=policy.name, num_all_nodes=len(nodes))
        # v1.30 has no basic checks: VolumeBinding's PreFilter refuses a missing claim.
        problem = cycle_of(policy).basic_problem(pod, cluster)
        if problem is not None:
            decision.message = problem
            return decision
        if not nodes:
            decision.message = NO_NODES_AVAILABLE
            return decision
        cycle = CycleState(pod, cluster, policy.settings)
        cycle.observe = self.observe
        decision.state = cycle
        try:
            return await self._schedule(pod, cluster, nodes, cycle, policy, decision, outside)
        except PluginFailure as exc:
            decision.node = None
            decision.error = decision.message = str(exc)
            return decision

    async def _schedule(
        self,
        pod: Pod,
        cluster: ClusterState,
        nodes: list[NodeInfo],
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
        outside: Outside | None,
    ) -> Decision:
        pipeline = policy.pipeline
        started = perf_counter()
        candidates: Sequence[NodeInfo] = nodes
        if pipeline.pre_filter:
            outcome = run_pre_filter(pipeline, cycle, pod)
            status = outcome.status
            if status is not None:
                decision.filter_seconds = perf_counter() - started
                if not status.is_rejected:
                    decision.error = decision.message = status.message
                    return decision
                decision.rejected_by = frozenset(outcome.rejected_by)
                return self._refused_by_pre_filter(decision, nodes, status)
            if outcome.node_names is not None:
                allowed = outcome.node_names
                candidates = [info for info in nodes if info.name in allowed]
        feasible: list[NodeInfo] = []
        refused_nominated: tuple[str, list[str]] | None = None
        searched = False
        if cycle_of(policy).tries_nominated_node:
            nominated = await self._nominated_node(pod, cluster, cycle, policy, decision, outside)
            if isinstance(nominated, NodeInfo):
                feasible = [nominated]
            elif nominated is not None:
                refused_nominated = nominated
        if not feasible:
            searched = True
            feasible = await self._filter(pod, candidates, cycle, policy, decision, len(nodes))
            if refused_nominated is not None:
                self._keep_nominated_status(refused_nominated, feasible, decision, len(nodes))
            # Hints are verified with the predicates; nodes an extender refused get none.
            refused_by_predicates = dict(decision.failed) if self.explain else {}
            if feasible and policy.extenders and self.extenders is not None:
                client = self.extenders
                try:
                    filtered = await _outside(
                        outside,
                        lambda: filter_nodes(
                            client, policy.extenders, pod, feasible, decision.failed
                        ),
                    )
                except ExtenderError as exc:
                    decision.filter_seconds = perf_counter() - started
                    decision.error = decision.message = str(exc)
                    return decision
                feasible = filtered.feasible
                decision.extender_errors.extend(filtered.ignored)
        else:
            refused_by_predicates = {}
        decision.filter_seconds = perf_counter() - started
        decision.feasible = feasible
        if not feasible:
            decision.message = fit_error_message(len(nodes), decision.failed)
            if self.explain:
                decision.hints = fit_hints(pod, cluster, policy, refused_by_predicates)
            return decision

        if len(feasible) == 1 and not self.explain:
            # kube-scheduler takes a lone feasible node without consulting priorities.
            decision.node = feasible[0].name
            if policy.binds_volumes and pod.volumes:
                decision.volumes = find_pod_volumes(pod, feasible[0], cycle)
            return decision
        started = perf_counter()
        if pipeline.pre_score:
            status = run_pre_score(pipeline, cycle, pod, feasible)
            if status is not None:
                decision.error = decision.message = status.message
                return decision
        totals = await self._score(pod, feasible, cycle, policy, decision)
        if len(feasible) > 1 and policy.extenders and self.extenders is not None:
            # Never with a lone node: upstream did not prioritize then.
            totals = await _outside(
                outside, lambda: self._extender_scores(pod, feasible, policy, decision, totals)
            )
        decision.score_seconds = perf_counter() - started
        decision.total = max(totals)  # the chosen node's, whichever of the best it is
        if len(feasible) == 1:
            # kube-scheduler takes a lone feasible node without consulting priorities
            # (nor the round-robin); the scores above are only for people to read.
            chosen = feasible[0]
        else:
            chosen = self._select(feasible, totals, policy)
        decision.node = chosen.name
        if policy.binds_volumes and pod.volumes:
            # FindPodVolumes' bindings for the chosen node (see the module docstring).
            decision.volumes = find_pod_volumes(pod, chosen, cycle)
        if searched and self._cut_short(policy, len(candidates)):
            self._explain_unsearched(pod, cluster, candidates, cycle, policy, decision, feasible)
        return decision

    @staticmethod
    def _cut_short(policy: CompiledPolicy, num_nodes: int) -> bool:
        """v1.30's search stopped at the first feasible node, nothing scoring."""
        usual = num_feasible_nodes_to_find(num_nodes, policy.percentage_of_nodes_to_score)
        return Scheduler._wanted(policy, num_nodes) < usual

    @staticmethod
    def _explain_unsearched(
        pod: Pod,
        cluster: ClusterState,
        candidates: Sequence[NodeInfo],
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
        feasible: list[NodeInfo],
    ) -> None:
        """When explaining a decision v1.30 took at the first feasible node (nothing
        scores), the other nodes' verdicts too: the explanation says why each node was
        refused, as under a policy that scores. The node, the rotation and ``evaluated``'s
        meaning aside (it then counts every node explained), nothing changes."""
        seen = set(decision.failed)
        seen.update(info.name for info in feasible)
        check_all = policy.always_check_all_predicates
        nominated = nominated_for(pod, cluster)
        more: list[NodeInfo] = []
        for info in candidates:
            if info.name in seen:
                continue
            others = nominated.get(info.name)
            reasons = (
                first_pass(pod, info, cluster, policy, others, check_all=check_all)
                if others
                else []
            )
            if not reasons:
                reasons = run_filter(pod, info, cycle, policy.filter_fns, check_all)
            if reasons:
                decision.failed[info.name] = reasons
            else:
                more.append(info)
        if more:
            decision.feasible = [*feasible, *more]
        decision.evaluated = len(decision.failed) + len(feasible) + len(more)

    async def preempt(
        self,
        decision: Decision,
        cluster: ClusterState,
        policy: CompiledPolicy,
        *,
        process: PreemptionHook | None = None,
    ) -> Preemption | None:
        """The PostFilter point for a decision that found no node (legacy preemption by
        default); sets ``decision.preemption``.

        None when it does not apply: the pod fits, the policy runs no PostFilter plugin
        (``disablePreemption``), the decision failed for another reason than nodes
        refusing the pod (a missing PVC, no node at all), as upstream preempts only on a
        FitError, or (legacy cycle) a PreFilter said no eviction could help. Under
        v1.30's cycle (``framework_cycle``) PostFilter's message, when it has one, ends
        the decision's message as it ends v1.30's FitError. Nothing is changed: the
        caller acts on the answer (the operator nominates the pod and deletes the
        victims; ``simulate`` removes them and decides the pod again). ``process`` is
        where extenders may narrow or veto the victims (:data:`~.preemption.PreemptionHook`).
        A plugin's :class:`~.interface.PostFilterResult` comes back as a
        :class:`~.preemption.Preemption` too; a PostFilter plugin's failure raises
        :class:`~.pipeline.PluginFailure`.
        """
        if (
            decision.node is not None
            or not decision.failed
            or (decision.unresolvable and not cycle_of(policy).post_filter_when_unresolvable)
            or not policy.pipeline.post_filter
        ):
            # v1.30 runs PostFilter on every fit error (DefaultPreemption then finds no
            # node where it might help, says so, and clears the pod's nomination).
            return None
        pod = decision.pod
        state = decision.state or policy.new_cycle(pod, cluster)

        def legacy(pod: Pod, failed: Mapping[str, Sequence[str]]) -> Awaitable[Preemption]:
            return preempt(
                pod,
                cluster,
                policy,
                failed,
                process=process,
                chunk_size=self.chunk_size,
                workers=self.workers,
            )

        state.write(PREEMPTION_KEY, PreemptionContext(legacy, policy, process))
        answer, status = await run_post_filter(policy.pipeline, state, pod, decision.failed)
        if status is not None and status.code is Code.ERROR:
            raise PluginFailure(POST_FILTER, status.plugin, status.message)
        if cycle_of(policy).post_filter_message and status is not None and status.message:
            # The FitError ends with PostFilter's message as it is (``preemption: ...``,
            # itself a FitError ending in a period): v1.29+ add no period after it.
            decision.message += f" {status.message}"
        if isinstance(answer, Preemption):
            result = answer
        elif isinstance(answer, PostFilterResult):
            node = answer.nominated_node
            result = Preemption(
                node,
                victims=tuple(answer.victims),
                clear=tuple(
                    other
                    for other in cluster.nominated.get(node, {}).values()
                    if other.priority < pod.priority and other.uid != pod.uid
                ),
                marks_victims=True,  # evicted as v1.30's Evaluator evicts: marked first
            )
        else:
            result = Preemption(None, reason=status.message if status is not None else "")
        decision.preemption = result
        return result

    @staticmethod
    def _refused_by_pre_filter(
        decision: Decision, nodes: Sequence[NodeInfo], status: Status
    ) -> Decision:
        """Every node gets the PreFilter's verdict (kube-scheduler's diagnosis), the
        message is the PreFilter's own."""
        unresolvable = status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        reasons = [Unresolvable(r) if unresolvable else r for r in status.reasons]
        decision.failed = {info.name: reasons for info in nodes}
        decision.unresolvable = unresolvable
        decision.message = f"0/{decision.num_all_nodes} nodes are available: {status.message}."
        return decision

    async def _filter(
        self,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
        num_all_nodes: int,
    ) -> list[NodeInfo]:
        """The Filter point over ``nodes`` (every node, or those a PreFilter left)."""
        all_nodes = len(nodes)
        if not all_nodes:
            return []
        if not policy.predicates:
            if not cycle_of(policy).rotates_without_filters:
                return list(nodes)
            # v1.30 without Filter plugins: the rotation's next nodes, as many as wanted.
            taken = self._wanted(policy, all_nodes)
            start = self.next_start % all_nodes
            self.next_start = (self.next_start + taken) % num_all_nodes
            decision.evaluated = taken
            return [nodes[(start + i) % all_nodes] for i in range(taken)]
        wanted = self._wanted(policy, all_nodes)
        start = self.next_start % all_nodes
        # Nodes holding nominated pods this pod must yield to: checked twice (fitting.py).
        nominated = nominated_for(pod, cycle.cluster)
        # Fewer nodes than the cluster's (a PreFilter's node set): the plain evaluator (the
        # journaled filter keeps the whole rotation); the rotation moves over the
        # cluster's nodes either way, as upstream.
        whole = all_nodes == num_all_nodes
        evaluator = self._fast if whole and cycle.settings.fast else self._plain
        feasible, processed = await evaluator.filter(
            pod, nodes, start, wanted, cycle, policy, nominated, decision.failed
        )
        self.next_start = (self.next_start + processed) % num_all_nodes
        decision.evaluated = processed
        return feasible

    @staticmethod
    def _wanted(policy: CompiledPolicy, num_nodes: int) -> int:
        """How many feasible nodes end the search (numFeasibleNodesToFind); v1.30's
        cycle stops at the first when neither a Score plugin nor an extender would tell
        the nodes apart (``hasScoring``, ``hasExtenderFilters``)."""
        usual = num_feasible_nodes_to_find(num_nodes, policy.percentage_of_nodes_to_score)
        return cycle_of(policy).wanted(policy, usual)

    async def _score(
        self,
        pod: Pod,
        feasible: list[NodeInfo],
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
    ) -> list[int]:
        """The Score point's totals, from the node evaluator; kept as lists when
        explaining (:attr:`Decision.scores` builds the per-node dicts if someone reads it)."""
        evaluator = self._fast if cycle.settings.fast else self._plain
        totals, columns = await evaluator.score(pod, feasible, cycle, policy)
        if self.explain:
            decision._explanation = (
                [entry.name for entry in policy.priorities],
                [info.name for info in feasible],
                totals,
                columns,
            )
        return totals

    async def _extender_scores(
        self,
        pod: Pod,
        feasible: list[NodeInfo],
        policy: CompiledPolicy,
        decision: Decision,
        totals: list[int],
    ) -> list[int]:
        """Totals plus weight x each prioritizing extender's raw score (PrioritizeNodes)."""
        assert self.extenders is not None
        outcome = await prioritize_nodes(self.extenders, policy.extenders, pod, feasible)
        decision.extender_errors.extend(outcome.ignored)
        for extender, column in outcome.columns:
            # Beside framework scores (0..100), an extender's 0..10 counts x10.
            totals = weighted_sum(totals, extender.weight * policy.legacy_score_scale, column)
            raw = decision.extender_scores.setdefault(extender.url_prefix, {})
            for info, score in zip(feasible, column, strict=True):
                raw[info.name] = raw.get(info.name, 0) + score
        if decision._explanation is not None:
            names, nodes, _, build = decision._explanation
            decision._explanation = (names, nodes, totals, build)
        return totals

    def _select(
        self, feasible: list[NodeInfo], totals: list[int], policy: CompiledPolicy
    ) -> NodeInfo:
        """The node with the best total; among several, the legacy round-robin, or
        v1.30's ``selectHost`` for a policy of the framework's cycle."""
        return feasible[cycle_of(policy).pick(totals, self)]

    def _sample_best(self, totals: list[int]) -> int:
        """v1.30's ``selectHost`` (:meth:`.cycles.FrameworkCycle.pick`)."""
        return FRAMEWORK.pick(totals, self)

    async def _nominated_node(
        self,
        pod: Pod,
        cluster: ClusterState,
        cycle: CycleState,
        policy: CompiledPolicy,
        decision: Decision,
        outside: Outside | None,
    ) -> NodeInfo | tuple[str, list[str]] | None:
        """v1.30's ``evaluateNominatedNode``: a pod nominated to a node (a preemption made
        room there) tries that node first, alone, with the Filter plugins (nominated pods'
        two passes included) and the filtering extenders.

        The node if it fits (the decision takes it: the rotation does not move); (name,
        reasons) when the filters refused it (its status stays in the diagnosis unless
        the search that follows gives it one); None when the pod is nominated nowhere,
        the node is gone, or an extender refused it or failed (upstream logs that and
        searches every node).
        """
        name = cluster.nomination_of(pod.uid) or pod.nominated_node_name
        info = cluster.nodes.get(name) if name else None
        if info is None:
            return None
        check_all = policy.always_check_all_predicates
        reasons: list[str] = []
        others = nominated_for(pod, cluster).get(info.name)
        if others:
            reasons = first_pass(pod, info, cluster, policy, others, check_all=check_all)
        if not reasons:
            reasons = run_filter(pod, info, cycle, policy.filter_fns, check_all)
        if reasons:
            return info.name, reasons
        if not (policy.extenders and self.extenders is not None):
            return info
        client = self.extenders
        refusals: dict[str, list[str]] = {}
        try:
            filtered = await _outside(
                outside, lambda: filter_nodes(client, policy.extenders, pod, [info], refusals)
            )
        except ExtenderError as exc:
            # Upstream logs the nominated node's evaluation error and searches anyway.
            decision.extender_errors.append(f"nominated node {info.name!r}: {exc}")
            return None
        decision.extender_errors.extend(filtered.ignored)
        return info if filtered.feasible else None

    def _keep_nominated_status(
        self,
        refused: tuple[str, list[str]],
        feasible: list[NodeInfo],
        decision: Decision,
        num_all_nodes: int,
    ) -> None:
        """The nominated node's refusal stays in the diagnosis when the search stopped
        before it: the fit error counts it, and the rotation moves on by one more node
        (v1.30 moves it by the feasible nodes plus the statuses, that one included)."""
        name, reasons = refused
        if name in decision.failed or any(info.name == name for info in feasible):
            return
        decision.failed[name] = reasons
        decision.evaluated += 1
        if num_all_nodes:
            self.next_start = (self.next_start + 1) % num_all_nodes
