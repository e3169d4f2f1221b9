"""kube-scheduler v1.25-v1.30's in-tree plugins: the catalogue and the argument models.

**The catalogue** (``CATALOGUE``, one ``InTreePlugin`` per name) says, for every plugin
name a ``KubeSchedulerConfiguration`` of v1.25-v1.30 may write, the extension points it
implements in v1.30 (``names.IN_TREE_PLUGIN_POINTS``, point names as ``spec.plugins``
spells them), its argument model, and the configuration versions whose kube-scheduler
knows it. Each version is read as the last kube-scheduler release that served it:
``kubescheduler.config.k8s.io/v1`` as v1.30, ``v1beta3`` as v1.28 and ``v1beta2`` as
v1.27. Beside the 21 plugins of the default profiles and CinderLimits (registered, not
enabled by default), the catalogue knows:

* ``DynamicResources`` (v1.26+): registered but inert without the alpha
  DynamicResourceAllocation feature gate (off by default up to v1.30);
* ``SelectorSpread``: in the registry up to v1.28, so v1beta2 and v1beta3 name it;
  ``v1`` refuses it (upstream's ``invalidPluginsByVersion``). policy-scheduler does not
  implement it;
* the plugins of the v1beta1 era (NodeLabel, ServiceAffinity, NodePreferAvoidPods,
  NodeResourcesLeastAllocated/MostAllocated, RequestedToCapacityRatio,
  NodeResourceLimits, DefaultPodTopologySpread), gone before v1.25, with their successor.

**Arguments** are read as kube-scheduler reads them, in three steps (``decode_args``,
then ``PluginArgs.problems``; ``plugin_args`` does both):

1. *Decode*, strictly (kube-scheduler's codec is strict): unknown fields, wrong types and
   integers beyond the Go type (int32 / int64) are refused; ``apiVersion`` and ``kind``
   may be written and must then be the configuration's version and ``<Plugin>Args``;
   ``null`` is an absent field, as Go decodes it into a nil pointer or a zero value.
2. *Default*, as ``SetDefaults_*Args`` of pkg/scheduler/apis/config/v1 (identical in the
   three versions' last releases): DefaultPreemption 10% / 100 nodes; InterPodAffinity
   hardPodAffinityWeight 1; VolumeBinding bindTimeoutSeconds 600; PodTopologySpread
   defaultingType System; NodeResourcesFit's scoringStrategy LeastAllocated over cpu and
   memory, weight 1 each, and its resources (when none are listed) and resource weights
   (0 or unset) likewise; BalancedAllocation's resources and weights the same way.
3. *Validate*, as pkg/scheduler/apis/config/validation/validation_pluginargs.go of
   v1.30: every problem is collected, each an ``Issue`` whose path is relative to the
   args object (``scoringStrategy.resources[1].weight``), the caller prefixing where the
   args sit (``profiles[0].pluginConfig[2].args``). The paths are the file's own: where
   upstream names a field by a shorter path (``scoringStrategy.shape`` for
   ``scoringStrategy.requestedToCapacityRatio.shape``, a preferred term's ``matchFields``
   without its ``preference``), ours name the field as written.

The models are frozen pydantic models with kube-scheduler's JSON field names (camelCase)
as attributes, already defaulted when ``plugin_args`` returns them; ``to_json()`` writes
one back as kube-scheduler prints it (empty lists and unset fields left out).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from policy_scheduler import names, selectors
from policy_scheduler.policy import (
    Issue,
    Path,
    format_path,
    pydantic_message,
    show,
)

# -- configuration versions ------------------------------------------------------------

GROUP: Final = "kubescheduler.config.k8s.io"
V1: Final = f"{GROUP}/v1"
V1BETA3: Final = f"{GROUP}/v1beta3"
V1BETA2: Final = f"{GROUP}/v1beta2"
#: Every version read, newest first.
CONFIG_VERSIONS: Final[tuple[str, ...]] = (V1, V1BETA3, V1BETA2)
#: The kube-scheduler release each version is read as: the last one that served it.
RELEASE_OF: Final[dict[str, str]] = {V1: "v1.34", V1BETA3: "v1.28", V1BETA2: "v1.27"}

# -- plugin names ------------------------------------------------------------------------

SCHEDULING_GATES: Final = "SchedulingGates"
PRIORITY_SORT: Final = "PrioritySort"
NODE_UNSCHEDULABLE: Final = "NodeUnschedulable"
NODE_NAME: Final = "NodeName"
TAINT_TOLERATION: Final = "TaintToleration"
NODE_AFFINITY: Final = "NodeAffinity"
NODE_PORTS: Final = "NodePorts"
NODE_RESOURCES_FIT: Final = "NodeResourcesFit"
VOLUME_RESTRICTIONS: Final = "VolumeRestrictions"
EBS_LIMITS: Final = "EBSLimits"
GCE_PD_LIMITS: Final = "GCEPDLimits"
NODE_VOLUME_LIMITS: Final = "NodeVolumeLimits"
AZURE_DISK_LIMITS: Final = "AzureDiskLimits"
CINDER_LIMITS: Final = "CinderLimits"
VOLUME_BINDING: Final = "VolumeBinding"
VOLUME_ZONE: Final = "VolumeZone"
POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"
INTER_POD_AFFINITY: Final = "InterPodAffinity"
DEFAULT_PREEMPTION: Final = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION: Final = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY: Final = "ImageLocality"
DEFAULT_BINDER: Final = "DefaultBinder"
DYNAMIC_RESOURCES: Final = "DynamicResources"
SELECTOR_SPREAD: Final = "SelectorSpread"

# -- limits and constants of kube-scheduler ------------------------------------------------

#: A RequestedToCapacityRatio / VolumeBinding shape's scores are 0..10
#: (``MaxCustomPriorityScore``), scaled by 10 to the framework's 0..100 when scoring.
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
#: NodeResourcesFit's resource weights are 1..100.
MAX_RESOURCE_WEIGHT: Final = 100
#: VolumeCapacityPriority (alpha, off by default in v1.25-v1.30): without it
#: VolumeBinding's ``shape`` is refused and VolumeBinding's Score gives every node 0.
VOLUME_CAPACITY_PRIORITY_DEFAULT: Final = False

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES: Final = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1

Int32 = Annotated[int, Field(ge=_INT32_MIN, le=_INT32_MAX)]
Int64 = Annotated[int, Field(ge=_INT64_MIN, le=_INT64_MAX)]


_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION: Final = re.compile(r"^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration (``time.ParseDuration``: a sign allowed, "0" alone), or None."""
    if text in ("0", "+0", "-0"):
        return 0.0
    if not _DURATION.match(text):
        return None
    seconds = sum(float(n) * _UNITS[u] for n, u in _DURATION_PART.findall(text))
    return -seconds if text.startswith("-") else seconds


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# -- shared parts --------------------------------------------------------------------------


class ResourceSpec(_Args):
    """A resource a score counts and its weight (``config.ResourceSpec``)."""

    name: str = ""
    weight: Int64 = 0


class UtilizationShapePoint(_Args):
    """A point of a piecewise-linear utilization -> score function; scores are 0..10."""

    utilization: Int32 = 0
    score: Int32 = 0


DEFAULT_RESOURCES: Final = (
    ResourceSpec(name="cpu", weight=1),
    ResourceSpec(name="memory", weight=1),
)


# -- NodeResourcesFit ------------------------------------------------------------------------


class RequestedToCapacityRatioParam(_Args):
    """The RequestedToCapacityRatio strategy's shape."""

    shape: list[UtilizationShapePoint] = []


class ScoringStrategy(_Args):
    """How NodeResourcesFit scores: the strategy, the resources it counts, their weights."""

    type: str = ""
    resources: list[ResourceSpec] = []
    requestedToCapacityRatio: RequestedToCapacityRatioParam | None = None


class NodeResourcesFitArgs(_Args):
    """NodeResourcesFit: resources its filter ignores, and its scoring strategy."""

    ignoredResources: list[str] = []
    ignoredResourceGroups: list[str] = []
    scoringStrategy: ScoringStrategy = ScoringStrategy(
        type=LEAST_ALLOCATED, resources=list(DEFAULT_RESOURCES)
    )

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidateNodeResourcesFitArgs``, and the strategy's shape it needs."""
        issues: list[Issue] = []
        for index, resource in enumerate(self.ignoredResources):
            issues += _label_name_issues(resource, ("ignoredResources", index))
        for index, group in enumerate(self.ignoredResourceGroups):
            where: Path = ("ignoredResourceGroups", index)
            if "/" in group:
                issues.append(
                    Issue(where, f"resource group name can't contain '/', got {show(group)}")
                )
            issues += _label_name_issues(group, where)
        strategy = self.scoringStrategy
        here: Path = ("scoringStrategy",)
        if strategy.type not in SCORING_STRATEGY_TYPES:
            issues.append(
                Issue(
                    (*here, "type"),
                    f"must be one of {', '.join(SCORING_STRATEGY_TYPES)}, "
                    f"got {show(strategy.type)}",
                )
            )
        issues += _resource_weight_issues(strategy.resources, (*here, "resources"))
        ratio = strategy.requestedToCapacityRatio
        if ratio is not None:
            issues += _shape_issues(ratio.shape, (*here, "requestedToCapacityRatio", "shape"))
        elif strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            # kube-scheduler v1.30 dereferences it in NewFit and crashes at start.
            issues.append(
                Issue(
                    (*here, "requestedToCapacityRatio"),
                    "is required when scoringStrategy.type is RequestedToCapacityRatio "
                    "(its shape: [{utilization, score}])",
                )
            )
        return issues


# -- NodeResourcesBalancedAllocation -------------------------------------------------------


class NodeResourcesBalancedAllocationArgs(_Args):
    """NodeResourcesBalancedAllocation: the resources whose shares it balances."""

    resources: list[ResourceSpec] = list(DEFAULT_RESOURCES)

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidateNodeResourcesBalancedAllocationArgs``: unique names, weights exactly 1."""
        issues: list[Issue] = []
        seen: dict[str, int] = {}
        for index, resource in enumerate(self.resources):
            where: Path = ("resources", index)
            if resource.name in seen:
                issues.append(
                    Issue(
                        (*where, "name"),
                        f"duplicate resource {show(resource.name)}, already at",
                        (("resources", seen[resource.name]),),
                    )
                )
            else:
                seen[resource.name] = index
            if resource.weight != 1:
                issues.append(Issue((*where, "weight"), f"must be 1, got {resource.weight}"))
        return issues


# -- PodTopologySpread -------------------------------------------------------------------------


class LabelSelectorRequirement(_Args):
    """A metav1.LabelSelectorRequirement (key, operator, values)."""

    key: str = ""
    operator: str = ""
    values: list[str] = []


class LabelSelector(_Args):
    """A metav1.LabelSelector (only ever refused here: default constraints take none)."""

    matchLabels: dict[str, str] = {}
    matchExpressions: list[LabelSelectorRequirement] = []


class TopologySpreadConstraint(_Args):
    """A core/v1 TopologySpreadConstraint, as PodTopologySpread's default constraints."""

    maxSkew: Int32 = 0
    topologyKey: str = ""
    whenUnsatisfiable: str = ""
    labelSelector: LabelSelector | None = None
    minDomains: Int32 | None = None
    nodeAffinityPolicy: str | None = None
    nodeTaintsPolicy: str | None = None
    matchLabelKeys: list[str] = []


#: PodTopologySpread's system default constraints (``defaultingType: System``), the same
#: in v1.19-v1.30: spread over hostnames (maxSkew 3) and zones (maxSkew 5), as a
#: preference only.
SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    TopologySpreadConstraint(
        maxSkew=3, topologyKey="kubernetes.io/hostname", whenUnsatisfiable=SCHEDULE_ANYWAY
    ),
    TopologySpreadConstraint(
        maxSkew=5, topologyKey="topology.kubernetes.io/zone", whenUnsatisfiable=SCHEDULE_ANYWAY
    ),
)


class PodTopologySpreadArgs(_Args):
    """PodTopologySpread: the constraints of pods that set none, and where they come from."""

    defaultConstraints: list[TopologySpreadConstraint] = []
    defaultingType: str = SYSTEM_DEFAULTING

    def effective_default_constraints(self) -> tuple[TopologySpreadConstraint, ...]:
        """The constraints a pod without its own gets: the system's, or the listed ones."""
        if self.defaultingType == SYSTEM_DEFAULTING:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return tuple(self.defaultConstraints)

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidatePodTopologySpreadArgs``."""
        issues: list[Issue] = []
        if self.defaultingType not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            issues.append(
                Issue(
                    ("defaultingType",), f"must be System or List, got {show(self.defaultingType)}"
                )
            )
        elif self.defaultingType == SYSTEM_DEFAULTING and self.defaultConstraints:
            issues.append(
                Issue(
                    ("defaultingType",),
                    "must be List when defaultConstraints are given (System uses the system "
                    'default constraints), got "System"',
                )
            )
        seen: dict[tuple[str, str], int] = {}
        for index, constraint in enumerate(self.defaultConstraints):
            where: Path = ("defaultConstraints", index)
            if constraint.maxSkew <= 0:
                issues.append(
                    Issue((*where, "maxSkew"), f"must be greater than 0, got {constraint.maxSkew}")
                )
            if not constraint.topologyKey:
                issues.append(Issue((*where, "topologyKey"), "is required"))
            else:
                issues += _label_name_issues(constraint.topologyKey, (*where, "topologyKey"))
            action = constraint.whenUnsatisfiable
            if not action:
                issues.append(Issue((*where, "whenUnsatisfiable"), "is required"))
            elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                issues.append(
                    Issue(
                        (*where, "whenUnsatisfiable"),
                        f"must be DoNotSchedule or ScheduleAnyway, got {show(action)}",
                    )
                )
            if constraint.labelSelector is not None:
                issues.append(
                    Issue(
                        (*where, "labelSelector"),
                        "must not be set: a default constraint selects the pod's own group "
                        "(its Services, ReplicationControllers, ReplicaSets, StatefulSets)",
                    )
                )
            key = (constraint.topologyKey, action)
            if key in seen:
                issues.append(
                    Issue(
                        where,
                        f"repeats {{{key[0]}, {key[1]}}} of",
                        (("defaultConstraints", seen[key]),),
                    )
                )
            else:
                seen[key] = index
        return issues


# -- InterPodAffinity -----------------------------------------------------------------------


class InterPodAffinityArgs(_Args):
    """InterPodAffinity: the weight of existing pods' required affinity terms in scores,
    and whether existing pods' preferred terms count for a pod without affinity."""

    hardPodAffinityWeight: Int32 = 1
    ignorePreferredTermsOfExistingPods: bool = False

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        weight = self.hardPodAffinityWeight
        if not 0 <= weight <= 100:
            return [
                Issue(("hardPodAffinityWeight",), f"must be in the range [0, 100], got {weight}")
            ]
        return []


# -- NodeAffinity ---------------------------------------------------------------------------


class NodeSelectorRequirement(_Args):
    """A core/v1 NodeSelectorRequirement (key, operator, values)."""

    key: str = ""
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(_Args):
    """A core/v1 NodeSelectorTerm: label requirements and field requirements, ANDed."""

    matchExpressions: list[NodeSelectorRequirement] = []
    matchFields: list[NodeSelectorRequirement] = []

    @property
    def empty(self) -> bool:
        return not self.matchExpressions and not self.matchFields


class NodeSelector(_Args):
    """A core/v1 NodeSelector: its terms are ORed."""

    nodeSelectorTerms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Args):
    """A core/v1 PreferredSchedulingTerm: a term and the weight a matching node gets."""

    weight: Int32 = 0
    preference: NodeSelectorTerm = NodeSelectorTerm()


class NodeAffinity(_Args):
    """A core/v1 NodeAffinity (``requiredDuringSchedulingRequiredDuringExecution`` does
    not exist in the API)."""

    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredSchedulingTerm] = []


_NODE_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


class NodeAffinityArgs(_Args):
    """NodeAffinity: an affinity every pod must also satisfy (``addedAffinity``)."""

    addedAffinity: NodeAffinity | None = None

    def required_terms(self) -> tuple[selectors.NodeSelectorTerm, ...] | None:
        """The added required terms, compiled (ORed); None when there are none."""
        affinity = self.addedAffinity
        if affinity is None or affinity.requiredDuringSchedulingIgnoredDuringExecution is None:
            return None
        raw = affinity.requiredDuringSchedulingIgnoredDuringExecution.model_dump()
        return selectors.node_selector_terms(raw["nodeSelectorTerms"], "nodeSelectorTerms")

    def preferred_terms(self) -> tuple[tuple[int, selectors.NodeSelectorTerm], ...]:
        """The added preferred terms, compiled, with their weights (weight 0 left out)."""
        affinity = self.addedAffinity
        if affinity is None:
            return ()
        return tuple(
            (term.weight, selectors.node_selector_term(term.preference.model_dump(), "preference"))
            for term in affinity.preferredDuringSchedulingIgnoredDuringExecution
            if term.weight != 0 and not term.preference.empty
        )

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidateNodeAffinityArgs``: the terms must compile (``nodeaffinity.NewNodeSelector``
        and ``NewPreferredSchedulingTerms``); empty terms and weight-0 preferences are skipped."""
        affinity = self.addedAffinity
        if affinity is None:
            return []
        issues: list[Issue] = []
        here: Path = ("addedAffinity",)
        required = affinity.requiredDuringSchedulingIgnoredDuringExecution
        if required is not None:
            base: Path = (
                *here,
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
            )
            for index, term in enumerate(required.nodeSelectorTerms):
                if not term.empty:
                    issues += _node_term_issues(term, (*base, index))
        preferred: Path = (*here, "preferredDuringSchedulingIgnoredDuringExecution")
        for index, pterm in enumerate(affinity.preferredDuringSchedulingIgnoredDuringExecution):
            if pterm.weight != 0 and not pterm.preference.empty:
                issues += _node_term_issues(pterm.preference, (*preferred, index, "preference"))
        return issues


def _node_term_issues(term: NodeSelectorTerm, where: Path) -> list[Issue]:
    issues: list[Issue] = []
    for index, req in enumerate(term.matchExpressions):
        at: Path = (*where, "matchExpressions", index)
        if req.operator not in _NODE_OPERATORS:
            issues.append(
                Issue(
                    (*at, "operator"),
                    f"must be one of {', '.join(_NODE_OPERATORS)}, got {show(req.operator)}",
                )
            )
            continue
        issues += _requirement_issues(req, at)
    for index, req in enumerate(term.matchFields):
        at = (*where, "matchFields", index)
        if req.operator not in ("In", "NotIn"):
            issues.append(
                Issue((*at, "operator"), f"must be In or NotIn, got {show(req.operator)}")
            )
        elif len(req.values) != 1:
            issues.append(
                Issue((*at, "values"), f"must have exactly one element, got {show(req.values)}")
            )
    return issues


def _requirement_issues(req: NodeSelectorRequirement, at: Path) -> list[Issue]:
    """``labels.NewRequirement``'s checks, for the node selector operators."""
    issues = _label_name_issues(req.key, (*at, "key"))
    values: Path = (*at, "values")
    if req.operator in ("In", "NotIn") and not req.values:
        issues.append(Issue(values, "must not be empty for the In and NotIn operators"))
    elif req.operator in ("Exists", "DoesNotExist") and req.values:
        issues.append(
            Issue(
                values,
                f"must be empty for the Exists and DoesNotExist operators, got {show(req.values)}",
            )
        )
    elif req.operator in ("Gt", "Lt"):
        if len(req.values) != 1:
            issues.append(
                Issue(
                    values,
                    "must have exactly one value for the Gt and Lt operators, "
                    f"got {show(req.values)}",
                )
            )
        for index, value in enumerate(req.values):
            if selectors.parse_int64(value) is None:
                issues.append(
                    Issue(
                        (*values, index),
                        f"must be an integer for the Gt and Lt operators, got {show(value)}",
                    )
                )
    for index, value in enumerate(req.values):
        for problem in _label_value_problems(value):
            issues.append(Issue((*values, index), f"{problem}, got {show(value)}"))
    return issues


# -- DefaultPreemption ----------------------------------------------------------------------


class DefaultPreemptionArgs(_Args):
    """DefaultPreemption: how many candidate nodes a preemption dry-runs at least."""

    minCandidateNodesPercentage: Int32 = 10
    minCandidateNodesAbsolute: Int32 = 100

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidateDefaultPreemptionArgs``."""
        issues: list[Issue] = []
        percentage, absolute = self.minCandidateNodesPercentage, self.minCandidateNodesAbsolute
        if not 0 <= percentage <= 100:
            issues.append(
                Issue(
                    ("minCandidateNodesPercentage",),
                    f"must be in the range [0, 100], got {percentage}",
                )
            )
        if absolute < 0:
            issues.append(
                Issue(("minCandidateNodesAbsolute",), f"must not be negative, got {absolute}")
            )
        if percentage == 0 and absolute == 0:
            issues.append(
                Issue(
                    ("minCandidateNodesPercentage",),
                    "must not be 0 while minCandidateNodesAbsolute is 0 too",
                )
            )
            issues.append(
                Issue(
                    ("minCandidateNodesAbsolute",),
                    "must not be 0 while minCandidateNodesPercentage is 0 too",
                )
            )
        return issues


# -- VolumeBinding --------------------------------------------------------------------------


class VolumeBindingArgs(_Args):
    """VolumeBinding: how long PreBind waits for volumes, and (gated) its score's shape."""

    bindTimeoutSeconds: Int64 = 600
    shape: list[UtilizationShapePoint] | None = None

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidateVolumeBindingArgsWithOptions``; ``volume_capacity_priority`` is the
        feature gate (off by default in v1.25-v1.30)."""
        issues: list[Issue] = []
        if self.bindTimeoutSeconds < 0:
            issues.append(
                Issue(
                    ("bindTimeoutSeconds",), f"must not be negative, got {self.bindTimeoutSeconds}"
                )
            )
        if volume_capacity_priority:
            issues += _shape_issues(self.shape or [], ("shape",))
        elif self.shape is not None:
            issues.append(
                Issue(
                    ("shape",),
                    "must not be set: it needs the VolumeCapacityPriority feature gate (alpha, "
                    "off by default in kube-scheduler v1.25-v1.30)",
                )
            )
        return issues


# -- DynamicResources (v1.34) ------------------------------------------------------------


class DynamicResourcesArgs(_Args):
    """DynamicResources (v1.34): how long its Filter may search a node for devices."""

    filterTimeout: str = "10s"

    def problems(self, *, volume_capacity_priority: bool = False) -> list[Issue]:
        """``ValidateDynamicResourcesArgs``: a duration, zero (no limit) or positive."""
        seconds = parse_duration(self.filterTimeout)
        if seconds is None:
            return [
                Issue(
                    ("filterTimeout",),
                    f"must be a duration such as 10s or 500ms, got {show(self.filterTimeout)}",
                )
            ]
        if seconds < 0:
            return [Issue(("filterTimeout",), f"must not be negative, got {self.filterTimeout}")]
        return []


PluginArgs = (
    NodeResourcesFitArgs
    | NodeResourcesBalancedAllocationArgs
    | PodTopologySpreadArgs
    | InterPodAffinityArgs
    | NodeAffinityArgs
    | DefaultPreemptionArgs
    | VolumeBindingArgs
    | DynamicResourcesArgs
)

#: The args model of each plugin that takes arguments (kube-scheduler's ``<Name>Args``).
ARGS_MODELS: Final[dict[str, type[PluginArgs]]] = {
    NODE_RESOURCES_FIT: NodeResourcesFitArgs,
    NODE_RESOURCES_BALANCED_ALLOCATION: NodeResourcesBalancedAllocationArgs,
    POD_TOPOLOGY_SPREAD: PodTopologySpreadArgs,
    INTER_POD_AFFINITY: InterPodAffinityArgs,
    NODE_AFFINITY: NodeAffinityArgs,
    DEFAULT_PREEMPTION: DefaultPreemptionArgs,
    VOLUME_BINDING: VolumeBindingArgs,
    DYNAMIC_RESOURCES: DynamicResourcesArgs,
}


# -- the catalogue ------------------------------------------------------------------------


@dataclass(frozen=True)
class InTreePlugin:
    """One plugin name a KubeSchedulerConfiguration of v1.25-v1.30 may write."""

    name: str
    #: The extension points it implements (v1.30; SelectorSpread: v1.28), in
    #: ``names.EXTENSION_POINTS`` order; empty for the plugins gone before v1.25.
    points: tuple[str, ...]
    #: The configuration versions whose kube-scheduler (read as ``RELEASE_OF``) knows it.
    versions: frozenset[str]
    args: type[PluginArgs] | None = None
    #: policy-scheduler runs it (False: SelectorSpread, the plugins gone before v1.25).
    runs: bool = True
    #: A feature gate without which kube-scheduler registers it as a no-op, off by default
    #: in the releases that read ``inert_in``.
    inert_without: str = ""
    inert_in: frozenset[str] = frozenset()
    #: What happened to it (for the names a version refuses or we do not run).
    history: str = ""


_ALL: Final = frozenset(CONFIG_VERSIONS)
_BETA: Final = frozenset({V1BETA2, V1BETA3})

#: The in-tree volume limits of volume plugins migrated to CSI: kube-scheduler v1.31
#: removed them (NodeVolumeLimits counts those volumes through their CSI driver).
_NON_CSI_LIMITS: Final = frozenset({EBS_LIMITS, GCE_PD_LIMITS, AZURE_DISK_LIMITS, CINDER_LIMITS})

_RUNNING: Final = {
    name: InTreePlugin(
        name,
        points,
        _BETA if name in _NON_CSI_LIMITS else _ALL,
        ARGS_MODELS.get(name),
        history=(
            "kube-scheduler v1.31 removed it with the in-tree volume plugins: NodeVolumeLimits "
            "counts those volumes through their CSI driver"
            if name in _NON_CSI_LIMITS
            else ""
        ),
    )
    for name, points in names.IN_TREE_PLUGIN_POINTS.items()
}

#: The v1beta1 era's plugins: none of v1.25-v1.30 has them; what took their place.
_GONE: Final[dict[str, str]] = {
    "NodeResourcesLeastAllocated": (
        "NodeResourcesFit's scoringStrategy {type: LeastAllocated} replaced it in v1beta2 (v1.22)"
    ),
    "NodeResourcesMostAllocated": (
        "NodeResourcesFit's scoringStrategy {type: MostAllocated} replaced it in v1beta2 (v1.22)"
    ),
    "RequestedToCapacityRatio": (
        "NodeResourcesFit's scoringStrategy {type: RequestedToCapacityRatio} replaced it in "
        "v1beta2 (v1.22)"
    ),
    "NodeLabel": "it was removed with v1beta1 (v1.22); use node affinity in the pods",
    "ServiceAffinity": "it was removed with v1beta1 (v1.22); use pod affinity in the pods",
    "NodePreferAvoidPods": (
        "it was removed before v1.25, with the preferAvoidPods node annotation it read"
    ),
    "NodeResourceLimits": "it was an alpha plugin of v1.18-v1.20, removed since",
    "DefaultPodTopologySpread": ("PodTopologySpread's defaultConstraints replaced it in v1.20"),
}

CATALOGUE: Final[dict[str, InTreePlugin]] = {
    **_RUNNING,
    DYNAMIC_RESOURCES: InTreePlugin(
        DYNAMIC_RESOURCES,
        names.V134_PLUGIN_POINTS[DYNAMIC_RESOURCES],
        _ALL,
        DynamicResourcesArgs,
        inert_without="DynamicResourceAllocation",
        inert_in=_BETA,
        history=(
            "kube-scheduler v1.26-v1.30 registers it as a no-op unless the alpha "
            "DynamicResourceAllocation feature gate is on (off by default); v1.34 runs it"
        ),
    ),
    SELECTOR_SPREAD: InTreePlugin(
        SELECTOR_SPREAD,
        (names.PRE_SCORE, names.SCORE),
        _BETA,
        runs=False,
        history=(
            "kubescheduler.config.k8s.io/v1 refuses it and kube-scheduler v1.29 removed it; "
            "PodTopologySpread's system default constraints spread the same pods"
        ),
    ),
    **{
        name: InTreePlugin(name, (), frozenset(), runs=False, history=why)
        for name, why in _GONE.items()
    },
}


#: The points the catalogue lists (v1.30's) that a plugin gained in a later release than
#: v1.27: (plugin, point) -> the release that added it. VolumeBinding's PreScore (which
#: skips its Score when nothing is scored) is v1.30's, so a v1beta3 (v1.28) or v1beta2
#: (v1.27) profile does not list VolumeBinding at preScore.
POINT_ADDED_IN: Final[dict[tuple[str, str], str]] = {
    (VOLUME_BINDING, names.PRE_SCORE): "v1.30",
}


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.removeprefix("v").split("."))


def points_in(plugin: InTreePlugin, version: str) -> tuple[str, ...]:
    """The points ``plugin`` implements in the release that reads ``version`` (RELEASE_OF)."""
    release = _release(RELEASE_OF[version])
    return tuple(
        point
        for point in plugin.points
        if _release(POINT_ADDED_IN.get((plugin.name, point), "v1.0")) <= release
    )


# -- decoding ------------------------------------------------------------------------------


class ArgsError(ValueError):
    """Arguments kube-scheduler would refuse; ``issues`` have paths relative to the args."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        super().__init__("\n".join(issue.render() for issue in issues))


def args_kind(name: str) -> str:
    """The kind of a plugin's args object (``NodeResourcesFitArgs``)."""
    return f"{name}Args"


def decode_args(
    name: str, raw: object, *, api_version: str | None = None
) -> tuple[PluginArgs | None, list[Issue]]:
    """A plugin's args decoded strictly and defaulted (not validated), or the issues.

    ``raw`` is the ``args`` object as written (None or absent: every default).
    ``api_version``: the configuration's version, which an ``apiVersion`` written in the
    args must equal (None: any of ``CONFIG_VERSIONS``). A plugin without an args model
    gives ``(None, [])`` whatever ``raw`` is, as kube-scheduler hands such args to the
    plugin undecoded.
    """
    model = ARGS_MODELS.get(name)
    if model is None:
        return None, []
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        return None, [Issue((), f"must be an object, got {show(raw)}")]
    data = without_nulls(raw)
    issues: list[Issue] = []
    kind = data.pop("kind", None)
    version = data.pop("apiVersion", None)
    if kind is not None and kind != args_kind(name):
        issues.append(
            Issue(("kind",), f"must be {args_kind(name)} (the args of {name}), got {show(kind)}")
        )
    allowed = (api_version,) if api_version is not None else CONFIG_VERSIONS
    if version is not None and version not in allowed:
        issues.append(
            Issue(("apiVersion",), f"must be {' or '.join(allowed)}, got {show(version)}")
        )
    _DEFAULTERS.get(name, _no_defaults)(data)
    try:
        args = model.model_validate(data)
    except ValidationError as exc:
        issues += [pydantic_issue(error, model) for error in exc.errors()]
        return None, issues
    if issues:
        return None, issues
    return args, []


def plugin_args(
    name: str,
    raw: object = None,
    *,
    api_version: str | None = None,
    volume_capacity_priority: bool = VOLUME_CAPACITY_PRIORITY_DEFAULT,
) -> PluginArgs | None:
    """The defaulted, validated args of plugin ``name`` (None if it takes none).

    Raises ``ArgsError`` with every issue kube-scheduler would refuse.
    """
    args, issues = decode_args(name, raw, api_version=api_version)
    if args is not None:
        issues = args.problems(volume_capacity_priority=volume_capacity_priority)
    if issues:
        raise ArgsError(issues)
    return args


def default_args(name: str) -> PluginArgs | None:
    """The args kube-scheduler fills in for an enabled plugin given none (None: takes none)."""
    return plugin_args(name)


def to_json(args: PluginArgs) -> dict[str, Any]:
    """The args as kube-scheduler prints them: unset fields and empty lists left out."""
    dumped = _omit_empty(args.model_dump(mode="json", exclude_none=True))
    assert isinstance(dumped, dict)
    return dumped


# -- defaulting (SetDefaults_*Args), on the decoded data before it is typed -----------------


def _no_defaults(data: dict[str, Any]) -> None:
    return None


def _default_resources(resources: object, *, fill: bool) -> object:
    # Lenient: only well-typed spots are filled; the model reports the rest.
    if fill and (resources is None or resources == []):
        return [spec.model_dump() for spec in DEFAULT_RESOURCES]
    if isinstance(resources, list):
        for resource in resources:
            if isinstance(resource, dict):
                weight = resource.get("weight", 0)
                if type(weight) is int and weight == 0:
                    resource["weight"] = 1
    return resources


def _default_fit(data: dict[str, Any]) -> None:
    strategy = data.get("scoringStrategy")
    if strategy is None:
        data["scoringStrategy"] = ScoringStrategy(
            type=LEAST_ALLOCATED, resources=list(DEFAULT_RESOURCES)
        ).model_dump(exclude_none=True)
    elif isinstance(strategy, dict):
        # A strategy given without a type keeps "" (and is refused), as upstream.
        strategy["resources"] = _default_resources(strategy.get("resources"), fill=True)


def _default_balanced(data: dict[str, Any]) -> None:
    data["resources"] = _default_resources(data.get("resources"), fill=True)


def _default_spread(data: dict[str, Any]) -> None:
    if data.get("defaultingType", "") == "":
        data["defaultingType"] = SYSTEM_DEFAULTING


_DEFAULTERS: Final[dict[str, Callable[[dict[str, Any]], None]]] = {
    NODE_RESOURCES_FIT: _default_fit,
    NODE_RESOURCES_BALANCED_ALLOCATION: _default_balanced,
    POD_TOPOLOGY_SPREAD: _default_spread,
}


def without_nulls(data: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy without null fields (Go leaves a field it decodes null from unset)."""

    def clean(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: clean(item) for key, item in value.items() if item is not None}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    cleaned = clean(data)
    assert isinstance(cleaned, dict)
    return cleaned


def _omit_empty(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _omit_empty(item) for key, item in value.items() if item != []}
    if isinstance(value, list):
        return [_omit_empty(item) for item in value]
    return value


# -- validation helpers ----------------------------------------------------------------------


def _resource_weight_issues(resources: list[ResourceSpec], where: Path) -> list[Issue]:
    return [
        Issue(
            (*where, index, "weight"),
            f"must be in the range [1, {MAX_RESOURCE_WEIGHT}] (the weight of "
            f"{show(resource.name)}), got {resource.weight}",
        )
        for index, resource in enumerate(resources)
        if not 0 < resource.weight <= MAX_RESOURCE_WEIGHT
    ]


def _shape_issues(shape: list[UtilizationShapePoint], where: Path) -> list[Issue]:
    """``validateFunctionShape``: at least one point, utilization strictly increasing (the
    first offence only, as upstream), utilization 0..100 and scores 0..10."""
    if not shape:
        return [Issue(where, "is required: at least one point {utilization, score}")]
    issues: list[Issue] = []
    for index in range(1, len(shape)):
        previous, current = shape[index - 1].utilization, shape[index].utilization
        if previous >= current:
            issues.append(
                Issue(
                    (*where, index, "utilization"),
                    "must be greater than the previous point's utilization "
                    f"({previous}), got {current}",
                )
            )
            break
    for index, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            issues.append(
                Issue(
                    (*where, index, "utilization"),
                    f"must be in the range [0, 100], got {point.utilization}",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            issues.append(
                Issue(
                    (*where, index, "score"),
                    f"must be in the range [0, {MAX_CUSTOM_PRIORITY_SCORE}], got {point.score}",
                )
            )
    return issues


_QUALIFIED_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)


def qualified_name_problems(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName``: what is wrong with a label key (in its words)."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {_NAME_RULE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                problems.append("prefix part must be no more than 253 characters")
            if not _DNS_SUBDOMAIN.match(prefix):
                problems.append(
                    "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                    "alphanumeric characters, '-' or '.', and must start and end with an "
                    "alphanumeric character"
                )
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(name):
        problems.append(f"name part {_NAME_RULE}")
    return problems


def _label_value_problems(value: str) -> list[str]:
    problems: list[str] = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        problems.append(f"a valid label must be an empty string or {_NAME_RULE[5:]}")
    return problems


def _label_name_issues(value: str, where: Path) -> list[Issue]:
    return [
        Issue(where, f"{problem}, got {show(value)}") for problem in qualified_name_problems(value)
    ]


# -- errors --------------------------------------------------------------------------------


def pydantic_issue(error: ErrorDetails, model: type[BaseModel]) -> Issue:
    """One pydantic error of a strict model as an ``Issue`` in our words (Go's decoder
    refused the same: unknown fields, wrong types, integers beyond their Go type)."""
    loc: Path = tuple(error["loc"])
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = ctx.get("ge", ctx.get("le"))
        bits = 32 if bound in (_INT32_MIN, _INT32_MAX) else 64
        message = f"must fit in a {bits}-bit integer, got {show(error['input'])}"
    else:
        message = pydantic_message(error, model)
    return Issue(loc, message)


def render(issues: list[Issue], prefix: Path = ()) -> list[str]:
    """Issues as ``path: message`` lines, their paths (and refs) under ``prefix``."""

    def at(path: Path) -> str:
        return format_path((*prefix, *path))

    return [issue.render(at) for issue in issues]
