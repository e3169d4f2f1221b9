"""The node evaluator: Filter and Score over many nodes, plain or fast, one interface.

:class:`~.algorithm.Scheduler` decides the cycle (PreFilter, which nodes and from where
in the rotation, how many feasible nodes end the search, the extenders, the choice); a
:class:`NodeEvaluator` runs the policy's Filter functions over the nodes and its Score
functions over the feasible ones, and says what it found:

* :meth:`NodeEvaluator.filter` visits ``nodes`` in rotation from ``start`` until
  ``wanted`` fit, runs each node's predicates in order (stopping at the first failure
  unless alwaysCheckAllPredicates; nodes holding nominated pods the pod must yield to get
  the first of the two passes, ``fitting.py``), writes each refused node's reasons into
  ``failed`` and returns the feasible nodes and how many nodes it processed (the
  rotation moves by that many);
* :meth:`NodeEvaluator.score` returns every feasible node's total (sum of weight x raw
  score, the Score point's weights: :func:`.pipeline.weighted_sum` and
  :func:`.pipeline.weighted_row`) and what builds each priority's raw
  scores in node order (read only when the decision is explained).

:class:`PlainEvaluator` runs the definitions as written. :class:`FastEvaluator` (the
default, ``PolicySettings.fast``) gives the same results with fewer calls: the plan, the
equivalence cache, the journaled filter (see :mod:`.algorithm`'s docstring, "Fast
path"). ``tests/engine/test_fast_path.py`` holds the two equal on randomized clusters
(every field of every decision, the rotation and the tie state).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..objects import Pod
from .cluster import NodeJournal
from .compiler import CompiledPolicy, CompiledPriority, MapPlan
from .fitting import first_pass
from .functions import (
    NO_HINTS,
    CycleState,
    Hints,
    MapFunction,
    Predicate,
    Reasons,
    Screen,
    every_position,
)
from .nodeinfo import NodeInfo
from .parallel import parallelize_until
from .pipeline import run_filter, weighted_row, weighted_sum

#: What builds each priority's raw scores, in node order (one list per priority).
Columns = Callable[[], list[list[int]]]

_NodeCheck = Callable[[int], tuple[NodeInfo, Reasons]]
_ChunkCheck = Callable[[int, int], tuple[int, bool]]


#: One node's cached result: the NodeInfo generation it was computed at, then the result
#: (a predicate group's reasons; or the cached map scores and their weighted sum).
_Entry = tuple[Any, ...]


class _Table(dict[str, _Entry]):
    """Node name -> entry, and, for a filter group, what the journaled filter knows.

    ``journal``/``position``: the cluster journal the table was last brought up to date
    with, and where; every entry of a node not named in the journal since then is
    current. ``refused``: the nodes whose entry holds reasons, as of then. ``misses``:
    attempts served node by node before the table was first brought up to date.
    """

    __slots__ = ("journal", "misses", "position", "refused")

    def __init__(self) -> None:
        super().__init__()
        self.journal: NodeJournal | None = None
        self.position = 0
        self.refused: dict[str, Reasons] = {}
        self.misses = 0

    def reset(self) -> None:
        self.clear()
        self.journal = None
        self.refused = {}
        self.misses = 0


class EquivalenceCache:
    """Results of node-local functions per (equivalence key, node), bounded.

    An equivalence key names what the result depends on besides the node: the pod's
    fingerprint, the functions, the policy settings and any per-attempt context. A
    table (node name -> (generation, result...)) exists per key; at most ``max_tables``
    are kept, least recently used first out, and a table holding many more nodes than
    the cluster has (nodes come and go) is emptied, so the cache stays within
    ``max_tables`` entries per node (~140 bytes each: with the default 64 tables, at
    most ~9 KB per node; filter tables hold only the nodes a screen could not clear).
    Identical score rows are shared between nodes.

    A key gets a table only the second time it is asked for while it is among the
    ``max_tables`` last keys first seen (:meth:`admit`): pods that all differ (one per
    template, from many templates) would otherwise fill tables that are never read
    again, paying to store every result for nothing.
    """

    __slots__ = ("_rows", "_seen", "_tables", "max_tables")

    def __init__(self, max_tables: int = 64) -> None:
        self._tables: OrderedDict[Hashable, _Table] = OrderedDict()
        self._seen: OrderedDict[Hashable, None] = OrderedDict()
        self._rows: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.max_tables = max_tables

    def shared_row(self, row: tuple[int, ...]) -> tuple[int, ...]:
        """One tuple per distinct row of scores: most nodes score alike."""
        rows = self._rows
        known = rows.get(row)
        if known is None:
            if len(rows) >= 4096:
                rows.clear()
            known = rows[row] = row
        return known

    def admit(self, key: Hashable, num_nodes: int) -> _Table | None:
        """The key's table if it has one or was seen lately (then it gets one), else None."""
        if key not in self._tables:
            seen = self._seen
            if key not in seen:
                seen[key] = None
                if len(seen) > self.max_tables:
                    seen.popitem(last=False)
                return None
            del seen[key]
        return self.table(key, num_nodes)

    def table(self, key: Hashable, num_nodes: int) -> _Table:
        tables = self._tables
        found = tables.get(key)
        if found is None:
            found = tables[key] = _Table()
            if len(tables) > self.max_tables:
                tables.popitem(last=False)
        else:
            tables.move_to_end(key)
            if len(found) > 2 * num_nodes + 64:
                found.reset()
        return found

    def entries(self) -> int:
        return sum(len(table) for table in self._tables.values())

    def clear(self) -> None:
        self._tables.clear()
        self._seen.clear()
        self._rows.clear()


@dataclass(frozen=True, slots=True)
class _Screened:
    """One step of a pod's screened filter: a predicate and its screen."""

    fn: Predicate
    screen: Screen


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of a pod's predicate plan: one predicate, or a cached node-local group."""

    fn: Predicate | None
    group: tuple[Predicate, ...] = ()
    table: _Table | None = None


def _run_group(
    group: tuple[Predicate, ...], pod: Pod, info: NodeInfo, cycle: CycleState, check_all: bool
) -> tuple[str, ...]:
    """What running the group's predicates in order gives, as the plain loop would."""
    if len(group) == 1:
        return tuple(group[0](pod, info, cycle))
    return tuple(run_filter(pod, info, cycle, group, check_all))


def _cached_group(
    table: _Table,
    group: tuple[Predicate, ...],
    pod: Pod,
    info: NodeInfo,
    cycle: CycleState,
    check_all: bool,
) -> Reasons:
    """The group's result on the node: the table's, if computed at the node's current
    generation, else computed now and kept."""
    entry = table.get(info.name)
    generation = info.generation
    if entry is not None and entry[0] == generation:
        return entry[1]  # type: ignore[no-any-return]
    result = _run_group(group, pod, info, cycle, check_all)
    table[info.name] = (generation, result)
    return result


def _may_fail(hints: Hints, pod: Pod, cycle: CycleState) -> bool:
    """Whether a predicate may refuse some node to this pod (its plan keeps it)."""
    never_fails = hints.never_fails
    if never_fails is not None and never_fails(pod):
        return False
    fits_everywhere = hints.fits_everywhere
    return fits_everywhere is None or not fits_everywhere(pod, cycle)


@dataclass(slots=True)
class _ScorePlan:
    """How the fast path computes one pod's priorities (:meth:`FastEvaluator._sorted`)."""

    #: What constant priorities add to every total.
    offset: int = 0
    #: Per priority, what explains it: its score list, a constant, or its place in the
    #: cached rows.
    sources: list[list[int] | int | tuple[int]] = field(default_factory=list)
    #: (weight, scores) still to add.
    columns: list[tuple[int, list[int]]] = field(default_factory=list)
    #: The node-local maps the equivalence cache serves, their weights (0 for a map
    #: whose reduce must run first) and, for those, (priority, place, plan).
    cached_maps: list[MapFunction] = field(default_factory=list)
    cached_weights: list[int] = field(default_factory=list)
    cached_reduced: list[tuple[int, int, MapPlan]] = field(default_factory=list)
    contexts: list[Hashable] = field(default_factory=list)
    #: Priorities computed now, and the node-local ones, by index.
    called: list[int] = field(default_factory=list)
    local: list[int] = field(default_factory=list)


def _summed(
    totals: list[int], columns: list[tuple[int, list[int]]], offset: int, count: int
) -> list[int]:
    """The totals with every column added (weight x score) and the offset."""
    for weight, scores in columns:
        if scores and scores.count(scores[0]) == count:
            # The same score everywhere (a priority with nothing to tell the nodes
            # apart): one addition to the offset instead of a pass.
            offset += weighted_row((weight,), (scores[0],))
        else:
            totals = weighted_sum(totals, weight, scores)
    if offset:
        totals = [total + offset for total in totals]
    return totals


def _explainer(
    sources: list[list[int] | int | tuple[int]], rows: list[tuple[int, ...]], count: int
) -> Columns:
    """What builds each priority's raw scores in node order, from where each came."""

    def explained() -> list[list[int]]:
        out: list[list[int]] = []
        for source in sources:
            if isinstance(source, int):
                out.append([source] * count)
            elif isinstance(source, tuple):
                place = source[0]
                out.append([row[place] for row in rows])
            else:
                out.append(source)
        return out

    return explained


class NodeEvaluator(Protocol):
    """Filter and Score over many nodes (see the module docstring)."""

    async def filter(
        self,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        wanted: int,
        cycle: CycleState,
        policy: CompiledPolicy,
        nominated: dict[str, list[Pod]],
        failed: dict[str, list[str]],
    ) -> tuple[list[NodeInfo], int]:
        """(the feasible nodes in rotation order, the nodes processed)."""
        ...

    async def score(
        self, pod: Pod, feasible: list[NodeInfo], cycle: CycleState, policy: CompiledPolicy
    ) -> tuple[list[int], Columns]:
        """(each feasible node's total, what builds each priority's raw scores)."""
        ...


class PlainEvaluator:
    """The definitions as written: every predicate on every node visited, every priority
    on every feasible node."""

    __slots__ = ("chunk_size", "workers")

    def __init__(self, *, chunk_size: int, workers: int) -> None:
        self.chunk_size = chunk_size
        self.workers = workers

    async def filter(
        self,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        wanted: int,
        cycle: CycleState,
        policy: CompiledPolicy,
        nominated: dict[str, list[Pod]],
        failed: dict[str, list[str]],
    ) -> tuple[list[NodeInfo], int]:
        all_nodes = len(nodes)
        fns = policy.filter_fns
        check_all = policy.always_check_all_predicates
        feasible: list[NodeInfo] = []
        processed = 0

        def check(lo: int, hi: int) -> bool:
            nonlocal processed
            for i in range(lo, hi):
                info = nodes[(start + i) % all_nodes]
                reasons: list[str] = []
                others = nominated.get(info.name) if nominated else None
                if others:
                    reasons = first_pass(
                        pod, info, cycle.cluster, policy, others, check_all=check_all
                    )
                if not reasons:
                    reasons = run_filter(pod, info, cycle, fns, check_all)
                processed = i + 1
                if reasons:
                    failed[info.name] = reasons
                else:
                    feasible.append(info)
                    if len(feasible) >= wanted:
                        return False
            return True

        await parallelize_until(all_nodes, check, chunk_size=self.chunk_size, workers=self.workers)
        return feasible, processed

    async def score(
        self, pod: Pod, feasible: list[NodeInfo], cycle: CycleState, policy: CompiledPolicy
    ) -> tuple[list[int], Columns]:
        big = len(feasible) > self.chunk_size
        totals = [0] * len(feasible)
        all_scores: list[list[int]] = []
        for entry in policy.priorities:
            scores = entry.fn(pod, feasible, cycle)
            all_scores.append(scores)
            totals = weighted_sum(totals, entry.weight, scores)
            # A big cluster is scored over several turns of the loop, not in one block.
            if big:
                await asyncio.sleep(0)
        return totals, lambda: all_scores


class FastEvaluator:
    """The same results as :class:`PlainEvaluator`, with the plan, the equivalence cache
    and the journaled filter."""

    __slots__ = ("cache", "chunk_size", "workers")

    def __init__(self, cache: EquivalenceCache, *, chunk_size: int, workers: int) -> None:
        self.cache = cache
        self.chunk_size = chunk_size
        self.workers = workers

    async def filter(
        self,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        wanted: int,
        cycle: CycleState,
        policy: CompiledPolicy,
        nominated: dict[str, list[Pod]],
        failed: dict[str, list[str]],
    ) -> tuple[list[NodeInfo], int]:
        all_nodes = len(nodes)
        check_all = policy.always_check_all_predicates
        feasible: list[NodeInfo] = []
        processed = 0
        plan = self._screen_plan(pod, cycle, policy)
        if not plan:
            # Nothing can fail for this pod: the first ``wanted`` nodes fit.
            taken = min(wanted, all_nodes)
            return [nodes[(start + i) % all_nodes] for i in range(taken)], taken
        steps = self._predicate_plan(pod, cycle, policy, all_nodes)
        if steps is not None and len(steps) == 1 and steps[0].table is not None and not nominated:
            journaled = await self._journaled(
                steps[0], pod, nodes, start, cycle, check_all, feasible, failed, wanted
            )
            if journaled is not None:
                return feasible, journaled
        if steps is None:
            stop = self._screened(
                plan, pod, nodes, start, cycle, policy, nominated, feasible, failed, wanted
            )
        else:
            if len(steps) == 1 and steps[0].table is not None:
                node_check = self._cached_check(steps[0], pod, nodes, start, cycle, check_all)
            else:
                node_check = self._planned_check(steps, pod, nodes, start, cycle, check_all)
            if nominated:
                node_check = self._nominated_check(
                    node_check, pod, nodes, start, cycle, policy, nominated
                )
            stop = self._stopper(node_check, feasible, failed, wanted)

        def planned(lo: int, hi: int) -> bool:
            nonlocal processed
            processed, more = stop(lo, hi)
            return more

        await parallelize_until(
            all_nodes, planned, chunk_size=self.chunk_size, workers=self.workers
        )
        return feasible, processed

    async def score(
        self, pod: Pod, feasible: list[NodeInfo], cycle: CycleState, policy: CompiledPolicy
    ) -> tuple[list[int], Columns]:
        """The fast path's scoring: the same totals, with fewer calls and passes.

        Constant maps without a reduce add one number to every total (an offset);
        node-local maps come from the equivalence cache when it admits the pod, one
        lookup per node for all of them, with the weighted sum of those without a reduce
        cached beside their scores; otherwise each map's column is computed in one pass
        (its ``batch`` hint) and reduced. The other priorities (and node-local maps with
        a reduce) are added column by column, as the plain path adds all of them.
        Four steps: sort the priorities by how they are computed (:meth:`_sorted`), the
        cached rows (:meth:`_cached_rows`), the columns computed now
        (:meth:`_computed_columns`), the sum (:func:`_summed`).
        """
        priorities = policy.priorities
        plan = self._sorted(pod, feasible, cycle, priorities)
        totals, rows = self._cached_rows(plan, pod, feasible, cycle, priorities)
        await self._computed_columns(plan, pod, feasible, cycle, priorities)
        totals = _summed(totals, plan.columns, plan.offset, len(feasible))
        return totals, _explainer(plan.sources, rows, len(feasible))

    @staticmethod
    def _sorted(
        pod: Pod,
        feasible: list[NodeInfo],
        cycle: CycleState,
        priorities: Sequence[CompiledPriority],
    ) -> _ScorePlan:
        """Each priority by how it is computed: a constant (an offset, or a column when a
        reduce must see it), a node-local map for the cache, or computed now."""
        plan = _ScorePlan()
        count = len(feasible)
        fingerprint = pod.fingerprint
        for index, entry in enumerate(priorities):
            weight, mapped = entry.weight, entry.plan
            hints = mapped.hints if mapped is not None else NO_HINTS
            if mapped is not None and hints.constant is not None:
                constant = hints.constant(pod)
                if constant is not None:
                    if mapped.reduce is None:
                        plan.offset += weighted_row((weight,), (constant,))
                        plan.sources.append(constant)
                    else:
                        scores = [constant] * count
                        mapped.reduce(pod, feasible, cycle, scores)
                        plan.columns.append((weight, scores))
                        plan.sources.append(scores)
                    continue
            if mapped is not None and hints.node_local and fingerprint:
                place = len(plan.cached_maps)
                plan.cached_maps.append(mapped.map)
                if mapped.reduce is None:
                    plan.cached_weights.append(weight)
                else:
                    plan.cached_weights.append(0)
                    plan.cached_reduced.append((index, place, mapped))
                if hints.context is not None:
                    plan.contexts.append(hints.context(cycle))
                plan.local.append(index)
                plan.sources.append((place,))
                continue
            plan.called.append(index)
            plan.sources.append([])  # filled by _computed_columns
        return plan

    def _cached_rows(
        self,
        plan: _ScorePlan,
        pod: Pod,
        feasible: list[NodeInfo],
        cycle: CycleState,
        priorities: Sequence[CompiledPriority],
    ) -> tuple[list[int], list[tuple[int, ...]]]:
        """The node-local maps' rows from the equivalence cache, and their weighted sums
        as the starting totals; the maps with a reduce become columns. When the cache does
        not admit the pod, its maps are computed now as columns instead (zero totals)."""
        count = len(feasible)
        rows: list[tuple[int, ...]] = []
        if not plan.cached_maps:
            return [0] * count, rows
        fns = tuple(plan.cached_maps)
        weights = tuple(plan.cached_weights)
        key = ("score", pod.fingerprint, fns, weights, cycle.settings, tuple(plan.contexts))
        table = self.cache.admit(key, len(cycle.cluster.nodes))
        if table is None:
            # Not a pod the cache would serve again: the maps as columns.
            plan.called = sorted(plan.called + plan.local)
            for index in plan.local:
                plan.sources[index] = []
            return [0] * count, rows
        totals: list[int] = []
        add_total = totals.append
        add_row = rows.append
        for info in feasible:
            cached = table.get(info.name)
            generation = info.generation
            if cached is None or cached[0] != generation:
                row = self.cache.shared_row(tuple([fn(pod, info, cycle) for fn in fns]))
                partial = weighted_row(weights, row)
                cached = table[info.name] = (generation, row, partial)
            add_row(cached[1])
            add_total(cached[2])
        for index, place, mapped in plan.cached_reduced:
            scores = [row[place] for row in rows]
            assert mapped.reduce is not None
            mapped.reduce(pod, feasible, cycle, scores)
            plan.columns.append((priorities[index].weight, scores))
            plan.sources[index] = scores
        return totals, rows

    async def _computed_columns(
        self,
        plan: _ScorePlan,
        pod: Pod,
        feasible: list[NodeInfo],
        cycle: CycleState,
        priorities: Sequence[CompiledPriority],
    ) -> None:
        """The other priorities' columns, computed now: a map in one pass (its batch
        hint, else node by node) then its reduce, or the priority's own function."""
        big = len(feasible) > self.chunk_size
        for index in plan.called:
            entry = priorities[index]
            mapped = entry.plan
            if mapped is not None:
                batch = mapped.hints.batch
                if batch is not None:
                    scores = batch(pod, feasible, cycle)
                else:
                    fn = mapped.map
                    scores = [fn(pod, info, cycle) for info in feasible]
                if mapped.reduce is not None:
                    mapped.reduce(pod, feasible, cycle, scores)
            else:
                scores = entry.fn(pod, feasible, cycle)
            plan.columns.append((entry.weight, scores))
            plan.sources[index] = scores
            # A big cluster is scored over several turns of the loop, not in one block.
            if big:
                await asyncio.sleep(0)

    # -- the fast path's filter --------------------------------------------------------

    @staticmethod
    def _screen_plan(pod: Pod, cycle: CycleState, policy: CompiledPolicy) -> list[_Screened]:
        """The pod's predicates that can fail, in order, each with its screen."""
        plan: list[_Screened] = []
        for entry in policy.predicates:
            hints = entry.hints
            if _may_fail(hints, pod, cycle):
                plan.append(_Screened(entry.fn, hints.screen or every_position))
        return plan

    @staticmethod
    def _screened(
        plan: list[_Screened],
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        cycle: CycleState,
        policy: CompiledPolicy,
        nominated: dict[str, list[Pod]],
        feasible: list[NodeInfo],
        failed: dict[str, list[str]],
        wanted: int,
    ) -> _ChunkCheck:
        """Visit nodes lo..hi a predicate at a time; (nodes processed, whether to go on).

        Each predicate's screen names the nodes of the chunk where it may fail, and only
        those are checked, so a node's reasons are what running its predicates in order
        gives (stopping at the first failure unless alwaysCheckAllPredicates). Nodes
        past the one that completes ``wanted`` may be checked too, and forgotten: the
        predicates are pure. Nodes holding nominated pods the pod must yield to get the
        first pass first; failing it, they skip the ordinary check (``fitting.py``).
        """
        all_nodes = len(nodes)
        check_all = policy.always_check_all_predicates

        def run(lo: int, hi: int) -> tuple[int, bool]:
            first = (start + lo) % all_nodes
            end = first + hi - lo
            chunk = (
                nodes[first:end]
                if end <= all_nodes
                else [*nodes[first:], *nodes[: end - all_nodes]]
            )
            size = len(chunk)
            reasons_at: dict[int, list[str]] = {}
            settled: set[int] = set()  # failed the first pass: no ordinary check
            if nominated:
                for k, info in enumerate(chunk):
                    others = nominated.get(info.name)
                    if others:
                        found = first_pass(
                            pod, info, cycle.cluster, policy, others, check_all=check_all
                        )
                        if found:
                            reasons_at[k] = found
                            settled.add(k)
            for step in plan:
                excluded = reasons_at if not check_all else settled
                if len(excluded) == size:
                    break
                # Screened over the whole chunk (cheaper than building the list of the
                # nodes still in play); the nodes out of play are dropped after.
                suspects = step.screen(pod, chunk, cycle)
                if excluded and suspects:
                    suspects = [k for k in suspects if k not in excluded]
                fn = step.fn
                for k in suspects:
                    result = fn(pod, chunk[k], cycle)
                    if result:
                        known = reasons_at.get(k)
                        if known is None:
                            reasons_at[k] = list(result)
                        else:
                            known.extend(result)
            if not reasons_at:
                room = wanted - len(feasible)
                if size < room:
                    feasible.extend(chunk)
                    return hi, True
                feasible.extend(chunk[:room])
                return lo + room, False
            for k, info in enumerate(chunk):
                reasons = reasons_at.get(k)
                if reasons:
                    failed[info.name] = reasons
                else:
                    feasible.append(info)
                    if len(feasible) >= wanted:
                        return lo + k + 1, False
            return hi, True

        return run

    def _predicate_plan(
        self, pod: Pod, cycle: CycleState, policy: CompiledPolicy, num_nodes: int
    ) -> list[_Step] | None:
        """The pod's predicates for the cached path: what cannot fail dropped, node-local
        runs grouped, each group with its equivalence cache table. None when the pod has
        no group or the cache does not admit one of them (the screened path then runs)."""
        fingerprint = pod.fingerprint
        if not fingerprint:
            return None
        check_all = policy.always_check_all_predicates
        steps: list[_Step] = []
        group: list[Predicate] = []
        contexts: list[Hashable] = []
        admitted = True

        def close_group() -> None:
            nonlocal admitted
            if group:
                fns = tuple(group)
                key = ("filter", fingerprint, fns, check_all, cycle.settings, tuple(contexts))
                table = self.cache.admit(key, num_nodes)
                if table is None:
                    admitted = False
                steps.append(_Step(None, fns, table))
                group.clear()
                contexts.clear()

        for entry in policy.predicates:
            fn, hint = entry.fn, entry.hints
            if not _may_fail(hint, pod, cycle):
                continue
            if hint.node_local:
                group.append(fn)
                if hint.context is not None:
                    contexts.append(hint.context(cycle))
                continue
            close_group()
            steps.append(_Step(fn))
        close_group()
        if not admitted or all(step.table is None for step in steps):
            return None
        return steps

    async def _journaled(
        self,
        step: _Step,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        cycle: CycleState,
        check_all: bool,
        feasible: list[NodeInfo],
        failed: dict[str, list[str]],
        wanted: int,
    ) -> int | None:
        """The lone cached group's filter from its table and the cluster's journal.

        A visit node by node costs a table look-up per node. Once the table has been
        brought up to date with every node (after as many attempts as the rotation needs
        to go round the cluster, each visiting node by node and filling it), an attempt
        looks again only at the nodes the journal names since the table's last look, and
        takes the feasible nodes from the rotation in slices, skipping the refused ones:
        the same feasible nodes, reasons and count of nodes processed as the visit (a test
        compares them). Returns the nodes processed, or None (not yet: visit node by node).
        """
        table = step.table
        assert table is not None
        cluster = cycle.cluster
        journal = cluster.journal
        all_nodes = len(nodes)
        position = journal.position
        changed = journal.since(table.position) if table.journal is journal else None
        if changed is not None and len(changed) > all_nodes:
            changed = None  # as cheap to look at every node once
        group = step.group
        refused = table.refused
        if changed is None:
            table.misses += 1
            if table.misses * max(wanted, 1) < all_nodes:
                return None
            refused = table.refused = {}

            def bring_up_to_date(lo: int, hi: int) -> bool:
                for i in range(lo, hi):
                    info = nodes[i]
                    reasons = _cached_group(table, group, pod, info, cycle, check_all)
                    if reasons:
                        refused[info.name] = reasons
                return True

            await parallelize_until(
                all_nodes, bring_up_to_date, chunk_size=self.chunk_size, workers=self.workers
            )
            table.journal = journal
        else:
            known = cluster.nodes
            for name in dict.fromkeys(changed):
                found = known.get(name)
                reasons = (
                    _cached_group(table, group, pod, found, cycle, check_all)
                    if found is not None
                    else ()
                )
                if reasons:
                    refused[name] = reasons
                else:
                    refused.pop(name, None)
        table.position = position
        if not refused:
            taken = min(wanted, all_nodes)
            end = start + taken
            feasible.extend(nodes[start:end])
            if end > all_nodes:
                feasible.extend(nodes[: end - all_nodes])
            return taken
        for i in range(all_nodes):
            info = nodes[(start + i) % all_nodes]
            refusal = refused.get(info.name)
            if refusal:
                failed[info.name] = list(refusal)
            else:
                feasible.append(info)
                if len(feasible) >= wanted:
                    return i + 1
        return all_nodes

    @staticmethod
    def _cached_check(
        step: _Step,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        cycle: CycleState,
        check_all: bool,
    ) -> _NodeCheck:
        """One cached group is the whole plan (the common case): a lookup per node."""
        table = step.table
        assert table is not None
        group = step.group
        all_nodes = len(nodes)

        def check(i: int) -> tuple[NodeInfo, Reasons]:
            info = nodes[(start + i) % all_nodes]
            return info, _cached_group(table, group, pod, info, cycle, check_all)

        return check

    @staticmethod
    def _planned_check(
        steps: list[_Step],
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        cycle: CycleState,
        check_all: bool,
    ) -> _NodeCheck:
        all_nodes = len(nodes)

        def check(i: int) -> tuple[NodeInfo, Reasons]:
            info = nodes[(start + i) % all_nodes]
            reasons: list[str] | None = None
            for step in steps:
                table = step.table
                if table is None:
                    assert step.fn is not None
                    result: Reasons = step.fn(pod, info, cycle)
                else:
                    result = _cached_group(table, step.group, pod, info, cycle, check_all)
                if result:
                    if reasons is None:
                        reasons = list(result)
                    else:
                        reasons.extend(result)
                    if not check_all:
                        break
            return info, reasons or ()

        return check

    @staticmethod
    def _nominated_check(
        check: _NodeCheck,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        start: int,
        cycle: CycleState,
        policy: CompiledPolicy,
        nominated: dict[str, list[Pod]],
    ) -> _NodeCheck:
        """The first of the two passes where nominated pods wait, then ``check``.

        The first pass never touches the equivalence cache (its results are for the
        node without the nominated pods), so cached results stay exact.
        """
        all_nodes = len(nodes)
        check_all = policy.always_check_all_predicates

        def run(i: int) -> tuple[NodeInfo, Reasons]:
            info = nodes[(start + i) % all_nodes]
            others = nominated.get(info.name)
            if others:
                reasons = first_pass(pod, info, cycle.cluster, policy, others, check_all=check_all)
                if reasons:
                    return info, reasons
            return check(i)

        return run

    @staticmethod
    def _stopper(
        check: _NodeCheck,
        feasible: list[NodeInfo],
        failed: dict[str, list[str]],
        wanted: int,
    ) -> _ChunkCheck:
        """Visit nodes lo..hi; (nodes processed, whether to go on), as the plain loop."""

        def run(lo: int, hi: int) -> tuple[int, bool]:
            for i in range(lo, hi):
                info, reasons = check(i)
                if reasons:
                    failed[info.name] = list(reasons)
                else:
                    feasible.append(info)
                    if len(feasible) >= wanted:
                        return i + 1, False
            return hi, True

        return run
