"""The catalogue of legacy predicate and priority names, at the bottom of the layers.

Both the SchedulingPolicy model (which validates names) and the engine's registry (which
binds names to functions) read this module; it imports nothing of the project, so no
arrow runs back up between them.

What lives here is data from kube-scheduler's legacy era (v1.13-v1.17):

* the built-in predicate and priority names and the accepted aliases;
* which argument kinds exist for custom (argument-carrying) entries;
* the fixed evaluation order the legacy scheduler used whatever a Policy file said
  (``predicatesOrdering`` upstream), used by ``convert`` and by the default set;
* the legacy DefaultProvider: the default predicates and the default priority weights.
"""

from __future__ import annotations

import re
from typing import Final

# -- predicates ---------------------------------------------------------------------

CHECK_NODE_CONDITION: Final = "CheckNodeCondition"
CHECK_NODE_UNSCHEDULABLE: Final = "CheckNodeUnschedulable"
GENERAL_PREDICATES: Final = "GeneralPredicates"
HOST_NAME: Final = "HostName"
POD_FITS_HOST_PORTS: Final = "PodFitsHostPorts"
MATCH_NODE_SELECTOR: Final = "MatchNodeSelector"
POD_FITS_RESOURCES: Final = "PodFitsResources"
NO_DISK_CONFLICT: Final = "NoDiskConflict"
POD_TOLERATES_NODE_TAINTS: Final = "PodToleratesNodeTaints"
POD_TOLERATES_NODE_NO_EXECUTE_TAINTS: Final = "PodToleratesNodeNoExecuteTaints"
CHECK_NODE_LABEL_PRESENCE: Final = "CheckNodeLabelPresence"
CHECK_SERVICE_AFFINITY: Final = "CheckServiceAffinity"
MAX_EBS_VOLUME_COUNT: Final = "MaxEBSVolumeCount"
MAX_GCE_PD_VOLUME_COUNT: Final = "MaxGCEPDVolumeCount"
MAX_CSI_VOLUME_COUNT: Final = "MaxCSIVolumeCountPred"
MAX_AZURE_DISK_VOLUME_COUNT: Final = "MaxAzureDiskVolumeCount"
MAX_CINDER_VOLUME_COUNT: Final = "MaxCinderVolumeCount"
CHECK_VOLUME_BINDING: Final = "CheckVolumeBinding"
NO_VOLUME_ZONE_CONFLICT: Final = "NoVolumeZoneConflict"
CHECK_NODE_MEMORY_PRESSURE: Final = "CheckNodeMemoryPressure"
CHECK_NODE_PID_PRESSURE: Final = "CheckNodePIDPressure"
CHECK_NODE_DISK_PRESSURE: Final = "CheckNodeDiskPressure"
EVEN_PODS_SPREAD: Final = "EvenPodsSpread"
MATCH_INTER_POD_AFFINITY: Final = "MatchInterPodAffinity"

#: kube-scheduler's fixed predicate evaluation order (``predicatesOrdering``), which the
#: legacy scheduler applied whatever order a Policy file listed its predicates in.
LEGACY_PREDICATE_ORDER: Final[tuple[str, ...]] = (
    CHECK_NODE_CONDITION,
    CHECK_NODE_UNSCHEDULABLE,
    GENERAL_PREDICATES,
    HOST_NAME,
    POD_FITS_HOST_PORTS,
    MATCH_NODE_SELECTOR,
    POD_FITS_RESOURCES,
    NO_DISK_CONFLICT,
    POD_TOLERATES_NODE_TAINTS,
    POD_TOLERATES_NODE_NO_EXECUTE_TAINTS,
    CHECK_NODE_LABEL_PRESENCE,
    CHECK_SERVICE_AFFINITY,
    MAX_EBS_VOLUME_COUNT,
    MAX_GCE_PD_VOLUME_COUNT,
    MAX_CSI_VOLUME_COUNT,
    MAX_AZURE_DISK_VOLUME_COUNT,
    MAX_CINDER_VOLUME_COUNT,
    CHECK_VOLUME_BINDING,
    NO_VOLUME_ZONE_CONFLICT,
    CHECK_NODE_MEMORY_PRESSURE,
    CHECK_NODE_PID_PRESSURE,
    CHECK_NODE_DISK_PRESSURE,
    EVEN_PODS_SPREAD,
    MATCH_INTER_POD_AFFINITY,
)

#: The names of the seeds' write-ups (``/work/shared/seeds``: the v1.0-era names
#: PodFitsHost and PodSelectorMatches, the Go function names of the predicates-ordering
#: table) and the built-in that succeeded each. kube-scheduler never registered them;
#: they are accepted with a note, and ``convert`` writes the successor.
SEED_PREDICATE_ALIASES: Final[dict[str, str]] = {
    "PodFitsHost": HOST_NAME,
    "PodSelectorMatches": MATCH_NODE_SELECTOR,
    "PodMatchNodeSelector": MATCH_NODE_SELECTOR,
    "CheckNodeConditionPredicate": CHECK_NODE_CONDITION,
    "CheckNodeMemoryPressurePredicate": CHECK_NODE_MEMORY_PRESSURE,
    "CheckNodeDiskPressurePredicate": CHECK_NODE_DISK_PRESSURE,
    "VolumeZonePredicate": NO_VOLUME_ZONE_CONFLICT,
    "VolumeNodePredicate": CHECK_VOLUME_BINDING,
    "InterPodAffinityMatches": MATCH_INTER_POD_AFFINITY,
}

#: Seeds' names that mean no single built-in, with what to write instead.
SEED_PREDICATE_HINTS: Final[dict[str, str]] = {
    "MaxPDVolumeCountPredicate": (
        "the seeds' name of the function behind MaxEBSVolumeCount, MaxGCEPDVolumeCount and "
        "MaxAzureDiskVolumeCount: name those you want"
    ),
}

#: Accepted alternative spellings and what they mean: kube-scheduler's own
#: (PodFitsPorts, registered for v1.0 compatibility) and the seeds'.
PREDICATE_ALIASES: Final[dict[str, str]] = {
    "PodFitsPorts": POD_FITS_HOST_PORTS,
    **SEED_PREDICATE_ALIASES,
}

#: Built-in names whose work is their argument's. v1.13-v1.16 refused them bare; v1.17+
#: (a registered plugin for each) accepted them bare, and with no labels they filter
#: nothing. Both are accepted bare here, doing what v1.17+ did: nothing.
PREDICATES_WITH_ARGUMENT: Final = frozenset({CHECK_NODE_LABEL_PRESENCE, CHECK_SERVICE_AFFINITY})

#: Every name a predicate entry may carry without an argument (aliases included).
BUILTIN_PREDICATES: Final = frozenset(LEGACY_PREDICATE_ORDER) | frozenset(PREDICATE_ALIASES)

#: The predicates kube-scheduler v1.12+ removed from its registry while the
#: TaintNodesByCondition gate was on (its default; locked on in v1.17, gone in v1.18): a
#: Policy naming one failed to start with default gates. They run here as v1.13 ran them
#: with the gate off (``examples/policies/legacy-v1.13.yaml``).
GATE_OFF_PREDICATES: Final = frozenset(
    {
        CHECK_NODE_CONDITION,
        CHECK_NODE_MEMORY_PRESSURE,
        CHECK_NODE_PID_PRESSURE,
        CHECK_NODE_DISK_PRESSURE,
    }
)

#: kube-scheduler v1.12-v1.22 with default gates always ran these, listed or not
#: (``mandatoryFitPredicates`` / ``mandatoryPredicates``).
MANDATORY_PREDICATES: Final = (CHECK_NODE_UNSCHEDULABLE, POD_TOLERATES_NODE_TAINTS)

#: Argument kind of a custom predicate -> the built-in whose slot it takes in the order.
PREDICATE_ARGUMENT_KINDS: Final[dict[str, str]] = {
    "labelsPresence": CHECK_NODE_LABEL_PRESENCE,
    "serviceAffinity": CHECK_SERVICE_AFFINITY,
}

# -- priorities ---------------------------------------------------------------------

LEAST_REQUESTED: Final = "LeastRequestedPriority"
MOST_REQUESTED: Final = "MostRequestedPriority"
BALANCED_RESOURCE_ALLOCATION: Final = "BalancedResourceAllocation"
SELECTOR_SPREAD: Final = "SelectorSpreadPriority"
SERVICE_SPREADING: Final = "ServiceSpreadingPriority"
INTER_POD_AFFINITY: Final = "InterPodAffinityPriority"
NODE_AFFINITY: Final = "NodeAffinityPriority"
TAINT_TOLERATION: Final = "TaintTolerationPriority"
IMAGE_LOCALITY: Final = "ImageLocalityPriority"
NODE_PREFER_AVOID_PODS: Final = "NodePreferAvoidPodsPriority"
EQUAL: Final = "EqualPriority"
RESOURCE_LIMITS: Final = "ResourceLimitsPriority"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatioPriority"
EVEN_PODS_SPREAD_PRIORITY: Final = "EvenPodsSpreadPriority"

BUILTIN_PRIORITIES: Final = frozenset(
    {
        LEAST_REQUESTED,
        MOST_REQUESTED,
        BALANCED_RESOURCE_ALLOCATION,
        SELECTOR_SPREAD,
        SERVICE_SPREADING,
        INTER_POD_AFFINITY,
        NODE_AFFINITY,
        TAINT_TOLERATION,
        IMAGE_LOCALITY,
        NODE_PREFER_AVOID_PODS,
        EQUAL,
        RESOURCE_LIMITS,
        REQUESTED_TO_CAPACITY_RATIO,
        EVEN_PODS_SPREAD_PRIORITY,
    }
)

#: The seeds' spelling of a built-in priority (seed 002's "BalanceResourceAllocation").
SEED_PRIORITY_ALIASES: Final[dict[str, str]] = {
    "BalanceResourceAllocation": BALANCED_RESOURCE_ALLOCATION,
}

PRIORITY_ALIASES: Final[dict[str, str]] = {**SEED_PRIORITY_ALIASES}

#: The seeds' names for the argument-carrying kinds (the Go functions behind them): used
#: bare they cannot mean a built-in, so the refusal says which argument they need.
SEED_ARGUMENT_NAMES: Final[dict[str, str]] = {
    "CalculateNodeLabelPriority": "labelPreference",
    "CalculateAntiAffinityPriority": "serviceAntiAffinity",
}

#: Upstream's algorithm name rule (``validateAlgorithmNameOrDie``): kube-scheduler v1.13-
#: v1.16 registered a custom (argument-carrying) predicate or priority under the Policy's
#: name and exited at start on a name failing it. v1.17+ registered custom entries under
#: their plugin's name instead and no longer checked.
NAME_RULE: Final = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$")

#: Argument kinds of custom priorities.
PRIORITY_ARGUMENT_KINDS: Final = frozenset(
    {"labelPreference", "serviceAntiAffinity", "requestedToCapacityRatioArguments"}
)

# -- the legacy DefaultProvider -----------------------------------------------------

#: The last legacy DefaultProvider: kube-scheduler v1.19-v1.22 with default feature gates
#: (``DefaultPredicates`` of the legacy registry). Node conditions arrive as taints
#: (TaintNodesByCondition, default on since v1.12, GA in v1.17), so CheckNodeUnschedulable
#: and PodToleratesNodeTaints replace CheckNodeCondition and the three pressure
#: predicates; EvenPodsSpread is in (beta, on, in v1.18; GA in v1.19).
DEFAULT_PREDICATES: Final[frozenset[str]] = frozenset(
    {
        NO_VOLUME_ZONE_CONFLICT,
        MAX_EBS_VOLUME_COUNT,
        MAX_GCE_PD_VOLUME_COUNT,
        MAX_AZURE_DISK_VOLUME_COUNT,
        MAX_CSI_VOLUME_COUNT,
        MATCH_INTER_POD_AFFINITY,
        NO_DISK_CONFLICT,
        GENERAL_PREDICATES,
        POD_TOLERATES_NODE_TAINTS,
        CHECK_VOLUME_BINDING,
        CHECK_NODE_UNSCHEDULABLE,
        EVEN_PODS_SPREAD,
    }
)

#: Default predicates in the order they run (the legacy fixed order).
DEFAULT_PREDICATE_ORDER: Final[tuple[str, ...]] = tuple(
    name for name in LEGACY_PREDICATE_ORDER if name in DEFAULT_PREDICATES
)

#: Default priorities and weights (v1.19-v1.22 ``DefaultPriorities``): the v1.13 set plus
#: EvenPodsSpreadPriority at weight 2 (v1.18 registered it at 1; v1.19 doubled it so that
#: a user's spreading preference weighs as much as LeastRequestedPriority).
DEFAULT_PRIORITY_WEIGHTS: Final[tuple[tuple[str, int], ...]] = (
    (SELECTOR_SPREAD, 1),
    (INTER_POD_AFFINITY, 1),
    (LEAST_REQUESTED, 1),
    (BALANCED_RESOURCE_ALLOCATION, 1),
    (NODE_PREFER_AVOID_PODS, 10000),
    (NODE_AFFINITY, 1),
    (TAINT_TOLERATION, 1),
    (IMAGE_LOCALITY, 1),
    (EVEN_PODS_SPREAD_PRIORITY, 2),
)

#: The v1.13-v1.16 DefaultProvider with TaintNodesByCondition off (the "gate-off" set,
#: ``examples/policies/legacy-v1.13.yaml``): node health through CheckNodeCondition and
#: the pressure predicates, no EvenPodsSpread.
LEGACY_V1_13_PREDICATES: Final[frozenset[str]] = (
    DEFAULT_PREDICATES - {CHECK_NODE_UNSCHEDULABLE, EVEN_PODS_SPREAD}
) | {
    CHECK_NODE_CONDITION,
    CHECK_NODE_MEMORY_PRESSURE,
    CHECK_NODE_PID_PRESSURE,
    CHECK_NODE_DISK_PRESSURE,
}
LEGACY_V1_13_PRIORITY_WEIGHTS: Final[tuple[tuple[str, int], ...]] = DEFAULT_PRIORITY_WEIGHTS[:-1]

#: Highest score one priority gives one node (``schedulerapi.MaxPriority``).
MAX_PRIORITY: Final = 10
#: The legacy API refused weights at or above this (``MaxInt64 / MaxPriority``).
MAX_WEIGHT: Final = (2**63 - 1) // MAX_PRIORITY

DEFAULT_SCHEDULER_NAME: Final = "policy-scheduler"
#: kube-scheduler's schedulerName (the API server's default for a pod): served only when
#: the operator is told to (``run --allow-default-scheduler``).
KUBE_SCHEDULER_NAME: Final = "default-scheduler"


def canonical_predicate(name: str) -> str:
    """The built-in a predicate name means (aliases resolved); other names unchanged."""
    return PREDICATE_ALIASES.get(name, name)


def canonical_priority(name: str) -> str:
    return PRIORITY_ALIASES.get(name, name)


def legacy_rank(name: str, argument_kind: str | None = None) -> int:
    """Position of a predicate in the legacy fixed order (custom ones take their kind's slot)."""
    if argument_kind is not None:
        name = PREDICATE_ARGUMENT_KINDS[argument_kind]
    return LEGACY_PREDICATE_ORDER.index(canonical_predicate(name))


# -- the SchedulingPolicy resource (its coordinates, written once) ------------------------

CRD_GROUP: Final = "policyscheduler.io"
CRD_VERSION: Final = "v1alpha1"
CRD_API_VERSION: Final = f"{CRD_GROUP}/{CRD_VERSION}"
CRD_KIND: Final = "SchedulingPolicy"
CRD_PLURAL: Final = "schedulingpolicies"
CRD_SINGULAR: Final = "schedulingpolicy"
CRD_SHORT_NAME: Final = "schedpol"


# -- the scheduling framework (seed 004; kube-scheduler v1.19+) ---------------------------

#: Extension points, in the order a pod meets them, as ``spec.plugins`` spells them
#: (kube-scheduler's ``Plugins`` field names). ``multiPoint`` enables a plugin at every
#: point it implements except ``queueSort`` (exactly one runs: it is named on its own).
PRE_ENQUEUE: Final = "preEnqueue"
QUEUE_SORT: Final = "queueSort"
PRE_FILTER: Final = "preFilter"
FILTER: Final = "filter"
POST_FILTER: Final = "postFilter"
PRE_SCORE: Final = "preScore"
SCORE: Final = "score"
RESERVE: Final = "reserve"
PERMIT: Final = "permit"
PRE_BIND: Final = "preBind"
BIND: Final = "bind"
POST_BIND: Final = "postBind"
MULTI_POINT: Final = "multiPoint"
EXTENSION_POINTS: Final[tuple[str, ...]] = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
)
#: The entry-point group third-party plugins register under (``Name = "pkg.mod:Class"``).
PLUGIN_ENTRY_POINT_GROUP: Final = "policy_scheduler.plugins"
#: kube-scheduler's MaxNodeScore: a plugin's score after NormalizeScore is 0..100.
MAX_NODE_SCORE: Final = 100
#: A Permit plugin's Wait is capped at this (kube-scheduler's maxTimeout, 15 min).
MAX_PERMIT_WAIT_SECONDS: Final = 15 * 60


# -- kube-scheduler v1.25-v1.30's in-tree framework plugins -----------------------------

#: The in-tree plugins of kube-scheduler v1.30 that policy-scheduler runs, and the
#: extension points each implements there (in ``EXTENSION_POINTS`` order). The policy
#: model reads it to accept a Filter plugin in ``predicates`` and a Score plugin in
#: ``priorities``; ``pluginargs`` builds its catalogue (argument models, the config
#: versions that know each name) on it.
IN_TREE_PLUGIN_POINTS: Final[dict[str, tuple[str, ...]]] = {
    "SchedulingGates": (PRE_ENQUEUE,),
    "PrioritySort": (QUEUE_SORT,),
    "NodeUnschedulable": (FILTER,),
    "NodeName": (FILTER,),
    "TaintToleration": (FILTER, PRE_SCORE, SCORE),
    "NodeAffinity": (PRE_FILTER, FILTER, PRE_SCORE, SCORE),
    "NodePorts": (PRE_FILTER, FILTER),
    "NodeResourcesFit": (PRE_FILTER, FILTER, PRE_SCORE, SCORE),
    "VolumeRestrictions": (PRE_FILTER, FILTER),
    "EBSLimits": (PRE_FILTER, FILTER),
    "GCEPDLimits": (PRE_FILTER, FILTER),
    "NodeVolumeLimits": (PRE_FILTER, FILTER),
    "AzureDiskLimits": (PRE_FILTER, FILTER),
    "CinderLimits": (PRE_FILTER, FILTER),
    "VolumeBinding": (PRE_FILTER, FILTER, PRE_SCORE, SCORE, RESERVE, PRE_BIND),
    "VolumeZone": (PRE_FILTER, FILTER),
    "PodTopologySpread": (PRE_FILTER, FILTER, PRE_SCORE, SCORE),
    "InterPodAffinity": (PRE_FILTER, FILTER, PRE_SCORE, SCORE),
    "DefaultPreemption": (POST_FILTER,),
    "NodeResourcesBalancedAllocation": (PRE_SCORE, SCORE),
    "ImageLocality": (SCORE,),
    "DefaultBinder": (BIND,),
}
#: kube-scheduler v1.34's in-tree plugins beyond v1.30's that a SchedulingPolicy can
#: name (a KubeSchedulerConfiguration is still read as v1.30 reads it): DRA.
V134_PLUGIN_POINTS: Final[dict[str, tuple[str, ...]]] = {
    "DynamicResources": (PRE_ENQUEUE, PRE_FILTER, FILTER, POST_FILTER, RESERVE, PRE_BIND),
}
IN_TREE_FILTER_PLUGINS: Final = frozenset(
    name
    for name, points in (*IN_TREE_PLUGIN_POINTS.items(), *V134_PLUGIN_POINTS.items())
    if FILTER in points
)
IN_TREE_SCORE_PLUGINS: Final = frozenset(
    name for name, points in IN_TREE_PLUGIN_POINTS.items() if SCORE in points
)
#: kube-scheduler's in-tree plugins (v1.25-v1.30's, and v1.34's DRA): built-in names.
INTREE_PLUGIN_NAMES: Final[frozenset[str]] = frozenset(IN_TREE_PLUGIN_POINTS) | frozenset(
    V134_PLUGIN_POINTS
)
#: The legacy stages as plugins of the pipeline (what a legacy policy translates into).
LEGACY_PREEMPTION: Final = "LegacyPreemption"
DEFAULT_BINDER: Final = "DefaultBinder"
PRIORITY_SORT: Final = "PrioritySort"

_installed: frozenset[str] | None = None
_installed_at = 0.0


def installed_plugin_names(*, max_age: float | None = None) -> frozenset[str]:
    """Names installed packages register under :data:`PLUGIN_ENTRY_POINT_GROUP`.

    Read from the packages' metadata (nothing is imported; ~10 ms), then kept; read
    again when ``max_age`` seconds have passed since (the operator reads a policy with
    a few seconds' age, so that a plugin installed meanwhile is found without a restart).
    """
    global _installed, _installed_at
    import time

    now = time.monotonic()
    if _installed is None or (max_age is not None and now - _installed_at >= max_age):
        from importlib.metadata import entry_points

        _installed = frozenset(ep.name for ep in entry_points(group=PLUGIN_ENTRY_POINT_GROUP))
        _installed_at = now
    return _installed


def installed_names_read_at() -> float:
    """When :func:`installed_plugin_names` last read the metadata (monotonic seconds)."""
    return _installed_at


def is_plugin_name(name: str) -> bool:
    """A built-in plugin's name, or one an installed package registers."""
    return (
        name in INTREE_PLUGIN_NAMES
        or name in (LEGACY_PREEMPTION, DEFAULT_BINDER)
        or name in installed_plugin_names()
    )
