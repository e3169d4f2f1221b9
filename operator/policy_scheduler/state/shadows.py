"""Shadow policies at work: which pods a shadow decides, and how its decisions compare.

A Shadow policy (``spec.mode: Shadow``, see ``policies.py``) decides the pods the active
policy of its schedulerName decides, on the same snapshot, right after it, and never
binds, assumes or writes anything. The operator and ``simulate`` share this module:

* :class:`ShadowSampler` says whether a shadow decides a pod: first
  ``spec.shadow.percentageOfPods``, by a stable hash of the pod's uid (so every attempt
  of a pod is compared, or none is, and a test knows which), then the budget, a token
  bucket of ``maxDecisionsPerSecond`` tokens refilled at that rate (bursts of one
  second's worth) on the caller's clock. A pod over the budget is not compared; the
  active decision never waits for a shadow's budget.
* :class:`ShadowRunner` decides with the sampled shadows, each with a
  :class:`~..engine.algorithm.Scheduler` of its own (its round-robin and start node
  never move the active policy's), without HTTP extenders (an extender is a live
  service that may count or reserve what it is asked about: a shadow must not load or
  sway it), without preemption and without volume binding. A shadow that raises or
  fails is counted as an error and changes nothing else. Then :meth:`ShadowRunner.compare`
  files each shadow decision against the active one, once the active outcome is known
  (the caller compares only decisions that stand: a node chosen, or no node fits).
* :class:`ShadowWindow`: per shadow, the last ``size`` pods compared, each with its
  latest :class:`Comparison` (a pod decided again replaces its entry and becomes the
  newest, so a pod retried ten times counts once), the count of each result kept as
  entries come and go, and the latest differences, newest first.

A comparison's result is one of, with both policies' chosen nodes (None: no node fits):

==================  ===========================  ==================================
result              active                       shadow
==================  ===========================  ==================================
sameNode            node X                       node X
differentNode       node X                       node Y
onlyActivePlaced    a node                       none fits
onlyShadowPlaced    none fits                    a node
neitherPlaced       none fits                    none fits
==================  ===========================  ==================================

A shadow's window starts empty with each version of it (an update, a promotion and a
demotion back) and with each operator start; it is memory only.
"""

from __future__ import annotations

import logging
import random
import time
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..engine.algorithm import Decision, Scheduler
from ..engine.cluster import ClusterState
from ..engine.compiler import CompiledPolicy
from ..objects import Pod
from ..policy import ShadowSettings

logger = logging.getLogger(__name__)

SAME_NODE: Final = "sameNode"
DIFFERENT_NODE: Final = "differentNode"
ONLY_ACTIVE_PLACED: Final = "onlyActivePlaced"
ONLY_SHADOW_PLACED: Final = "onlyShadowPlaced"
NEITHER_PLACED: Final = "neitherPlaced"
RESULTS: Final = (SAME_NODE, DIFFERENT_NODE, ONLY_ACTIVE_PLACED, ONLY_SHADOW_PLACED, NEITHER_PLACED)
#: What a shadow attempt may end with besides a comparison.
ERROR: Final = "error"
SAMPLED_OUT: Final = "sampledOut"
OVER_BUDGET: Final = "overBudget"

#: Pods a shadow's window holds (the latest comparison of each).
WINDOW_SIZE: Final = 1000
#: Differences its status lists, newest first.
RECENT_DIFFERENCES: Final = 10


@dataclass(frozen=True, slots=True)
class Comparison:
    """One pod decided by the active policy and by a shadow, on the same snapshot."""

    pod: str
    active_node: str | None
    shadow_node: str | None
    #: Each policy's total for the node it chose (None: it chose none, or took a lone
    #: feasible node without scoring it).
    active_total: int | None = None
    shadow_total: int | None = None

    @property
    def result(self) -> str:
        if self.active_node is None:
            return NEITHER_PLACED if self.shadow_node is None else ONLY_SHADOW_PLACED
        if self.shadow_node is None:
            return ONLY_ACTIVE_PLACED
        return SAME_NODE if self.active_node == self.shadow_node else DIFFERENT_NODE

    @property
    def differs(self) -> bool:
        return self.result not in (SAME_NODE, NEITHER_PLACED)

    def to_json(self) -> dict[str, Any]:
        """``{pod, activeNode, shadowNode, activeTotal, shadowTotal}``, absent when None."""
        out: dict[str, Any] = {"pod": self.pod}
        for key, value in (
            ("activeNode", self.active_node),
            ("shadowNode", self.shadow_node),
            ("activeTotal", self.active_total),
            ("shadowTotal", self.shadow_total),
        ):
            if value is not None:
                out[key] = value
        return out


def compare(active: Decision, shadow: Decision) -> Comparison:
    return Comparison(active.pod.key, active.node, shadow.node, active.total, shadow.total)


class ShadowWindow:
    """The last ``size`` pods one shadow compared (None: all), the latest comparison of
    each."""

    def __init__(self, size: int | None = WINDOW_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, Comparison] = OrderedDict()  # by uid, oldest first
        self._counts: Counter[str] = Counter()

    def add(self, uid: str, comparison: Comparison) -> None:
        old = self._entries.pop(uid, None)
        if old is not None:
            self._counts[old.result] -= 1
        self._entries[uid] = comparison
        self._counts[comparison.result] += 1
        while self.size is not None and len(self._entries) > self.size:
            _, gone = self._entries.popitem(last=False)
            self._counts[gone.result] -= 1

    def __len__(self) -> int:
        return len(self._entries)

    def counts(self) -> dict[str, int]:
        """Every result, zero included."""
        return {result: self._counts[result] for result in RESULTS}

    def newest_first(self) -> Iterator[Comparison]:
        return reversed(self._entries.values())

    def differences(self, limit: int = RECENT_DIFFERENCES) -> list[Comparison]:
        """The latest ``limit`` comparisons that differ, newest first."""
        out: list[Comparison] = []
        for comparison in self.newest_first():
            if len(out) >= limit:
                break
            if comparison.differs:
                out.append(comparison)
        return out

    def to_status(self) -> dict[str, Any]:
        """``status.shadow`` as the CRD declares it."""
        return {
            "compared": len(self._entries),
            **self.counts(),
            "recentDifferences": [c.to_json() for c in self.differences()],
        }


def sampled(uid: str, percentage: int) -> bool:
    """Whether a pod is among ``percentage`` % of pods: a stable hash of its uid."""
    return zlib.crc32(uid.encode()) % 100 < percentage


class ShadowSampler:
    """Whether a shadow decides a pod: its share of pods, then its budget."""

    def __init__(self, settings: ShadowSettings, clock: Callable[[], float]) -> None:
        self.percentage = settings.percentageOfPods
        self.rate = float(settings.maxDecisionsPerSecond)
        self.clock = clock
        self._tokens = self.rate  # a full second's worth to start with
        self._at = clock()

    def admit(self, uid: str) -> str | None:
        """None when the shadow decides this pod now; else why not (a result name)."""
        if not sampled(uid, self.percentage):
            return SAMPLED_OUT
        now = self.clock()
        self._tokens = min(self.rate, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1.0:
            return OVER_BUDGET
        self._tokens -= 1.0
        return None


@dataclass(frozen=True, slots=True)
class ShadowAttempt:
    """One shadow's part in one pod's attempt: its decision, or why there is none."""

    policy: str
    #: The shadow's decision (kept when it failed, for ``simulate`` to show why).
    decision: Decision | None
    #: SAMPLED_OUT, OVER_BUDGET or ERROR when there is no decision to compare.
    skipped: str = ""

    @property
    def compared(self) -> bool:
        return self.decision is not None and not self.skipped


@dataclass(slots=True)
class _Shadow:
    version: CompiledPolicy
    scheduler: Scheduler
    sampler: ShadowSampler | None
    window: ShadowWindow


class ShadowRunner:
    """Decides pods with the shadow policies and keeps each one's window (see the
    module docstring). ``sample=False`` decides every pod with every shadow (``simulate``)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sample: bool = True,
        explain: bool = False,
        window: int = WINDOW_SIZE,
        rng: random.Random | None = None,
    ) -> None:
        self.clock = clock
        self.rng = rng  # ties of v1.30-cycle shadows (``Scheduler.rng``)
        self.sample = sample
        self.explain = explain
        self.window_size = window
        self._shadows: dict[str, _Shadow] = {}

    def _shadow(self, policy: CompiledPolicy) -> _Shadow:
        known = self._shadows.get(policy.name)
        if known is None or known.version is not policy:
            # A new version starts afresh: its window compares this version only.
            settings = policy.shadow or ShadowSettings()
            known = self._shadows[policy.name] = _Shadow(
                policy,
                Scheduler(explain=self.explain, extenders=None, rng=self.rng),
                ShadowSampler(settings, self.clock) if self.sample else None,
                ShadowWindow(self.window_size),
            )
        return known

    async def decide(
        self, pod: Pod, cluster: ClusterState, shadows: Sequence[CompiledPolicy]
    ) -> list[ShadowAttempt]:
        """Each shadow's decision for ``pod`` on ``cluster`` (the active decision's
        snapshot); nothing is changed, and no shadow's failure escapes."""
        attempts: list[ShadowAttempt] = []
        for policy in shadows:
            shadow = self._shadow(policy)
            if shadow.sampler is not None and (why := shadow.sampler.admit(pod.uid)):
                attempts.append(ShadowAttempt(policy.name, None, why))
                continue
            try:
                decision = await shadow.scheduler.schedule(pod, cluster, policy)
            except Exception:
                # A bug in a shadow must never cost the active attempt.
                logger.exception("shadow policy %s failed on %s", policy.name, pod.key)
                attempts.append(ShadowAttempt(policy.name, None, ERROR))
                continue
            attempts.append(ShadowAttempt(policy.name, decision, ERROR if decision.error else ""))
        return attempts

    def compare(self, attempts: Sequence[ShadowAttempt], active: Decision) -> list[str]:
        """File each decided shadow against the active decision that stands; returns
        each attempt's result (a comparison's, or why it was skipped), in order."""
        results: list[str] = []
        for attempt in attempts:
            shadow = self._shadows.get(attempt.policy)
            if attempt.decision is None or attempt.skipped or shadow is None:
                results.append(attempt.skipped or ERROR)
                continue
            comparison = compare(active, attempt.decision)
            shadow.window.add(active.pod.uid, comparison)
            results.append(comparison.result)
        return results

    def window(self, policy: CompiledPolicy) -> ShadowWindow:
        """The window of this version of a shadow (empty if it compared nothing yet)."""
        shadow = self._shadows.get(policy.name)
        if shadow is None or shadow.version is not policy:
            return ShadowWindow(self.window_size)
        return shadow.window

    def forget(self, name: str) -> None:
        """The policy is gone: drop its scheduler and window."""
        self._shadows.pop(name, None)
