"""The sample plugin of the scheduling framework's design note (seed 004), for policy-scheduler.

The seed's ``sample-plugin`` was Go, compiled into a custom kube-scheduler binary: a
PreFilter that computed the pod's requests into the CycleState, a Filter and a PreBind
that logged, and typed arguments (``favoriteColor``, ``favoriteNumber``, ``thanksTo``)
decoded by hand. Here it is an ordinary Python package: ``pip install`` it beside
policy-scheduler and its entry point (``Sample`` in the group ``policy_scheduler.plugins``,
see pyproject.toml) makes it available to every SchedulingPolicy, without a rebuild.

What it does at each point, so that each is visible to a user:

* **PreFilter**: computes the pod's requests once (the seed's ``computePodResourceRequest``)
  and writes them into the CycleState for the points after it. It answers Skip (its
  Filter is then not called this cycle) when there is nothing to check: no
  ``requiredNodeLabel``, or the pod opts out with the label ``sample.example.com/skip=true``.
* **Filter**: a node must carry the label ``requiredNodeLabel``; a node without it is
  refused as UnschedulableAndUnresolvable (evicting pods would not add a label, so
  preemption is not tried on its account), with a reason naming the label and the plugin.
* **Score**: 100 for a node whose ``colorLabel`` is the favorite color, ``favoriteNumber``
  (0..100) for every other node.
* **PreBind** (async, off the scheduling loop, within ``timeout_seconds``): a Normal
  event ``Thanks`` on the pod, thanking ``thanksTo`` and saying what the PreFilter
  computed (the CycleState travels from the scheduling cycle into the binding cycle).

Everything it uses comes from :mod:`policy_scheduler.framework`, the public API: nothing
else of the scheduler is imported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from policy_scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    FilterPlugin,
    NodeInfoView,
    Pod,
    PreBindPlugin,
    PreFilterPlugin,
    ScorePlugin,
    Status,
)

__all__ = ["SKIP_LABEL", "STATE_KEY", "THANKS_REASON", "PodRequests", "Sample", "SampleArgs"]

logger = logging.getLogger(__name__)

#: A pod labelled ``sample.example.com/skip: "true"`` is not filtered by this plugin.
SKIP_LABEL: Final = "sample.example.com/skip"
#: Where PreFilter leaves the pod's requests (by convention, keys start with the plugin's name).
STATE_KEY: Final = "Sample/requests"
#: The reason of the Normal event PreBind records on the pod.
THANKS_REASON: Final = "Thanks"


class SampleArgs(BaseModel):
    """The plugin's arguments (``spec.pluginConfig[].args``), checked by the scheduler
    before the plugin is made: a policy with bad arguments is refused, naming the field."""

    model_config = ConfigDict(extra="forbid")

    favoriteColor: str = Field(
        default="#326ce5",
        min_length=1,
        description=(
            "Nodes whose colorLabel has this value score 100 (a label value cannot hold "
            "'#': #326ce5 matches the value 326ce5)."
        ),
    )
    favoriteNumber: int = Field(
        default=7,
        ge=0,
        le=MAX_NODE_SCORE,
        description="The score of every node that is not of the favorite color (0..100).",
    )
    thanksTo: str = Field(
        default="Kubernetes",
        min_length=1,
        description="Who the Thanks event on each bound pod thanks.",
    )
    colorLabel: str = Field(
        default="example.com/color",
        min_length=1,
        description="The node label that says a node's color.",
    )
    requiredNodeLabel: str | None = Field(
        default=None,
        min_length=1,
        description="Filter: nodes without this label are refused; absent: none are.",
    )


@dataclass(frozen=True, slots=True)
class PodRequests:
    """What PreFilter computed: the pod's requests (millicores, bytes)."""

    milli_cpu: int
    memory: int

    def __str__(self) -> str:
        return f"{self.milli_cpu}m CPU, {self.memory // (1024 * 1024)}Mi memory"


class Sample(PreFilterPlugin, FilterPlugin, ScorePlugin, PreBindPlugin):
    """The seed's sample plugin: a node label required, a favorite color preferred, thanks said.

    PreFilter computes the pod's requests into the CycleState (Skip when nothing is to
    be filtered); Filter refuses nodes without ``requiredNodeLabel``; Score gives 100 to
    nodes of the favorite color and ``favoriteNumber`` to the others; PreBind records a
    ``Thanks`` event on the pod.
    """

    name = "Sample"
    Args = SampleArgs
    #: The deadline of PreBind: the framework gives up (an Error, the pod is retried) after it.
    timeout_seconds = 5.0

    args: SampleArgs

    # -- the scheduling cycle (synchronous, on the scheduling loop) ---------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        requests = PodRequests(pod.request.milli_cpu, pod.request.memory)
        state.write(STATE_KEY, requests)
        logger.debug("PreFilter pod %s: %s", pod.key, requests)
        if self.args.requiredNodeLabel is None or pod.labels.get(SKIP_LABEL) == "true":
            return Status.skip()  # nothing to filter: the framework will not call filter()
        return None

    def filter(self, state: CycleState, pod: Pod, node: NodeInfoView) -> Status | None:
        label = self.args.requiredNodeLabel
        if label is None or label in node.node.labels:
            return None
        return Status.unresolvable(
            f"node(s) didn't have label {label} (required by plugin {self.name})"
        )

    def score(self, state: CycleState, pod: Pod, node: NodeInfoView) -> int | Status:
        color = node.node.labels.get(self.args.colorLabel)
        if color is not None and color.lstrip("#") == self.args.favoriteColor.lstrip("#"):
            return MAX_NODE_SCORE
        return self.args.favoriteNumber

    # -- the binding cycle (async, off the scheduling loop, with a deadline) ------------

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        requests = state.read(STATE_KEY) if STATE_KEY in state else None
        args = self.args
        self.handle.events.event(
            pod,
            type="Normal",
            reason=THANKS_REASON,
            message=(
                f"thanks to {args.thanksTo}: {pod.key} goes to {node_name} (favorite color "
                f"{args.favoriteColor}, favorite number {args.favoriteNumber}"
                + (f", requests {requests}" if requests is not None else "")
                + ")"
            ),
            action="PreBind",
        )
        return None
