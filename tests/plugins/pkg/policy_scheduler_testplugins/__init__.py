"""Plugins that wait, refuse, fail and raise on demand: the framework's tests drive them.

Installed with pip as any third-party package (``tests/plugins/installing.py``) and found
by the scheduler through their entry points; written against the public API only. What
each does to a pod is chosen by the pod's labels, so that one policy serves every case:

* ``TestGate`` (Reserve, Permit), label ``test-gate``: ``wait`` (for ``timeoutSeconds``,
  or the label ``test-gate-timeout``; one that is not a number is passed on as it is,
  as a buggy plugin would: ``Status.wait("soon")``), ``release`` (allow every waiting
  pod, then pass),
  ``reject-waiting`` (reject every waiting pod, then pass), ``deny`` (refused at once);
  no label: passes. Reserve and Unreserve are recorded in :data:`CALLS`.
* ``TestPreBind`` (PreBind, deadline 1 s), label ``test-prebind``: ``fail`` (an Error
  for the first ``failTimes`` attempts of the pod, then passes), ``hang`` (never answers).
* ``TestRaiser`` (Filter, Score), label ``test-raise``: ``filter`` / ``score`` raise
  there; otherwise every node fits and scores 0.
* ``TestHungPostFilter`` (PostFilter, deadline 2 s), label ``test-postfilter``: ``hang``
  (never answers); otherwise Unschedulable (nothing to offer).
* ``TestBroken``: its module raises on import (``PluginLoadFailed``).
* ``TestHungImport`` (Filter): its module's import hangs while the file named by
  ``POLICY_SCHEDULER_TEST_HANG_FILE`` exists (``hung.py``); then every node fits.

Every plugin made is recorded in :data:`MADE` with its arguments, so a test can tell
that arguments a policy was refused for never reached a plugin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from policy_scheduler.framework import (
    MAX_PERMIT_WAIT_SECONDS,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfoView,
    PermitPlugin,
    Pod,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)

GATE_LABEL: Final = "test-gate"
GATE_TIMEOUT_LABEL: Final = "test-gate-timeout"
PREBIND_LABEL: Final = "test-prebind"
RAISE_LABEL: Final = "test-raise"
POST_FILTER_LABEL: Final = "test-postfilter"

#: (plugin, its arguments as a dict) for every plugin made, in order.
MADE: list[tuple[str, dict[str, object]]] = []
#: (what, pod name, node) for every Reserve, Unreserve and PreBind failure, in order.
CALLS: list[tuple[str, str, str]] = []


def reset() -> None:
    MADE.clear()
    CALLS.clear()


class GateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeoutSeconds: float = Field(
        default=30.0,
        gt=0,
        le=MAX_PERMIT_WAIT_SECONDS,
        description="How long a pod labelled test-gate=wait waits at Permit.",
    )


class Gate(PermitPlugin, ReservePlugin):
    """Holds, releases, rejects or denies pods at Permit, as their test-gate label says."""

    name = "TestGate"
    Args = GateArgs

    args: GateArgs

    def __init__(self, args: GateArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        MADE.append((self.name, args.model_dump()))

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        CALLS.append(("reserve", pod.name, node_name))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        CALLS.append(("unreserve", pod.name, node_name))

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        action = pod.labels.get(GATE_LABEL, "")
        if action == "wait":
            raw = pod.labels.get(GATE_TIMEOUT_LABEL)
            try:
                timeout: Any = self.args.timeoutSeconds if raw is None else float(raw)
            except ValueError:
                timeout = raw  # a buggy plugin's wait: Status.wait("soon")
            return Status.wait(timeout)
        if action == "release":
            for waiting in self.handle.waiting_pods():
                waiting.allow(self.name)
        elif action == "reject-waiting":
            for waiting in self.handle.waiting_pods():
                waiting.reject(self.name, f"rejected by {pod.key}")
        elif action == "deny":
            return Status.unschedulable("denied by the test gate")
        return None


class PreBindArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    failTimes: int = Field(
        default=1, ge=0, description="Attempts of a test-prebind=fail pod that fail."
    )


class PreBindGuard(PreBindPlugin):
    """Fails or hangs PreBind for pods labelled test-prebind=fail / hang."""

    name = "TestPreBind"
    Args = PreBindArgs
    timeout_seconds = 1.0

    args: PreBindArgs

    def __init__(self, args: PreBindArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        MADE.append((self.name, args.model_dump()))
        self.failures: dict[str, int] = {}

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        action = pod.labels.get(PREBIND_LABEL, "")
        if action == "hang":
            await asyncio.Event().wait()  # never set: the framework's deadline ends it
        if action == "fail":
            failed = self.failures.get(pod.uid, 0)
            if failed < self.args.failTimes:
                self.failures[pod.uid] = failed + 1
                CALLS.append(("prebind-failed", pod.name, node_name))
                return Status.error(f"the volume is not ready yet (failure {failed + 1})")
        return None


class Raiser(FilterPlugin, ScorePlugin):
    """Raises in Filter or Score for pods labelled test-raise=filter / score."""

    name = "TestRaiser"

    def __init__(self, args: None, handle: Handle) -> None:
        super().__init__(args, handle)
        MADE.append((self.name, {}))

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        if pod.labels.get(RAISE_LABEL) == "filter":
            raise RuntimeError(f"boom in Filter for {pod.key}")
        return None

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        if pod.labels.get(RAISE_LABEL) == "score":
            raise RuntimeError(f"boom in Score for {pod.key}")
        return 0


class HungPostFilter(PostFilterPlugin):
    """Never answers PostFilter for pods labelled test-postfilter=hang."""

    name = "TestHungPostFilter"
    timeout_seconds = 2.0

    async def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> PostFilterResult | Status | None:
        if pod.labels.get(POST_FILTER_LABEL) == "hang":
            await asyncio.Event().wait()  # never set: the framework's deadline ends it
        return Status.unschedulable("nothing to offer")
