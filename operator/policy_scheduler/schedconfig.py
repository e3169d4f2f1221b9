"""A KubeSchedulerConfiguration, read as kube-scheduler reads it: one SchedulingPolicy per profile.

``convert_configuration`` takes a parsed ``KubeSchedulerConfiguration``
(``kubescheduler.config.k8s.io/v1``, ``v1beta3`` or ``v1beta2``; each read as the last
kube-scheduler release that served it: v1.30, v1.28, v1.27, ``pluginargs.RELEASE_OF``)
and does what kube-scheduler does at start, in its order:

1. **Decode strictly**: unknown fields, wrong types and integers beyond their Go type are
   refused (kube-scheduler's codec is strict); the fields one version has and another
   has not (v1's ``delayCacheUntilActive`` and per-profile ``percentageOfNodesToScore``,
   v1beta2's ``healthzBindAddress`` / ``metricsBindAddress``) follow the version.
2. **Default** (``SetDefaults_KubeSchedulerConfiguration``): no profile is one profile;
   a single profile without ``schedulerName`` is ``default-scheduler``; each profile's
   plugins are merged into the version's defaults (``merge_plugin_set``: a custom entry
   of a default's name replaces it *in place*, weight and all; the other custom entries
   follow the defaults, in file order; ``"*"`` in ``disabled`` drops every default of
   the point; a named one drops that default). v1 and v1beta3 keep every default in
   ``multiPoint``; v1beta2 lists them per point. v1beta3 does not merge ``preEnqueue``
   and v1beta2 neither ``preEnqueue`` nor ``multiPoint``: what a file writes there is
   dropped, as upstream drops it (with a note). Each enabled plugin with arguments gets
   its defaulted ``pluginConfig`` args (``pluginargs``).
3. **Validate** (validation.go): the percentages 0..100, parallelism and backoffs,
   leader election, unique non-empty schedulerNames, the same queueSort in every
   profile, unique ``pluginConfig`` names, each args object (NodeResourcesFit's only
   when the plugin is enabled: upstream's validation table keys it by a wrong name, so
   only the plugin's constructor checks it), the plugins a version refuses
   (SelectorSpread in v1), extenders (a positive weight with a prioritizeVerb, one
   binder, unique extended resource names).
4. **Build each profile's framework** (``expand_plugins``, NewFramework of
   pkg/scheduler/framework/runtime): every enabled plugin must exist and implement the
   point it is enabled at, once per point. ``multiPoint`` enables a plugin at every point
   it implements, except where that point disables it (or ``"*"``). A plugin enabled
   both at a point and in multiPoint takes the point's entry, and those come first, in
   the point's order; then multiPoint's own, in its order; then the point's other
   plugins. A Score plugin's weight is its score entry's, else its multiPoint entry's;
   unset or 0 means 1. Exactly one queueSort plugin, at least one bind plugin.

Each error is one line naming the field in the file
(``KubeSchedulerConfiguration: profiles[0].plugins.score.enabled[2].name: ...``); every
error found is reported. Where policy-scheduler refuses what kube-scheduler accepts, the
message says so: a negative Score weight (upstream subtracts it), SelectorSpread in
v1beta2/v1beta3 (policy-scheduler does not implement it), a profile name no pod could
name (not a DNS subdomain), an extender without a urlPrefix.

**The SchedulingPolicy of a profile** is named after its schedulerName and states the
whole pipeline, nothing left implicit: ``predicates`` are the Filter plugins in run order
(no ``order`` values), ``priorities`` the Score plugins with their weights, ``plugins``
every other point's plugins in order with ``disabled: [{name: "*"}]`` (so that nothing is
added to them), ``pluginConfig`` the defaulted args of every plugin that runs and takes
args (sorted by name, as kube-scheduler prints its profile), ``percentageOfNodesToScore``
(the profile's, else the global one; 0 is adaptive) and the global ``extenders``. The
same configuration always gives the same text.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from policy_scheduler import names, pluginargs
from policy_scheduler.engine.pluginsets import PluginSet, Ref, expand_point, merge_plugin_set
from policy_scheduler.pluginargs import (
    CATALOGUE,
    CONFIG_VERSIONS,
    RELEASE_OF,
    V1,
    V1BETA2,
    V1BETA3,
    Int32,
    Int64,
    parse_duration,
)
from policy_scheduler.policy import (
    Issue,
    Path,
    PolicyError,
    SchedulingPolicy,
    extended_resource_name_problem,
    object_name_problem,
    parse_policy,
    policy_to_object,
    show,
)

KIND: Final = "KubeSchedulerConfiguration"
#: kube-scheduler's DefaultSchedulerName, for a single profile that names none.
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
_SUBJECT: Final = KIND
_ALL: Final = "*"

#: The points a profile's ``plugins`` may write (multiPoint last), and the points of a
#: framework in the order NewFramework fills them (``getExtensionPoints``).
_POINTS: Final = (*names.EXTENSION_POINTS, names.MULTI_POINT)
_FRAMEWORK_ORDER: Final = (
    names.PRE_FILTER, names.FILTER, names.POST_FILTER, names.RESERVE, names.PRE_SCORE,
    names.SCORE, names.PRE_BIND, names.BIND, names.POST_BIND, names.PERMIT,
    names.PRE_ENQUEUE, names.QUEUE_SORT,
)  # fmt: skip
#: The points each version's defaulting merges (the others keep the version's defaults).
_MERGED: Final[dict[str, tuple[str, ...]]] = {
    V1: _POINTS,
    V1BETA3: tuple(p for p in _POINTS if p != names.PRE_ENQUEUE),
    V1BETA2: tuple(p for p in _POINTS if p not in (names.PRE_ENQUEUE, names.MULTI_POINT)),
}
#: Points written in a SchedulingPolicy's ``plugins`` (Filter and Score have their lists).
_POLICY_POINTS: Final = tuple(
    p for p in names.EXTENSION_POINTS if p not in (names.FILTER, names.SCORE)
)


# -- plugin sets ---------------------------------------------------------------------------


def _refs(*entries: str | tuple[str, int]) -> tuple[Ref, ...]:
    return tuple(Ref(e) if isinstance(e, str) else Ref(e[0], e[1]) for e in entries)


_V1_28_MULTI_POINT: Final = _refs(
    "PrioritySort", "NodeUnschedulable", "NodeName", ("TaintToleration", 3),
    ("NodeAffinity", 2), "NodePorts", ("NodeResourcesFit", 1), "VolumeRestrictions",
    "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits", "VolumeBinding",
    "VolumeZone", ("PodTopologySpread", 2), ("InterPodAffinity", 2), "DefaultPreemption",
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), "DefaultBinder",
)  # fmt: skip

#: v1.34's (v1): SchedulingGates first (as since v1.29), the in-tree volume limits of
#: CSI-migrated volume plugins gone (v1.31), DynamicResources before DefaultPreemption
#: (DRA is GA and on: PostFilter frees an idle claim before evicting a pod).
_V1_34_MULTI_POINT: Final = _refs("SchedulingGates") + tuple(
    ref
    for ref in _V1_28_MULTI_POINT
    if ref.name not in ("EBSLimits", "GCEPDLimits", "AzureDiskLimits")
    for ref in ((Ref("DynamicResources"), ref) if ref.name == "DefaultPreemption" else (ref,))
)

#: Each version's default plugins (``getDefaultPlugins`` with default feature gates:
#: PodSchedulingReadiness on from v1.27, so SchedulingGates is in; VolumeCapacityPriority
#: off; DynamicResourceAllocation off up to v1.30, on (GA) in v1.34).
DEFAULT_PLUGINS: Final[dict[str, dict[str, PluginSet]]] = {
    V1: {names.MULTI_POINT: PluginSet(_V1_34_MULTI_POINT)},
    V1BETA3: {names.MULTI_POINT: PluginSet(_V1_28_MULTI_POINT + _refs("SchedulingGates"))},
    V1BETA2: {
        names.PRE_ENQUEUE: PluginSet(_refs("SchedulingGates")),
        names.QUEUE_SORT: PluginSet(_refs("PrioritySort")),
        names.PRE_FILTER: PluginSet(_refs(
            "NodeResourcesFit", "NodePorts", "VolumeRestrictions", "PodTopologySpread",
            "InterPodAffinity", "VolumeBinding", "VolumeZone", "NodeAffinity",
        )),
        names.FILTER: PluginSet(_refs(
            "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
            "NodeResourcesFit", "VolumeRestrictions", "EBSLimits", "GCEPDLimits",
            "NodeVolumeLimits", "AzureDiskLimits", "VolumeBinding", "VolumeZone",
            "PodTopologySpread", "InterPodAffinity",
        )),
        names.POST_FILTER: PluginSet(_refs("DefaultPreemption")),
        names.PRE_SCORE: PluginSet(_refs(
            "InterPodAffinity", "PodTopologySpread", "TaintToleration", "NodeAffinity",
            "NodeResourcesFit", "NodeResourcesBalancedAllocation",
        )),
        names.SCORE: PluginSet(_refs(
            ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
            ("InterPodAffinity", 1), ("NodeResourcesFit", 1), ("NodeAffinity", 1),
            ("PodTopologySpread", 2), ("TaintToleration", 1),
        )),
        names.RESERVE: PluginSet(_refs("VolumeBinding")),
        names.PRE_BIND: PluginSet(_refs("VolumeBinding")),
        names.BIND: PluginSet(_refs("DefaultBinder")),
    },
}  # fmt: skip


def merge_plugins(
    version: str, custom: Mapping[str, PluginSet] | None
) -> tuple[dict[str, PluginSet], list[str]]:
    """``mergePlugins``: a profile's plugin sets over the version's defaults, and the
    points written that the version's defaulting drops (v1beta3: preEnqueue; v1beta2:
    preEnqueue and multiPoint)."""
    merged = dict(DEFAULT_PLUGINS[version])
    if custom is None:
        return merged, []
    dropped: list[str] = []
    for point, written in custom.items():
        if point not in _MERGED[version]:
            if written.enabled or written.disabled:
                dropped.append(point)
            continue
        merged[point] = merge_plugin_set(merged.get(point, PluginSet()), written)
    return merged, dropped


@dataclass
class Framework:
    """A profile's pipeline: each point's plugins in order, the Score weights, and what
    was wrong (each issue at the entry the file wrote, else at the point)."""

    points: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)


def expand_plugins(
    plugins: Mapping[str, PluginSet],
    points_of: Mapping[str, tuple[str, ...]],
    *,
    base: Path = (),
    unknown: Callable[[str], str] | None = None,
) -> Framework:
    """NewFramework's plugin lists: ``plugins`` are the merged sets (multiPoint included),
    ``points_of`` the points each plugin it may name implements (a name missing there
    does not exist; ``unknown`` says why). Issues name the entry the file wrote, else
    the point under ``base``. See the module docstring for the rules."""
    framework = Framework()
    issues = framework.issues
    empty = PluginSet()
    why = unknown or (lambda name: f"unknown plugin {show(name)}{_close(name, list(points_of))}")

    def at(ref: Ref, point: str) -> Path:
        return (*ref.path, "name") if ref.path is not None else (*base, point)

    for point in _FRAMEWORK_ORDER:
        listed: list[str] = []
        first: dict[str, Ref] = {}
        for ref in plugins.get(point, empty).enabled:
            where = at(ref, point)
            implemented = points_of.get(ref.name)
            if implemented is None:
                issues.append(Issue(where, why(ref.name)))
            elif point not in implemented:
                issues.append(
                    Issue(
                        where,
                        f"{show(ref.name)} does not implement {point} "
                        f"(it implements {', '.join(implemented)})",
                    )
                )
            elif ref.name in first:
                previous = first[ref.name].path
                refs = ((*previous, "name"),) if previous is not None else ()
                issues.append(
                    Issue(
                        where,
                        f"{show(ref.name)} is enabled twice at {point}"
                        + (", also at" if refs else ""),
                        refs,
                    )
                )
            else:
                first[ref.name] = ref
                listed.append(ref.name)
        framework.points[point] = listed

    multi = plugins.get(names.MULTI_POINT, empty)
    known: list[Ref] = []
    for ref in multi.enabled:
        if ref.name not in points_of:
            issues.append(Issue(at(ref, names.MULTI_POINT), why(ref.name)))
        else:
            known.append(ref)
    twice: set[Path | None] = set()
    if known:
        for point in _FRAMEWORK_ORDER:
            point_set = plugins.get(point, empty)
            if _ALL in point_set.disabled:
                continue
            explicit = framework.points[point]
            here = [
                ref
                for ref in known
                if point in points_of[ref.name] and ref.name not in point_set.disabled
            ]
            seen: set[str] = set()
            for ref in here:
                if ref.name in seen and ref.name not in explicit and ref.path not in twice:
                    twice.add(ref.path)
                    issues.append(
                        Issue(
                            at(ref, names.MULTI_POINT),
                            f"{show(ref.name)} is enabled twice in multiPoint",
                        )
                    )
                seen.add(ref.name)
            framework.points[point] = expand_point(
                explicit, [ref.name for ref in here], point_set.disabled
            )

    for ref in (*plugins.get(names.SCORE, empty).enabled, *multi.enabled):
        if ref.name in framework.weights or names.SCORE not in points_of.get(ref.name, ()):
            continue
        weight = ref.weight or 1
        if weight < 0:
            issues.append(
                Issue(
                    (*ref.path, "weight") if ref.path is not None else (*base, names.SCORE),
                    f"must not be negative, got {weight} (kube-scheduler v1.30 accepts it and "
                    "subtracts the score; policy-scheduler weights are positive)",
                )
            )
        framework.weights[ref.name] = weight

    if len(framework.points[names.QUEUE_SORT]) != 1 and not issues:
        got = framework.points[names.QUEUE_SORT]
        issues.append(
            Issue(
                (*base, names.QUEUE_SORT),
                f"exactly one queueSort plugin must be enabled, got {len(got)}"
                + (f" ({', '.join(got)})" if got else ""),
            )
        )
    if not framework.points[names.BIND] and not issues:
        issues.append(
            Issue((*base, names.BIND), "at least one bind plugin must be enabled, got none")
        )
    return framework


def _unknown_in(version: str) -> Callable[[str], str]:
    """Why kube-scheduler of ``version`` has no plugin of a name."""

    def why(name: str) -> str:
        plugin = CATALOGUE.get(name)
        if plugin is not None and plugin.versions:
            return f"{show(name)} was invalid in {version}: {plugin.history}"
        if plugin is not None:
            return f"{show(name)} is not a plugin of kube-scheduler v1.25-v1.30: {plugin.history}"
        running = [n for n, p in CATALOGUE.items() if p.runs]
        return (
            f"unknown plugin {show(name)}: kube-scheduler {RELEASE_OF[version]} has no such "
            f"in-tree plugin{_close(name, running)}"
        )

    return why


def _close(word: str, choices: Sequence[str]) -> str:
    folded = {choice.casefold(): choice for choice in sorted(choices, reverse=True)}
    found = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.75)
    return f" (did you mean {folded[found[0]]}?)" if found else ""


# -- the file's shape (strict, as kube-scheduler's codec) ---------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class PluginModel(_Strict):
    """A ``Plugin`` entry as the file writes it."""

    name: str = ""
    weight: Int32 | None = None


class PluginSetModel(_Strict):
    """A ``PluginSet`` as the file writes it."""

    enabled: list[PluginModel] = []
    disabled: list[PluginModel] = []


class PluginsModel(_Strict):
    """A profile's ``plugins``: a PluginSet per extension point and multiPoint."""

    preEnqueue: PluginSetModel | None = None
    queueSort: PluginSetModel | None = None
    preFilter: PluginSetModel | None = None
    filter: PluginSetModel | None = None
    postFilter: PluginSetModel | None = None
    preScore: PluginSetModel | None = None
    score: PluginSetModel | None = None
    reserve: PluginSetModel | None = None
    permit: PluginSetModel | None = None
    preBind: PluginSetModel | None = None
    bind: PluginSetModel | None = None
    postBind: PluginSetModel | None = None
    multiPoint: PluginSetModel | None = None


class PluginConfigModel(_Strict):
    """A ``pluginConfig`` entry; its args are read by ``pluginargs``."""

    name: str = ""
    args: Any = None


class ProfileModel(_Strict):
    """A ``KubeSchedulerProfile`` as the file writes it."""

    schedulerName: str | None = None
    percentageOfNodesToScore: Int32 | None = None  # v1 only
    plugins: PluginsModel | None = None
    pluginConfig: list[PluginConfigModel] = []


class ExtenderTLSModel(_Strict):
    """An extender's ``tlsConfig`` (the byte fields are base64, as Go's []byte)."""

    insecure: bool = False
    serverName: str = ""
    certFile: str = ""
    keyFile: str = ""
    caFile: str = ""
    certData: str = ""
    keyData: str = ""
    caData: str = ""


class ManagedResourceModel(_Strict):
    """An extended resource an extender manages."""

    name: str = ""
    ignoredByScheduler: bool = False


class ExtenderModel(_Strict):
    """An ``Extender`` of the configuration (``httpTimeout`` a duration string)."""

    urlPrefix: str = ""
    filterVerb: str = ""
    preemptVerb: str = ""
    prioritizeVerb: str = ""
    weight: Int64 = 0
    bindVerb: str = ""
    enableHTTPS: bool = False
    tlsConfig: ExtenderTLSModel | None = None
    httpTimeout: str | None = None
    nodeCacheCapable: bool = False
    managedResources: list[ManagedResourceModel] = []
    ignorable: bool = False


class LeaderElectionModel(_Strict):
    """``leaderElection``, with the defaults kube-scheduler gives it."""

    leaderElect: bool = True
    leaseDuration: str = "15s"
    renewDeadline: str = "10s"
    retryPeriod: str = "2s"
    resourceLock: str = "leases"
    resourceName: str = "kube-scheduler"
    resourceNamespace: str = "kube-system"


class ClientConnectionModel(_Strict):
    """``clientConnection`` (read and checked, not used by policy-scheduler)."""

    kubeconfig: str = ""
    acceptContentTypes: str = ""
    contentType: str = ""
    qps: float | int = 0
    burst: Int32 = 0


class ConfigurationModel(_Strict):
    """A whole KubeSchedulerConfiguration, with the defaults SetDefaults gives."""

    apiVersion: str
    kind: str
    parallelism: Int32 = 16
    leaderElection: LeaderElectionModel = LeaderElectionModel()
    clientConnection: ClientConnectionModel = ClientConnectionModel()
    enableProfiling: bool | None = None
    enableContentionProfiling: bool | None = None
    percentageOfNodesToScore: Int32 = 0
    podInitialBackoffSeconds: Int64 = 1
    podMaxBackoffSeconds: Int64 = 10
    profiles: list[ProfileModel] = []
    extenders: list[ExtenderModel] = []
    delayCacheUntilActive: bool = False  # v1 only
    healthzBindAddress: str | None = None  # v1beta2 only
    metricsBindAddress: str | None = None  # v1beta2 only


#: The configuration's fields for the whole scheduler process, and what becomes of them
#: here (each one written draws a note from validate, convert and simulate).
PROCESS_FIELDS: Final[dict[str, str]] = {
    "podInitialBackoffSeconds": (
        "the operator's backoff is set with `run --pod-initial-backoff-seconds` "
        "(chart value podInitialBackoffSeconds)"
    ),
    "podMaxBackoffSeconds": (
        "the operator's backoff is set with `run --pod-max-backoff-seconds` "
        "(chart value podMaxBackoffSeconds)"
    ),
    "parallelism": (
        "policy-scheduler evaluates nodes on one thread (its fast path replaces "
        "kube-scheduler's 16 goroutines); nothing to set"
    ),
    "leaderElection": (
        "leader election is set with `run --leader-elect` / `--lease-name` / "
        "`--lease-namespace` (chart values replicaCount and leaderElection.*)"
    ),
    "clientConnection": (
        "the API client is set with `run --qps`, `--burst`, `--api-timeout` (chart values "
        "apiClient.*); the kubeconfig is the operator's own"
    ),
    "healthzBindAddress": "health is served on `run --bind-address` / `--health-port`",
    "metricsBindAddress": "metrics are served on `run --bind-address` / `--metrics-port`",
    "enableProfiling": "policy-scheduler serves no profiling endpoint",
    "enableContentionProfiling": "policy-scheduler serves no profiling endpoint",
    "delayCacheUntilActive": (
        "every replica fills its cache at start, as delayCacheUntilActive: false does"
    ),
}

#: Fields of one version only: (path pattern, the versions that have it).
_VERSIONED_FIELDS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("delayCacheUntilActive", frozenset({V1})),
    ("healthzBindAddress", frozenset({V1BETA2})),
    ("metricsBindAddress", frozenset({V1BETA2})),
)


# -- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conversion:
    """The policies of a configuration's profiles (in profile order), their objects as
    ``convert`` prints them, and notes on what kube-scheduler would ignore."""

    policies: tuple[SchedulingPolicy, ...]
    objects: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()


def is_configuration(doc: object) -> bool:
    """A document of kind KubeSchedulerConfiguration (whatever its version)."""
    return isinstance(doc, Mapping) and doc.get("kind") == KIND


def convert_configuration(
    data: Mapping[str, Any],
    *,
    extra_plugins: Mapping[str, tuple[str, ...]] | None = None,
) -> Conversion:
    """The SchedulingPolicy of each profile of a KubeSchedulerConfiguration.

    ``extra_plugins``: out-of-tree plugins policy-scheduler has installed (name -> the
    points each implements); their ``pluginConfig`` args are carried as written, for the
    plugin's own schema to check. Raises ``PolicyError`` (one
    ``KubeSchedulerConfiguration: path: message`` line per problem).
    """
    reader = _Reader(dict(extra_plugins or {}))
    return reader.read(data)


class _Reader:
    def __init__(self, extra: dict[str, tuple[str, ...]]) -> None:
        self.extra = extra
        self.issues: list[Issue] = []
        self.notes: list[Issue] = []

    def fail(self) -> PolicyError:
        return PolicyError([f"{_SUBJECT}: {issue.render()}" for issue in self.issues])

    def read(self, data: Mapping[str, Any]) -> Conversion:
        if not isinstance(data, Mapping):
            raise PolicyError([f"{_SUBJECT}: must be an object, got {show(data)}"])
        raw = pluginargs.without_nulls(data)
        version = raw.get("apiVersion")
        if raw.get("kind") != KIND:
            self.issues.append(Issue(("kind",), f"must be {KIND}, got {show(raw.get('kind'))}"))
        if version not in CONFIG_VERSIONS:
            self.issues.append(
                Issue(
                    ("apiVersion",),
                    f"must be one of {', '.join(CONFIG_VERSIONS)} (the versions kube-scheduler "
                    f"v1.25-v1.30 reads), got {show(version)}",
                )
            )
        if self.issues:
            raise self.fail()
        assert isinstance(version, str)
        self._version_fields(raw, version)
        try:
            config = ConfigurationModel.model_validate(raw)
        except ValidationError as exc:
            self.issues += [pluginargs.pydantic_issue(e, ConfigurationModel) for e in exc.errors()]
            raise self.fail() from None
        if version != V1:
            self.notes.append(
                Issue(
                    (),
                    f"{version} is read as kube-scheduler {RELEASE_OF[version]} read it, "
                    "the last release that served it",
                )
            )
        self._check_global(config)
        self._process_notes(raw)
        extenders = self._extenders(config, raw)
        profiles = list(config.profiles) or [ProfileModel()]
        if len(profiles) == 1 and profiles[0].schedulerName is None:
            profiles[0] = profiles[0].model_copy(update={"schedulerName": DEFAULT_SCHEDULER_NAME})
        built = [self._profile(index, profile, version) for index, profile in enumerate(profiles)]
        self._check_profiles(profiles, built)
        if self.issues:
            raise self.fail()
        objects: list[dict[str, Any]] = []
        policies: list[SchedulingPolicy] = []
        for profile, result in zip(profiles, built, strict=True):
            assert result is not None and profile.schedulerName is not None
            percentage = profile.percentageOfNodesToScore
            if percentage is None:
                percentage = config.percentageOfNodesToScore
            obj = _policy_object(profile.schedulerName, result, percentage, extenders)
            policy = parse_policy(obj)  # the model accepts what we write: a bug otherwise
            policies.append(policy)
            objects.append(policy_to_object(policy))
        notes = tuple(f"{_SUBJECT}: {note.render()}" for note in self.notes)
        return Conversion(tuple(policies), tuple(objects), notes)

    # -- the configuration --------------------------------------------------------------------

    def _process_notes(self, raw: Mapping[str, Any]) -> None:
        """A note for each field written in the file that is the whole process's, not a
        profile's: none is carried into the policies, none is dropped in silence."""
        for name, why in PROCESS_FIELDS.items():
            if name in raw:
                self.notes.append(Issue((name,), f"not carried into the policies: {why}"))

    def _version_fields(self, raw: dict[str, Any], version: str) -> None:
        """Fields of another version are unknown fields of this one."""
        for key, versions in _VERSIONED_FIELDS:
            if key in raw and version not in versions:
                raw.pop(key)
                self.issues.append(
                    Issue(
                        (key,),
                        f"unknown field in {version} (only in {', '.join(sorted(versions))})",
                    )
                )
        if version != V1:
            for index, profile in enumerate(_items(raw.get("profiles"))):
                if "percentageOfNodesToScore" in profile:
                    profile.pop("percentageOfNodesToScore")
                    self.issues.append(
                        Issue(
                            ("profiles", index, "percentageOfNodesToScore"),
                            f"unknown field in {version} (a profile's own percentage came "
                            f"with {V1}; set the global percentageOfNodesToScore)",
                        )
                    )

    def _check_global(self, config: ConfigurationModel) -> None:
        issues = self.issues
        if config.parallelism <= 0:
            issues.append(
                Issue(("parallelism",), f"must be greater than 0, got {config.parallelism}")
            )
        _percentage(issues, ("percentageOfNodesToScore",), config.percentageOfNodesToScore)
        if config.podInitialBackoffSeconds <= 0:
            issues.append(
                Issue(
                    ("podInitialBackoffSeconds",),
                    f"must be greater than 0, got {config.podInitialBackoffSeconds}",
                )
            )
        if config.podMaxBackoffSeconds < config.podInitialBackoffSeconds:
            issues.append(
                Issue(
                    ("podMaxBackoffSeconds",),
                    "must be at least podInitialBackoffSeconds "
                    f"({config.podInitialBackoffSeconds}), got {config.podMaxBackoffSeconds}",
                )
            )
        if config.clientConnection.burst < 0:
            issues.append(
                Issue(
                    ("clientConnection", "burst"),
                    f"must not be negative, got {config.clientConnection.burst}",
                )
            )
        self._leader_election(config.leaderElection)
        for key in ("healthzBindAddress", "metricsBindAddress"):
            value = getattr(config, key)
            if value:
                problem = _bind_address_problem(value)
                if problem:
                    issues.append(Issue((key,), f"{problem}, got {show(value)}"))

    def _leader_election(self, le: LeaderElectionModel) -> None:
        here: Path = ("leaderElection",)
        if not le.leaderElect:
            return
        # RecommendedDefaultLeaderElectionConfiguration: a zero duration is the default one.
        durations: dict[str, float] = {}
        for key in ("leaseDuration", "renewDeadline", "retryPeriod"):
            text = getattr(le, key)
            seconds = parse_duration(text)
            if seconds == 0:
                seconds = parse_duration(LeaderElectionModel.model_fields[key].default)
            if seconds is None:
                self.issues.append(
                    Issue((*here, key), f'must be a duration like "15s", got {show(text)}')
                )
            elif seconds < 0:
                self.issues.append(
                    Issue((*here, key), f"must be greater than zero, got {show(text)}")
                )
            else:
                durations[key] = seconds
        lease, renew = durations.get("leaseDuration"), durations.get("renewDeadline")
        if lease is not None and renew is not None and lease <= renew:
            self.issues.append(
                Issue(
                    (*here, "leaseDuration"),
                    f"must be greater than renewDeadline ({le.renewDeadline}), "
                    f"got {show(le.leaseDuration)}",
                )
            )
        # An empty resourceLock, resourceName or resourceNamespace is defaulted.
        if le.resourceLock not in ("", "leases"):
            self.issues.append(
                Issue(
                    (*here, "resourceLock"),
                    f'must be "leases" (kube-scheduler elects with Leases), '
                    f"got {show(le.resourceLock)}",
                )
            )

    def _extenders(
        self, config: ConfigurationModel, raw: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """``validateExtenders``, and each extender in the SchedulingPolicy's words."""
        out: list[dict[str, Any]] = []
        binders: list[Path] = []
        managed: dict[str, Path] = {}
        written = _items(raw.get("extenders"))
        for index, extender in enumerate(config.extenders):
            here: Path = ("extenders", index)
            if not extender.urlPrefix:
                self.issues.append(
                    Issue(
                        (*here, "urlPrefix"),
                        "is required (kube-scheduler "
                        "would call an empty URL; policy-scheduler refuses it)",
                    )
                )
            if extender.prioritizeVerb and extender.weight <= 0:
                self.issues.append(
                    Issue(
                        (*here, "weight"),
                        f"must be positive when prioritizeVerb is set, got {extender.weight}",
                    )
                )
            if extender.bindVerb:
                binders.append(here)
            for position, resource in enumerate(extender.managedResources):
                where: Path = (*here, "managedResources", position, "name")
                problem = extended_resource_name_problem(resource.name)
                if problem is not None:
                    self.issues.append(Issue(where, f"{problem}, got {show(resource.name)}"))
                if resource.name in managed:
                    self.issues.append(
                        Issue(
                            where,
                            f"{show(resource.name)} is already managed at",
                            (managed[resource.name],),
                        )
                    )
                else:
                    managed[resource.name] = where
            if extender.httpTimeout is not None and parse_duration(extender.httpTimeout) is None:
                self.issues.append(
                    Issue(
                        (*here, "httpTimeout"),
                        f'must be a duration like "30s", got {show(extender.httpTimeout)}',
                    )
                )
            tls = extender.tlsConfig
            if tls is not None:
                for key in ("certData", "keyData", "caData"):
                    value = getattr(tls, key)
                    try:
                        base64.b64decode(value, validate=True)
                    except (binascii.Error, ValueError):
                        self.issues.append(
                            Issue(
                                (*here, "tlsConfig", key),
                                f"must be base64-encoded PEM, got {show(value)}",
                            )
                        )
                if tls.insecure and (tls.caFile or tls.caData):
                    self.issues.append(
                        Issue(
                            (*here, "tlsConfig", "insecure"),
                            "must not be true when caFile or caData is set",
                        )
                    )
            # Carried as written (the same field names), httpTimeout a duration string.
            entry = written[index] if index < len(written) else {}
            out.append({key: value for key, value in entry.items()})
        if len(binders) > 1:
            self.issues.append(
                Issue(
                    ("extenders",),
                    f"only one extender can implement bind, found {len(binders)}:",
                    tuple(binders),
                )
            )
        return out

    # -- profiles ----------------------------------------------------------------------------------

    def _points_of(self, version: str) -> dict[str, tuple[str, ...]]:
        known = {
            name: pluginargs.points_in(plugin, version)
            for name, plugin in CATALOGUE.items()
            if version in plugin.versions and plugin.points
        }
        known.update(self.extra)
        return known

    def _profile(self, index: int, profile: ProfileModel, version: str) -> _Built | None:
        here: Path = ("profiles", index)
        issues = self.issues
        before = len(issues)
        if profile.schedulerName is None or profile.schedulerName == "":
            issues.append(
                Issue(
                    (*here, "schedulerName"),
                    "is required (every profile of several names the pods it schedules)"
                    if profile.schedulerName is None
                    else "must not be empty",
                )
            )
        else:
            problem = object_name_problem(profile.schedulerName)
            if problem is not None:
                issues.append(
                    Issue(
                        (*here, "schedulerName"),
                        f"{problem} (no pod could name it: a pod's schedulerName is one)",
                    )
                )
        if profile.percentageOfNodesToScore is not None:
            _percentage(
                issues, (*here, "percentageOfNodesToScore"), profile.percentageOfNodesToScore
            )

        custom = _plugin_sets(profile.plugins, (*here, "plugins"))
        merged, dropped = merge_plugins(version, custom)
        for point in dropped:
            self.notes.append(
                Issue(
                    (*here, "plugins", point),
                    f"ignored: kube-scheduler {RELEASE_OF[version]} does not merge {point} of a "
                    f"{version} configuration into the profile",
                )
            )
        self._unsupported(merged, version)
        framework = expand_plugins(
            merged, self._points_of(version), base=(*here, "plugins"), unknown=_unknown_in(version)
        )
        issues += framework.issues
        outside = sorted(
            {ref.name for s in merged.values() for ref in s.enabled if ref.name in self.extra}
        )
        for name in outside:
            self.notes.append(
                Issue(
                    (*here, "plugins"),
                    f"{name} is not an in-tree plugin of kube-scheduler {RELEASE_OF[version]}: "
                    "policy-scheduler runs its own (`policy-scheduler plugins` lists it)",
                )
            )
        needed = {ref.name for plugin_set in merged.values() for ref in plugin_set.enabled}
        args = self._plugin_config(profile, here, version, needed)
        if len(issues) > before:
            return None
        # Inert plugins (DynamicResources without its gate) do nothing: left out, noted.
        for name, plugin in CATALOGUE.items():
            if version in plugin.inert_in and any(
                name in listed for listed in framework.points.values()
            ):
                for listed in framework.points.values():
                    if name in listed:
                        listed.remove(name)
                self.notes.append(Issue((*here, "plugins"), f"{name} left out: {plugin.history}"))
        running = {name for listed in framework.points.values() for name in listed}
        for name, (position, _raw) in args.written.items():
            if name not in running:
                self.notes.append(
                    Issue(
                        (*here, "pluginConfig", position),
                        f"ignored: no extension point of this profile runs {show(name)}",
                    )
                )
            elif name not in pluginargs.ARGS_MODELS and name not in self.extra:
                self.notes.append(
                    Issue(
                        (*here, "pluginConfig", position, "args"),
                        f"ignored: {name} takes no arguments",
                    )
                )
        config: dict[str, dict[str, Any]] = {}
        for name in sorted(running):
            if name in args.values:
                config[name] = args.values[name]
        return _Built(framework, config, merged.get(names.QUEUE_SORT, PluginSet()), args.values)

    def _unsupported(self, merged: Mapping[str, PluginSet], version: str) -> None:
        """Plugins the version's kube-scheduler has and policy-scheduler does not run
        (SelectorSpread in v1beta2/v1beta3), at their entries."""
        for plugin_set in merged.values():
            for ref in plugin_set.enabled:
                plugin = CATALOGUE.get(ref.name)
                if plugin is None or ref.name in self.extra or ref.path is None:
                    continue
                if version in plugin.versions and not plugin.runs and not plugin.inert_without:
                    self.issues.append(
                        Issue(
                            (*ref.path, "name"),
                            f"{show(ref.name)} is not supported by policy-scheduler: "
                            f"{plugin.history}",
                        )
                    )

    def _plugin_config(
        self, profile: ProfileModel, here: Path, version: str, needed: set[str]
    ) -> _PluginConfig:
        result = _PluginConfig()
        for position, entry in enumerate(profile.pluginConfig):
            where: Path = (*here, "pluginConfig", position)
            name = entry.name
            if name in result.written:
                self.issues.append(
                    Issue(
                        (*where, "name"),
                        f"{show(name)} is configured twice, also at",
                        ((*here, "pluginConfig", result.written[name][0], "name"),),
                    )
                )
                continue
            result.written[name] = (position, entry.args)
            plugin = CATALOGUE.get(name)
            if version == V1 and name == pluginargs.SELECTOR_SPREAD and plugin is not None:
                self.issues.append(
                    Issue((*where, "name"), f"{show(name)} was invalid in {V1}: {plugin.history}")
                )
                continue
            if name in self.extra and name not in pluginargs.ARGS_MODELS:
                result.values[name] = entry.args if isinstance(entry.args, dict) else {}
                continue
            args, problems = pluginargs.decode_args(name, entry.args, api_version=version)
            if args is not None and (name != pluginargs.NODE_RESOURCES_FIT or name in needed):
                problems = args.problems()
            self.issues += [_under(issue, (*where, "args")) for issue in problems]
            if args is not None and not problems:
                result.values[name] = pluginargs.to_json(args)
        for name in sorted(needed):
            if name not in result.written and name in pluginargs.ARGS_MODELS:
                default = pluginargs.default_args(name)
                assert default is not None
                result.values[name] = pluginargs.to_json(default)
        return result

    def _check_profiles(
        self, profiles: Sequence[ProfileModel], built: Sequence[_Built | None]
    ) -> None:
        seen: dict[str, int] = {}
        for index, profile in enumerate(profiles):
            name = profile.schedulerName
            if not name:
                continue
            if name in seen:
                self.issues.append(
                    Issue(
                        ("profiles", index, "schedulerName"),
                        f"{show(name)} is already the schedulerName of",
                        (("profiles", seen[name]),),
                    )
                )
            else:
                seen[name] = index
        # validateCommonQueueSort: every profile's merged queueSort set equals the first's.
        first = built[0]
        if first is None:
            return
        canon = first.queue_sort
        sorter = canon.enabled[0].name if canon.enabled else None
        for index in range(1, len(built)):
            other = built[index]
            if other is None:
                continue
            if not _same_set(canon, other.queue_sort):
                self.issues.append(
                    Issue(
                        ("profiles", index, "plugins", "queueSort"),
                        "must be the same in every profile (as profiles[0]'s)",
                    )
                )
            elif sorter is not None and other.args.get(sorter) != first.args.get(sorter):
                self.issues.append(
                    Issue(
                        ("profiles", index, "pluginConfig"),
                        f"the args of the queue sort plugin {sorter} must be the same in every "
                        "profile (as profiles[0]'s)",
                    )
                )


@dataclass
class _PluginConfig:
    #: pluginConfig names as written -> (index, raw args)
    written: dict[str, tuple[int, Any]] = field(default_factory=dict)
    #: plugin name -> args as written to the policy
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Built:
    framework: Framework
    #: The args of the plugins that run, as the policy writes them.
    plugin_config: dict[str, dict[str, Any]]
    queue_sort: PluginSet
    #: The args of every plugin configured or defaulted (for the queue sort comparison).
    args: dict[str, Any]


def _same_set(a: PluginSet, b: PluginSet) -> bool:
    def key(s: PluginSet) -> tuple[object, ...]:
        # Compared as kube-scheduler compares its internal sets: an unset weight is 0.
        return (tuple((r.name, r.weight or 0) for r in s.enabled), tuple(s.disabled))

    return key(a) == key(b)


def _plugin_sets(plugins: PluginsModel | None, here: Path) -> dict[str, PluginSet] | None:
    if plugins is None:
        return None
    sets: dict[str, PluginSet] = {}
    for point in _POINTS:
        written: PluginSetModel | None = getattr(plugins, point)
        if written is None:
            continue
        sets[point] = PluginSet(
            tuple(
                Ref(p.name, p.weight, (*here, point, "enabled", index))
                for index, p in enumerate(written.enabled)
            ),
            tuple(p.name for p in written.disabled),
        )
    return sets


def _under(issue: Issue, prefix: Path) -> Issue:
    return Issue(
        (*prefix, *issue.path), issue.message, tuple((*prefix, *ref) for ref in issue.refs)
    )


def _percentage(issues: list[Issue], where: Path, value: int) -> None:
    if not 0 <= value <= 100:
        issues.append(Issue(where, f"must be in the range [0, 100], got {value}"))


def _policy_object(
    scheduler_name: str, built: _Built, percentage: int, extenders: list[dict[str, Any]]
) -> dict[str, Any]:
    points = built.framework.points
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "predicates": [{"name": name} for name in points[names.FILTER]],
        "priorities": [
            {"name": name, "weight": built.framework.weights[name]} for name in points[names.SCORE]
        ],
        "percentageOfNodesToScore": percentage,
    }
    if extenders:
        spec["extenders"] = extenders
    spec["plugins"] = {
        point: {"enabled": [{"name": name} for name in points[point]], "disabled": [{"name": _ALL}]}
        for point in _POLICY_POINTS
    }
    spec["pluginConfig"] = [
        {"name": name, "args": args} for name, args in built.plugin_config.items()
    ]
    return {
        "apiVersion": names.CRD_API_VERSION,
        "kind": names.CRD_KIND,
        "metadata": {"name": scheduler_name},
        "spec": spec,
    }


# -- small parsers -------------------------------------------------------------------------------


def _bind_address_problem(value: str) -> str | None:
    """v1beta2's healthz/metrics bind address: empty, or an IP with an explicit 0 port."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        return "must be an IP address and a port"
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return "must have an IP address as its host"
    if int(port) != 0:
        return "must be empty or with an explicit 0 port"
    return None


def _items(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
