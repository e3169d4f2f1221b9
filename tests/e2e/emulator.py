"""A Kubernetes API emulator for policy-scheduler's end-to-end tests, built on KMock.

KMock (``kmock==0.8``, by Kopf's author) ships ``kmock.KubernetesEmulator``: an aiohttp
handler that keeps objects in memory and serves discovery, list, watch, get, create,
patch and delete. Out of the box it is too naive for a scheduler: no uid /
resourceVersion / generateName, no namespace scoping, no ``pods/binding``, no PUT,
no selectors, and a patch is always a recursive dict merge. ``ApiEmulator`` below
keeps KMock's storage, watch buses, discovery and DSL, and replaces the write path.

What it emulates (and how it differs from a real kube-apiserver):

* Discovery as kube-apiserver (v1.30, ``SERVER_VERSION``) serves it for the resources in
  ``RESOURCES`` (``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/GROUP``,
  ``/apis/GROUP/VERSION``), incl. ``pods/status`` and ``pods/binding`` with their own
  kinds and verbs (no aggregated discovery: kubectl falls back to these). Undeclared
  resources answer 404, as on a real server.
* For ``kubectl``: a ``Table`` when the Accept header asks for one
  (``emulator_tables.py``: pods, nodes, namespaces, events, custom resources by their
  CRD's printer columns; other kinds answer plain JSON), ``/openapi/v3`` with Kubernetes'
  schemas and the stored CRDs' (``emulator_openapi.py``), ``fieldValidation=Strict``
  (a field the schema lacks: 400, or 422 for a patch) and ``Warn`` (dropped, named in a
  ``Warning`` header) on writes; without the parameter nothing is checked (a real server
  warns and drops). A custom resource whose CRD is stored gets the schema's defaults.
* Create (POST): ``metadata.name`` from ``generateName``, ``namespace`` from the URL
  (cluster-scoped kinds lose it), ``uid``, ``creationTimestamp``, ``generation: 1``,
  ``resourceVersion``; ``apiVersion``/``kind`` filled in. 409 AlreadyExists, 404 when
  the namespace does not exist (``default``, ``kube-system``, ``kube-public`` and
  ``kube-node-lease`` exist from the start). Pods get ``spec.schedulerName:
  default-scheduler`` when empty, ``spec.priority: 0`` when neither priority nor
  priorityClassName is set, and ``status.phase: Pending``. Unlike a real server, a
  ``status`` given on create is KEPT (handy for "running" pods already on nodes).
* Patch: ``application/merge-patch+json`` (RFC 7386, Kopf's choice),
  ``application/json-patch+json`` (a list body) and
  ``application/strategic-merge-patch+json`` (kubernetes-asyncio's choice for dict
  bodies) with the merge keys that matter here: ``conditions`` by ``type``,
  containers/volumes/env... by ``name``, ``finalizers`` as a set, ``$patch`` directives.
  A patch carrying ``metadata.resourceVersion`` is a precondition (409 on mismatch); one
  carrying another ``metadata.uid`` is refused (422, uid is immutable: client-go's
  ``PatchPodStatus`` sends the uid as a precondition this way).
* Replace (PUT): 409 Conflict when ``metadata.resourceVersion`` is given and stale
  (optimistic concurrency, e.g. for Leases); an absent one is an unconditional update.
* Status subresource (for kinds that declare it: pods, nodes, namespaces, PVs, PVCs,
  services, RCs, ReplicaSets, StatefulSets, PodGroups, SchedulingPolicies): writes to
  ``.../status`` change only ``status``; writes to the main endpoint keep the old
  ``status`` (as the real server does, so a scheduler writing conditions through the
  main endpoint fails here as it would in a cluster). ``metadata.generation`` grows
  when anything but metadata/status changes. A write that changes nothing is a
  no-op: same resourceVersion, no watch event (as on a real server).
* Delete: immediate (there is no kubelet, so no graceful pod termination) unless
  finalizers are present; then ``deletionTimestamp`` is set and the object goes away
  when the last finalizer is removed (one DELETED event, no MODIFIED). No cascading
  (deleting a namespace does not delete its objects), no garbage collection by
  ownerReferences.
* ``POST /api/v1/namespaces/NS/pods/NAME/binding``: see ``_serve_binding``; every
  attempt is recorded in ``binding_log`` (``BindingRecord``).
* Validation hooks (``validator_from_crd(path)`` builds one from a CRD's
  openAPIV3Schema): ``validators[resource](obj) -> list[str]`` run on the object as it
  would be stored (after the patch is applied, not the patch body) on create,
  patch, replace and status writes; any message -> 422 Invalid with the messages.
* Pod create: as kube-apiserver v1.34's PrepareForCreate, each ``matchLabelKeys`` /
  ``mismatchLabelKeys`` key of a pod (anti-)affinity term (and each ``matchLabelKeys``
  key of a topology spread constraint) that the pod carries joins the selector as
  ``key In/NotIn (value)``; a key then in the selector twice, in both lists, or given
  without a labelSelector is 422 Invalid in the API server's words
  (``_merge_label_keys``). Updates do not merge (nor does the real server).
* List: ``labelSelector`` (equality, set-based, existence) and ``fieldSelector`` (the
  fields kube-apiserver indexes per kind, ``FIELD_LABELS``; ``=``, ``==``, ``!=``,
  comma-joined; any other field is a 400 as on a real server), the collection's
  ``metadata.resourceVersion`` (the latest handed out), ``limit``/``continue``
  pagination. A LIST always serves the latest state (``resourceVersion`` and
  ``resourceVersionMatch`` are not honoured: no reads of older versions).
* Watch: see ``_serve_watch``. As kube-apiserver's watch cache: without a
  ``resourceVersion`` (or with "0") the current objects come first as ``ADDED``; from a
  version N (a LIST's, or the last event a client saw) only the events after N,
  DELETED included, while N is within the last ``watch_window`` events of that
  resource, else one ``ERROR`` event with a ``410 Expired`` Status (the client must
  LIST again; each is recorded in ``expired_watches``). The informer pattern (LIST,
  then WATCH from the list's version, resume from the last event's version after a
  disconnect) thus sees every change exactly once. ``timeoutSeconds`` ends the
  stream; ``disconnect_watches()`` ends all streams on demand, ``hold_watches()`` /
  ``release_watches()`` keep reconnecting clients waiting (so that they fall behind).
  Selectors are honoured, incl. the ADDED/DELETED transitions when an object
  starts/stops matching.

KMock 0.8 misparses ``/api/v1/namespaces[/NAME]`` (namespaces can be neither listed nor
watched); importing this module fixes its URL parser process-wide (see ``_parse_path``).

Everything is kept in KMock's storage: ``emulator.objects[resource, namespace, name]``
(namespace ``None`` for cluster-scoped kinds) is a ``kmock.Object`` with ``.history``
of all stored versions (``None`` marks deletions). Mutating these in place bypasses
the API: no resourceVersion bump and no watch events.

KMock's DSL still works on top (``emulator['post', kmock.subresource('binding')] <<
500``). User reactions take precedence over the emulation, which is registered as
KMock fallbacks; so an intercepted write does NOT happen (unlike plain
``KubernetesEmulator``, where writes are stored even when intercepted), which makes
failure injection realistic.

The handler is single-loop (asyncio); ``EmulatorServer`` runs it with an HTTP server
on 127.0.0.1 in a dedicated thread, so that the test's loop and Kopf's loop (in
another thread) can both talk to it over HTTP without blocking each other.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import copy
import dataclasses
import datetime
import itertools
import json
import pathlib
import random
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

import aiohttp.test_utils
import aiohttp.web
import attrs
import jsonpatch
import kmock
from kmock._internal import dsl as kmock_dsl
from kmock._internal import parsing, rendering  # internals: see _parse_path() below

from e2e.emulator_openapi import OpenApi
from e2e.emulator_tables import render_table, table_version

__all__ = [
    "DEFAULT_WATCH_WINDOW",
    "FIELD_LABELS",
    "RESOURCES",
    "SERVER_VERSION",
    "ApiEmulator",
    "BindingRecord",
    "EmulatorServer",
    "ExpiredWatch",
    "Fault",
    "ResourceSpec",
    "Validator",
    "find_resource",
    "validator_from_crd",
    "write_kubeconfig",
]

Validator = Callable[[Mapping[str, Any]], Iterable[str]]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
POLICY_RESOURCE = "policyscheduler.io/v1alpha1/schedulingpolicies"


@dataclasses.dataclass(frozen=True)
class ResourceSpec:
    """One served resource: its discovery information and URL building."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    shortnames: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    #: Served from a CustomResourceDefinition (field selectors and tables follow CRD rules).
    custom: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The key as KMock spells resources: ``v1/pods``, ``apps/v1/replicasets``."""
        return f"{self.api_version}/{self.plural}"

    @property
    def resource(self) -> kmock.resource:
        return kmock.resource(self.group, self.version, self.plural)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def group_qualified(self) -> str:
        """As the API server names it in messages: ``pods``, ``leases.coordination.k8s.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


RESOURCES: tuple[ResourceSpec, ...] = (
    # Core v1. Kopf watches namespaces (and CRDs) for its own resource/namespace discovery.
    ResourceSpec("", "v1", "namespaces", "Namespace", False, ("ns",), ("status",)),
    ResourceSpec(
        "", "v1", "pods", "Pod", True, ("po",), ("status", "binding"), categories=("all",)
    ),
    ResourceSpec("", "v1", "nodes", "Node", False, ("no",), ("status",)),
    ResourceSpec("", "v1", "events", "Event", True, ("ev",)),
    ResourceSpec("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), ("status",)),
    ResourceSpec(
        "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ("status",)
    ),
    ResourceSpec("", "v1", "services", "Service", True, ("svc",), ("status",), categories=("all",)),
    ResourceSpec(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        True,
        ("rc",),
        ("status",),
        categories=("all",),
    ),
    ResourceSpec(
        "apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("status",), categories=("all",)
    ),
    ResourceSpec(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        ("sts",),
        ("status",),
        categories=("all",),
    ),
    # What the Helm chart installs (tests/e2e/test_chart_install.py applies it).
    ResourceSpec("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    ResourceSpec("apps", "v1", "deployments", "Deployment", True, ("deploy",), ("status",)),
    ResourceSpec("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ResourceSpec(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
    ),
    ResourceSpec("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ResourceSpec("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ResourceSpec("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    # Preemption reads budgets and priority classes.
    ResourceSpec(
        "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)
    ),
    ResourceSpec("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    ResourceSpec("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    # The storage capacity check of volume binding.
    ResourceSpec("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    ResourceSpec("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    ResourceSpec("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceSpec("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    ResourceSpec(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("status",),
    ),
    # DRA (resource.k8s.io/v1, Kubernetes v1.34): what DynamicResources reads and writes.
    ResourceSpec("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    ResourceSpec("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    ResourceSpec("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, (), ("status",)),
    ResourceSpec("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    # scheduler-plugins' gangs (crds/scheduling.x-k8s.io_podgroups.yaml).
    ResourceSpec(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        "PodGroup",
        True,
        ("pg", "pgs"),
        ("status",),
        custom=True,
    ),
    ResourceSpec(
        "policyscheduler.io",
        "v1alpha1",
        "schedulingpolicies",
        "SchedulingPolicy",
        False,
        ("schedpol",),
        ("status",),
        categories=("policy-scheduler",),
        custom=True,
    ),
)

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

#: The Kubernetes version the emulator says it is (``/version``): the one whose API
#: behaviour it follows (field selectors, watch cache, discovery).
SERVER_VERSION = "v1.30.0"

#: Subresource -> (its kind when not the parent's, its verbs), as discovery lists them.
SUBRESOURCES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "status": (None, ("get", "patch", "update")),
    "binding": ("Binding", ("create",)),
}


def find_resource(api_version: str, kind_or_plural: str) -> ResourceSpec:
    """The served resource for an apiVersion and a kind (``Pod``) or plural (``pods``)."""
    for spec in RESOURCES:
        if spec.api_version == api_version and kind_or_plural in (spec.kind, spec.plural):
            return spec
    raise LookupError(f"Unknown resource: {api_version} {kind_or_plural}")


def validator_from_crd(
    crd: Mapping[str, Any] | str | pathlib.Path, version: str | None = None
) -> Validator:
    """A validator from a CRD's ``openAPIV3Schema``, checked with ``jsonschema``.

    ``crd`` is the CRD as a dict or a path to its YAML. Messages look like
    ``spec.priorities[0].weight: 0 is less than the minimum of 1``. Not emulated:
    ``x-kubernetes-validations`` (CEL rules), pruning of unknown fields, defaulting,
    ``nullable``, ``x-kubernetes-int-or-string`` beyond what the plain schema says.
    """
    import jsonschema  # a project dependency; imported lazily as only this helper needs it
    import yaml

    if not isinstance(crd, Mapping):
        crd = yaml.safe_load(pathlib.Path(crd).read_text())
    versions = crd["spec"]["versions"]
    chosen = next(
        v for v in versions if (version is None and v.get("storage")) or v["name"] == version
    )
    schema = chosen["schema"]["openAPIV3Schema"]
    checker = jsonschema.Draft7Validator(schema)

    def validate(obj: Mapping[str, Any]) -> list[str]:
        messages = []
        for error in sorted(
            checker.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))
        ):
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            messages.append(f"{path.lstrip('.') or '<root>'}: {error.message}")
        return messages

    return validate


@dataclasses.dataclass(frozen=True)
class BindingRecord:
    """One request to ``pods/binding``, successful or not."""

    namespace: str
    pod: str
    node: str | None
    status: int  # the HTTP status answered: 201, 404, 409, ...
    time: float  # time.time() when the request was served
    uid: str | None = None  # the pod's uid at that moment (None if it did not exist)

    @property
    def ok(self) -> bool:
        return self.status == 201


@dataclasses.dataclass
class Fault:
    """A failure the emulator injects into the scheduler's own requests (fault tests).

    A request matches when its method is ``method`` (None: any), its path contains
    ``path`` (a substring), and its User-Agent one of ``agents`` (by default the
    scheduler's API client and Kopf, never the test's own client). It then fails with
    ``probability``, at most ``times`` times (None: no limit):

    * ``"status"``: answered ``status`` at once, nothing done;
    * ``"after"``: done as usual (stored, watch events sent), then answered ``status``,
      as a server whose reply got lost after the write committed;
    * ``"hang"``: never answered (until the emulator stops).
    """

    action: str
    method: str | None = None
    path: str = ""
    status: int = 500
    probability: float = 1.0
    times: int | None = None
    agents: tuple[str, ...] = ("OpenAPI-Generator", "kopf")
    seed: int = 0
    hits: int = 0
    _rng: random.Random = dataclasses.field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    def applies(self, method: str, path: str, agent: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and method.upper() != self.method.upper():
            return False
        if self.path not in path or not any(a in agent for a in self.agents):
            return False
        if self._rng.random() >= self.probability:
            return False
        self.hits += 1
        return True


class _WatchClosed(Exception):
    """Put into a bus to end the watch streams consuming it (server-side disconnect)."""


#: How many events per resource a watch can resume over, unless told otherwise. A real
#: kube-apiserver keeps a watch cache per resource (100 events at first, more under load,
#: about 75 s of history); this is generous so that only tests that ask for it see a 410.
DEFAULT_WATCH_WINDOW = 10_000


@dataclasses.dataclass
class _History:
    """The events of one resource a watch can resume over (the watch cache's ring buffer).

    ``floor`` is the oldest resourceVersion a watch may resume from: 0 while nothing was
    dropped, then the version just before the oldest retained event (the cacher's
    ``oldest - 1``): a watch from an older one gets "410 Expired".
    """

    capacity: int
    events: collections.deque[tuple[int, dict[str, Any]]] = dataclasses.field(
        default_factory=collections.deque
    )
    floor: int = 0

    def append(self, rv: int, event: dict[str, Any]) -> None:
        self.events.append((rv, event))
        while len(self.events) > self.capacity:
            dropped, _ = self.events.popleft()
            self.floor = self.events[0][0] - 1 if self.events else dropped

    def since(self, rv: int) -> list[dict[str, Any]]:
        """The events after ``rv``, oldest first (the caller checked ``rv >= floor``)."""
        newer: list[dict[str, Any]] = []
        for event_rv, event in reversed(self.events):
            if event_rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer


@dataclasses.dataclass(frozen=True)
class ExpiredWatch:
    """A watch refused with "410 Expired": it asked for events the emulator no longer has."""

    resource: str  # the ResourceSpec key, e.g. "v1/pods"
    requested: int  # the resourceVersion the client asked to resume from
    floor: int  # the oldest one it could have resumed from


def _status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A v1 Status object, as in an error response or a watch ERROR event."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    return status


def _header(request: rendering.Request, name: str) -> str:
    return next((v for k, v in request.headers.items() if k.lower() == name.lower()), "")


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(
    status: int,
    reason: str,
    message: str,
    details: Mapping[str, Any] | None = None,
) -> kmock.KubernetesError:
    return kmock.KubernetesError(
        status=status, reason=reason, message=message, details=dict(details or {})
    )


_LABEL_KEY_TERMS = (
    ("podAffinity", "requiredDuringSchedulingIgnoredDuringExecution", False),
    ("podAffinity", "preferredDuringSchedulingIgnoredDuringExecution", True),
    ("podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", False),
    ("podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", True),
)


def _merge_label_keys(pod: dict[str, Any]) -> str:
    """kube-apiserver v1.34 at a pod's create (strategy.go ``mutatePodAffinity`` and
    ``mutateTopologySpreadConstraints``, then validation): each matchLabelKeys /
    mismatchLabelKeys key the pod carries joins the term's (or the spread constraint's)
    labelSelector as ``key In/NotIn (value)``; a key then found twice in the selector,
    named in both lists, or given without a selector is refused. Returns the first
    complaint ("" when none), in the API server's words."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}

    def merge(path: str, term: dict[str, Any], match: list[str], mismatch: list[str]) -> str:
        selector = term.get("labelSelector")
        if selector is None:
            field = "matchLabelKeys" if match else "mismatchLabelKeys"
            return f"{path}.{field}: Forbidden: must not be specified when labelSelector is not set"
        expressions = list(selector.get("matchExpressions") or [])
        for keys, operator in ((match, "In"), (mismatch, "NotIn")):
            for key in keys:
                if key in labels:
                    expressions.append({"key": key, "operator": operator, "values": [labels[key]]})
        if expressions:
            selector["matchExpressions"] = expressions
        seen = set(selector.get("matchLabels") or {})
        for expression in expressions:
            key = expression.get("key")
            if key in match and key in seen:
                return (
                    f'{path}[{match.index(key)}]: Invalid value: "{key}": '
                    "exists in both matchLabelKeys and labelSelector"
                )
            seen.add(key)
        for index, key in enumerate(match):
            if key in mismatch:
                return (
                    f'{path}.matchLabelKeys[{index}]: Invalid value: "{key}": '
                    "exists in both matchLabelKeys and mismatchLabelKeys"
                )
        return ""

    affinity = spec.get("affinity") or {}
    for arm, kind, weighted in _LABEL_KEY_TERMS:
        for i, entry in enumerate((affinity.get(arm) or {}).get(kind) or []):
            term = (entry.get("podAffinityTerm") or {}) if weighted else entry
            match = term.get("matchLabelKeys") or []
            mismatch = term.get("mismatchLabelKeys") or []
            if match or mismatch:
                path = f"spec.affinity.{arm}.{kind}[{i}]"
                if weighted:
                    path += ".podAffinityTerm"
                if problem := merge(path, term, match, mismatch):
                    return problem
    for i, constraint in enumerate(spec.get("topologySpreadConstraints") or []):
        keys = constraint.get("matchLabelKeys") or []
        if keys and (
            problem := merge(f"spec.topologySpreadConstraints[{i}]", constraint, keys, [])
        ):
            return problem
    return ""


# ---------------------------------------------------------------------------------------------
# A fix for KMock 0.8's URL parsing: it reads ``/api/v1/namespaces/NAME`` as "namespace NAME,
# no resource" and crashes on ``/api/v1/namespaces`` (so namespaces could be neither listed,
# watched, created nor fetched -- and Kopf lists and watches them). Patched process-wide
# (kmock resolves ``parsing.parse_path`` at call time); other paths are parsed as before.

_kmock_parse_path = parsing.parse_path


def _parse_path(path: str) -> parsing.ParsedPath:
    parts = path.strip("/").split("/")
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return _kmock_parse_path(path)
    namespace = None
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    return parsing.ParsedPath(
        group=group,
        version=version,
        plural=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else None,
        subresource="/".join(rest[2:]) or None,
    )


parsing.parse_path = _parse_path


# ---------------------------------------------------------------------------------------------
# Patching.


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Lists that a strategic merge patch merges by a key (the subset of patchMergeKey tags
# that a scheduler and its tests touch); other lists are replaced.
_SMP_MERGE_KEYS = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "addresses": "type",
    "ports": "containerPort",
}
_SMP_PRIMITIVE_SETS = {"finalizers"}


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch, good enough for metadata, conditions and containers."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif key.startswith("$"):
            continue  # $setElementOrder/..., $retainKeys, $patch: ordering hints etc.
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = strategic_merge_patch(result.get(key), value)
        elif (
            isinstance(value, list)
            and key in _SMP_MERGE_KEYS
            and all(isinstance(v, Mapping) for v in value)
        ):
            mkey = _SMP_MERGE_KEYS[key]
            merged = [copy.deepcopy(v) for v in result.get(key) or []]
            for item in value:
                index = next(
                    (
                        i
                        for i, old in enumerate(merged)
                        if isinstance(old, Mapping) and old.get(mkey) == item.get(mkey)
                    ),
                    None,
                )
                if item.get("$patch") == "delete":
                    if index is not None:
                        del merged[index]
                elif index is None:
                    merged.append({k: v for k, v in item.items() if not k.startswith("$")})
                else:
                    merged[index] = strategic_merge_patch(merged[index], item)
            result[key] = merged
        elif isinstance(value, list) and key in _SMP_PRIMITIVE_SETS:
            existing = list(result.get(key) or [])
            result[key] = existing + [v for v in value if v not in existing]
        else:
            result[key] = copy.deepcopy(value)
    return result


# ---------------------------------------------------------------------------------------------
# Selectors.

_LABEL_EXISTS = re.compile(r"^(!?)\s*([A-Za-z0-9][-A-Za-z0-9_./]*)$")
_LABEL_EQUALS = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_./]*)\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)$")
_LABEL_IN = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_./]*)\s+(in|notin)\s*\(([^)]*)\)$")


def _split_terms(selector: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    return [term for term in terms if term]


def label_selector_matcher(selector: str | None) -> Callable[[Mapping[str, Any]], bool]:
    if not selector:
        return lambda obj: True
    checks: list[Callable[[Mapping[str, str]], bool]] = []
    for term in _split_terms(selector):
        if m := _LABEL_IN.match(term):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            if op == "in":
                checks.append(lambda labels, k=key, vs=values: k in labels and labels[k] in vs)
            else:
                checks.append(
                    lambda labels, k=key, vs=values: k not in labels or labels[k] not in vs
                )
        elif m := _LABEL_EQUALS.match(term):
            key, op, value = m.groups()
            if op == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: k in labels and labels[k] == v)
        elif m := _LABEL_EXISTS.match(term):
            negated, key = m.groups()
            if negated:
                checks.append(lambda labels, k=key: k not in labels)
            else:
                checks.append(lambda labels, k=key: k in labels)
        else:
            raise _error(400, "BadRequest", f"unable to parse requirement: {term!r}")

    def matcher(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matcher


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


FieldGetter = Callable[[Mapping[str, Any]], str]


def _plain(path: str) -> FieldGetter:
    return lambda obj: _field_value(obj, path)


def _flag(path: str) -> FieldGetter:
    # strconv.FormatBool of a Go bool: an absent field is false, not "".
    return lambda obj: _field_value(obj, path) or "false"


def _count(path: str) -> FieldGetter:
    # An absent int32 is 0 in the Go struct the field set is built from.
    return lambda obj: _field_value(obj, path) or "0"


def _first_pod_ip(obj: Mapping[str, Any]) -> str:
    ips = (obj.get("status") or {}).get("podIPs") or []
    first = ips[0] if ips and isinstance(ips[0], Mapping) else {}
    return str(first.get("ip") or "")


_NAME = {"metadata.name": _plain("metadata.name")}
_NAME_NS = _NAME | {"metadata.namespace": _plain("metadata.namespace")}

#: The field labels kube-apiserver (v1.30) accepts per kind, and how each object's value is
#: computed (pkg/apis/core/v1/conversion.go's AddFieldLabelConversionFunc and the kinds'
#: ToSelectableFields). Kinds not listed accept metadata.name/metadata.namespace only
#: (runtime.DefaultMetaV1FieldSelectorConversion); custom resources metadata.name, and
#: metadata.namespace when namespaced (apiextensions' crConverter).
FIELD_LABELS: dict[tuple[str, str], dict[str, FieldGetter]] = {
    ("", "Pod"): _NAME_NS
    | {
        "spec.nodeName": _plain("spec.nodeName"),
        "spec.restartPolicy": _plain("spec.restartPolicy"),
        "spec.schedulerName": _plain("spec.schedulerName"),
        "spec.serviceAccountName": _plain("spec.serviceAccountName"),
        "spec.hostNetwork": _flag("spec.hostNetwork"),
        "status.phase": _plain("status.phase"),
        "status.podIP": _first_pod_ip,
        "status.podIPs": lambda obj: "",  # accepted, but not in the pod's field set
        "status.nominatedNodeName": _plain("status.nominatedNodeName"),
    },
    ("", "Node"): _NAME | {"spec.unschedulable": _flag("spec.unschedulable")},
    ("", "Namespace"): _NAME | {"status.phase": _plain("status.phase")},
    ("", "Event"): _NAME_NS
    | {
        f"involvedObject.{f}": _plain(f"involvedObject.{f}")
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    | {
        "reason": _plain("reason"),
        "reportingComponent": _plain("reportingComponent"),
        "source": _plain("source.component"),
        "type": _plain("type"),
    },
    ("", "ReplicationController"): _NAME_NS | {"status.replicas": _count("status.replicas")},
    ("apps", "ReplicaSet"): _NAME_NS | {"status.replicas": _count("status.replicas")},
}
#: Old names a kind still accepts for a field (v1 clients sent spec.host).
FIELD_ALIASES: dict[tuple[str, str], dict[str, str]] = {("", "Pod"): {"spec.host": "spec.nodeName"}}


def _unescape_field_value(value: str) -> str:
    """fields.UnescapeValue: ``\\``, ``,`` and ``=`` must be escaped with a backslash."""
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise _error(
                    400, "BadRequest", f"invalid field selector: invalid escape sequence: \\{char}"
                )
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise _error(
                400,
                "BadRequest",
                f"invalid field selector: unescaped character in value: {ord(char)}",
            )
        else:
            out.append(char)
    if escaped:
        raise _error(400, "BadRequest", "invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_field_terms(selector: str) -> list[str]:
    """fields.splitTerms: commas split terms unless escaped with a backslash."""
    terms, start, escaped = [], 0, False
    for i, char in enumerate(selector):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def field_selector_matcher(
    selector: str | None, spec: ResourceSpec
) -> Callable[[Mapping[str, Any]], bool]:
    """A ``fieldSelector`` as kube-apiserver reads it: ``=``/``==``/``!=`` terms joined by
    commas, values escaped with a backslash; a field the kind does not index is a 400
    (``field label not supported: ...``), as is a term without an operator."""
    if not selector:
        return lambda obj: True
    checks: list[tuple[FieldGetter, bool, str]] = []
    for term in _split_field_terms(selector):
        if not term:
            continue
        # fields.splitTerm: the first operator found splits the term ("!=" before "==", "=").
        found = next(
            (
                (i, op)
                for i in range(len(term))
                for op in ("!=", "==", "=")
                if term.startswith(op, i)
            ),
            None,
        )
        if found is None:
            raise _error(
                400, "BadRequest", f"invalid selector: '{selector}'; can't understand '{term}'"
            )
        index, op = found
        field, value = term[:index], _unescape_field_value(term[index + len(op) :])
        checks.append((_field_getter(spec, field), op != "!=", value))
    return lambda obj: all((get(obj) == value) == equal for get, equal, value in checks)


def _field_getter(spec: ResourceSpec, field: str) -> FieldGetter:
    key = (spec.group, spec.kind)
    field = FIELD_ALIASES.get(key, {}).get(field, field)
    if key in FIELD_LABELS:
        known = FIELD_LABELS[key]
        if field in known:
            return known[field]
        raise _error(400, "BadRequest", f"field label not supported: {field}")
    if spec.custom:
        known = _NAME_NS if spec.namespaced else _NAME
        if field in known:
            return known[field]
        raise _error(400, "BadRequest", f"field label not supported: {field}")
    if field in _NAME_NS:
        return _NAME_NS[field]
    raise _error(
        400,
        "BadRequest",
        f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"',
    )


# ---------------------------------------------------------------------------------------------
# The emulator.


@attrs.define(kw_only=True)
class ApiEmulator(kmock.KubernetesEmulator):
    """KMock's KubernetesEmulator made close enough to kube-apiserver for a scheduler.

    ``validator`` is a shortcut for ``validators[POLICY_RESOURCE]`` (SchedulingPolicies).
    """

    validator: Validator | None = None
    validators: dict[str, Validator] = attrs.field(factory=dict)
    resource_specs: Sequence[ResourceSpec] = RESOURCES
    initial_namespaces: Sequence[str] = INITIAL_NAMESPACES
    #: Events per resource a watch can resume over (see ``_serve_watch``).
    watch_window: int = DEFAULT_WATCH_WINDOW

    # Every pods/binding request (read via .bindings from any thread).
    binding_log: list[BindingRecord] = attrs.field(factory=list, init=False)
    #: Failures injected into the scheduler's requests (see :class:`Fault`).
    faults: list[Fault] = attrs.field(factory=list, init=False)
    _hanging: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    _binding_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _specs: dict[kmock.resource, ResourceSpec] = attrs.field(factory=dict, init=False)
    _rv: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)
    _last_rv: int = attrs.field(default=0, init=False)
    #: The events a watch can resume over, per resource.
    _histories: dict[kmock.resource, _History] = attrs.field(factory=dict, init=False)
    #: Watches refused with "410 Expired", in order (read them in the emulator's loop).
    expired_watches: list[ExpiredWatch] = attrs.field(factory=list, init=False)
    #: Cleared by ``hold_watches()``: new watch requests then wait, unanswered.
    _watch_gate: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    _openapi: OpenApi = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        # The parent registers discovery and the fallbacks for LIST/WATCH/FETCH/CREATE/UPDATE/DELETE
        # as bound methods (self._serve_list...), so the overrides below serve them.
        super().__attrs_post_init__()
        if self.watch_window < 1:
            raise ValueError(f"watch_window must be at least 1, got {self.watch_window}")
        self._watch_gate.set()
        self._openapi = OpenApi(self.resource_specs, SERVER_VERSION, self._crd_schema)
        self.fallback["get /openapi/v3"] << self._serve_openapi_root
        self.fallback["get", re.compile(r"/openapi/v3/.+")] << self._serve_openapi_document
        self.fallback[kmock.method.PUT] << self._serve_replace
        self.fallback[kmock.method.POST, kmock.subresource("binding")] << self._serve_binding
        if self.validator is not None:
            self.validators.setdefault(POLICY_RESOURCE, self.validator)
        for spec in self.resource_specs:
            self._specs[spec.resource] = spec
            self.resources[spec.key] = kmock.ResourceInfo(
                namespaced=spec.namespaced,
                kind=spec.kind,
                singular=spec.singular,
                verbs=set(spec.verbs),
                shortnames=set(spec.shortnames),
                categories=set(spec.categories),
                subresources=set(spec.subresources),
            )
        ns_spec = self._specs[kmock.resource("", "v1", "namespaces")]
        for name in self.initial_namespaces:
            self.objects[ns_spec.resource, None, name] = self._fill_new(
                {"metadata": {"name": name}}, ns_spec
            )

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        # An API error as kube-apiserver sends it: a Status, details only when there are
        # some (KMock would put its traceback there). The emulator's own failures keep it.
        if not isinstance(exc, kmock.KubernetesError):
            return await super()._render_error(exc)
        details = dict(exc.details or {})
        reason, message = exc.reason or "", exc.message or ""
        if isinstance(exc, kmock.KubernetesNotFoundError):  # KMock's own 404s (URL unknown)
            reason, message = "NotFound", "the server could not find the requested resource"
        status = _status(exc.status, reason, message, **details)
        return aiohttp.web.json_response(status, status=exc.status)

    # -- discovery ---------------------------------------------------------------------------
    # KMock's own discovery names the core group version "/v1" (kubectl then finds no core
    # kind) and gives every subresource its parent's kind and verbs. These serve the
    # documents kube-apiserver serves, built from ``resource_specs``.

    async def _serve_server_version(self, request: rendering.Request) -> rendering.Payload:
        major, minor, _ = SERVER_VERSION.lstrip("v").split(".", 2)
        return {
            "major": major,
            "minor": minor,
            "gitVersion": SERVER_VERSION,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2024-04-17T00:00:00Z",
            "goVersion": "go1.22.2",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    async def _serve_root(self, request: rendering.Request) -> rendering.Payload:
        paths = {"/api", "/api/v1", "/apis", "/openapi/v3", "/version"}
        for group, versions in self._groups().items():
            paths.add(f"/apis/{group}")
            paths.update(f"/apis/{group}/{version}" for version in versions)
        return {"paths": sorted(paths)}

    async def _serve_api(self, request: rendering.Request) -> rendering.Payload:
        raw = request._raw_request
        address = raw.host if raw is not None else "127.0.0.1"
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }

    def _groups(self) -> dict[str, list[str]]:
        """Group -> its versions, in the order ``resource_specs`` names them (core excluded)."""
        groups: dict[str, list[str]] = {}
        for spec in self.resource_specs:
            if spec.group and spec.version not in groups.setdefault(spec.group, []):
                groups[spec.group].append(spec.version)
        return groups

    @staticmethod
    def _group_document(group: str, versions: Sequence[str]) -> dict[str, Any]:
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": listed, "preferredVersion": listed[0]}

    async def _serve_apis(self, request: rendering.Request) -> rendering.Payload:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self._group_document(g, vs) for g, vs in self._groups().items()],
        }

    async def _serve_group(self, request: rendering.Request) -> rendering.Payload:
        group = request.resource.group if request.resource is not None else None
        versions = self._groups().get(group or "")
        if not versions:
            raise _error(404, "NotFound", "the server could not find the requested resource")
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            **self._group_document(group or "", versions),
        }

    async def _serve_version(self, request: rendering.Request) -> rendering.Payload:
        group = request.resource.group if request.resource is not None else None
        version = request.resource.version if request.resource is not None else None
        specs = [s for s in self.resource_specs if (s.group, s.version) == (group, version)]
        if not specs:
            raise _error(404, "NotFound", "the server could not find the requested resource")
        resources: list[dict[str, Any]] = []
        for spec in specs:
            entry: dict[str, Any] = {
                "name": spec.plural,
                "singularName": spec.singular,
                "namespaced": spec.namespaced,
                "kind": spec.kind,
                "verbs": list(spec.verbs),
            }
            if spec.shortnames:
                entry["shortNames"] = list(spec.shortnames)
            if spec.categories:
                entry["categories"] = list(spec.categories)
            resources.append(entry)
            for sub in spec.subresources:
                kind, verbs = SUBRESOURCES.get(sub, (None, ("get", "patch", "update")))
                resources.append(
                    {
                        "name": f"{spec.plural}/{sub}",
                        "singularName": "",
                        "namespaced": spec.namespaced,
                        "kind": kind or spec.kind,
                        "verbs": list(verbs),
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": specs[0].api_version,
            "resources": resources,
        }

    async def _serve_openapi_root(self, request: rendering.Request) -> rendering.Payload:
        async with self._lock:  # the CRDs' schemas are read: not while one is written
            return self._openapi.root()

    async def _serve_openapi_document(self, request: rendering.Request) -> rendering.Payload:
        raw = request._raw_request
        parts = (raw.path if raw is not None else "").split("/")[3:]  # "", openapi, v3
        document = None
        if len(parts) == 2 and parts[0] == "api":
            document = self._openapi.document("", parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            document = self._openapi.document(parts[1], parts[2])
        if document is None:
            raise _error(404, "NotFound", "the server could not find the requested resource")
        return document

    def _check_fields(
        self, request: rendering.Request, spec: ResourceSpec, body: Any, *, patch: bool = False
    ) -> tuple[Any, dict[str, str]]:
        """``fieldValidation``: Strict refuses a body with fields the kind's schema lacks;
        Warn drops them and names them in a Warning header. Returns the body to use and the
        headers to answer with. Without the parameter nothing is checked (kube-apiserver
        then warns and drops; here that would cost every write a schema walk)."""
        directive = request.params.get("fieldValidation") or ""
        if directive not in ("Strict", "Warn") or not isinstance(body, Mapping):
            return body, {}
        body = copy.deepcopy(dict(body))
        unknown = self._openapi.unknown_fields(spec, body, patch=patch, prune=True)
        if not unknown:
            return body, {}
        if directive == "Warn":
            warnings = ", ".join(f'299 - "unknown field \\"{f}\\""' for f in unknown)
            return body, {"Warning": warnings}
        error = "strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in unknown)
        if patch:
            raise _error(422, "Invalid", f'{spec.kind} "{request.name}" is invalid: patch: {error}')
        raise _error(
            400,
            "BadRequest",
            f'{spec.kind} in version "{spec.version}" cannot be handled as a {spec.kind}: {error}',
        )

    # -- helpers ---------------------------------------------------------------------------

    @property
    def bindings(self) -> list[BindingRecord]:
        """A copy of the binding log (all attempts, in order); thread-safe."""
        with self._binding_lock:
            return list(self.binding_log)

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out (a cluster-wide counter)."""
        return self._last_rv

    def _next_rv(self) -> str:
        self._last_rv = next(self._rv)
        return str(self._last_rv)

    def _spec_of(self, request: rendering.Request) -> ResourceSpec:
        if request.resource is None or request.resource.plural is None:
            raise kmock.KubernetesEndpointNotFoundError()
        spec = self._specs.get(request.resource)
        if spec is None:
            raise _error(404, "NotFound", "the server could not find the requested resource")
        if not spec.namespaced and request.namespace is not None:
            raise _error(404, "NotFound", "the server could not find the requested resource")
        return spec

    def _key(
        self, spec: ResourceSpec, namespace: str | None, name: str
    ) -> tuple[kmock.resource, str | None, str]:
        return (spec.resource, namespace if spec.namespaced else None, name)

    def _current(self, spec: ResourceSpec, namespace: str | None, name: str) -> kmock.Object | None:
        key = self._key(spec, namespace, name)
        if key in self.objects and not self.objects[key].deleted:
            return self.objects[key]
        return None

    def _not_found(self, spec: ResourceSpec, name: str) -> kmock.KubernetesError:
        return _error(
            404,
            "NotFound",
            f'{spec.group_qualified()} "{name}" not found',
            {"name": name, "group": spec.group, "kind": spec.plural},
        )

    def _conflict(
        self, spec: ResourceSpec, name: str, why: str, kind: str | None = None
    ) -> kmock.KubernetesError:
        qualified = kind or spec.group_qualified()
        return _error(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
            {"name": name, "group": spec.group, "kind": kind or spec.plural},
        )

    def _validate(self, spec: ResourceSpec, obj: Mapping[str, Any]) -> None:
        validator = self.validators.get(spec.key)
        if validator is None:
            return
        messages = [str(m) for m in validator(copy.deepcopy(dict(obj)))]
        if messages:
            name = (obj.get("metadata") or {}).get("name", "")
            what = f"{spec.kind}.{spec.group}" if spec.group else spec.kind
            text = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
            raise _error(
                422,
                "Invalid",
                f'{what} "{name}" is invalid: {text}',
                {
                    "name": name,
                    "group": spec.group,
                    "kind": spec.kind,
                    "causes": [{"reason": "FieldValueInvalid", "message": m} for m in messages],
                },
            )

    def _fill_new(self, obj: dict[str, Any], spec: ResourceSpec) -> dict[str, Any]:
        obj.setdefault("apiVersion", spec.api_version)
        obj.setdefault("kind", spec.kind)
        meta = obj.setdefault("metadata", {})
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        meta["generation"] = 1
        meta["resourceVersion"] = self._next_rv()
        for field in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ):
            meta.pop(field, None)
        if spec.kind == "Pod":
            pod_spec = obj.setdefault("spec", {})
            if not pod_spec.get("schedulerName"):
                pod_spec["schedulerName"] = "default-scheduler"
            if pod_spec.get("priority") is None and not pod_spec.get("priorityClassName"):
                pod_spec["priority"] = 0
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        elif spec.kind == "Namespace":
            obj.setdefault("status", {}).setdefault("phase", "Active")
        return obj

    async def _emit(
        self,
        spec: ResourceSpec,
        type_: str,
        obj: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
    ) -> None:
        event = {"type": type_, "object": dict(obj), "old": old}
        self._history(spec).append(int(obj["metadata"]["resourceVersion"]), event)
        await self._buses[spec.resource].put(event)

    def _history(self, spec: ResourceSpec) -> _History:
        history = self._histories.get(spec.resource)
        if history is None:
            history = self._histories[spec.resource] = _History(self.watch_window)
        return history

    async def _store_update(
        self,
        spec: ResourceSpec,
        name: str,
        namespace: str | None,
        old: dict[str, Any],
        new: dict[str, Any],
        subresource: str | None,
    ) -> dict[str, Any]:
        """Apply the API server's rules to an updated object, store it, emit the events.

        Call under self._lock. ``old`` is the current stored version, ``new`` the candidate.
        """
        if subresource == "status":
            candidate = copy.deepcopy(old)
            if "status" in new:
                candidate["status"] = new["status"]
            else:
                candidate.pop("status", None)
            new = candidate
        elif "status" in spec.subresources:
            new = dict(new)
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        new["apiVersion"], new["kind"] = (
            old.get("apiVersion", spec.api_version),
            old.get("kind", spec.kind),
        )
        self._openapi.apply_defaults(spec, new)
        meta = new["metadata"] = dict(new.get("metadata") or {})
        old_meta = old.get("metadata") or {}
        for field in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if new == old:
            return old  # a no-op write: no new resourceVersion, no event
        if subresource is None and any(
            new.get(k) != old.get(k)
            for k in set(new) | set(old)
            if k not in ("metadata", "status", "apiVersion", "kind")
        ):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        self._validate(spec, new)
        meta["resourceVersion"] = self._next_rv()
        obj = self.objects[self._key(spec, namespace, name)]
        obj.history.append(new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            # The last finalizer gone: the API server deletes instead of updating (one
            # DELETED event, no MODIFIED before it; a watch resumed from a MODIFIED's
            # version would otherwise skip a DELETED carrying the same version).
            obj.delete()
            await self._emit(spec, "DELETED", new)
        else:
            await self._emit(spec, "MODIFIED", new, old)
        return new

    # -- reading -----------------------------------------------------------------------------

    async def _serve_fetch(self, request: rendering.Request) -> rendering.Payload:
        spec = self._spec_of(request)
        if request.subresource not in (None, "status"):
            raise kmock.KubernetesEndpointNotFoundError()
        if spec.namespaced and request.namespace is None:
            raise _error(404, "NotFound", "the server could not find the requested resource")
        async with self._lock:
            obj = self._current(spec, request.namespace, request.name or "")
            if obj is None:
                raise self._not_found(spec, request.name or "")
            raw = obj.raw
        table = self._table(request, spec, [raw], raw["metadata"].get("resourceVersion", ""))
        return raw if table is None else table

    def _table(
        self,
        request: rendering.Request,
        spec: ResourceSpec,
        items: Sequence[Mapping[str, Any]],
        resource_version: str,
        continue_token: str = "",
    ) -> dict[str, Any] | None:
        """The Table ``kubectl get`` asks for in its Accept header, if there is a printer."""
        version = table_version(_header(request, "Accept"))
        if version is None:
            return None
        columns: list[Mapping[str, Any]] | None = None
        if spec.custom:
            columns = list((self._crd_version(spec) or {}).get("additionalPrinterColumns") or [])
        return render_table(
            version,
            (spec.group, spec.kind),
            items,
            resource_version,
            include_object=request.params.get("includeObject") or "Metadata",
            crd_columns=columns,
            continue_token=continue_token,
        )

    def _crd_version(self, spec: ResourceSpec) -> Mapping[str, Any] | None:
        """The stored CRD's entry for a custom resource's version (None if no CRD)."""
        crd_spec = self._specs.get(
            kmock.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        )
        if crd_spec is None:
            return None
        crd = self._current(crd_spec, None, f"{spec.plural}.{spec.group}")
        if crd is None:
            return None
        versions = (crd.raw.get("spec") or {}).get("versions") or []
        return next((v for v in versions if v.get("name") == spec.version), None)

    def _crd_schema(self, spec: Any) -> Mapping[str, Any] | None:
        version = self._crd_version(spec)
        return ((version or {}).get("schema") or {}).get("openAPIV3Schema")

    def _matcher(
        self, request: rendering.Request, spec: ResourceSpec
    ) -> Callable[[Mapping[str, Any]], bool]:
        labels = label_selector_matcher(request.params.get("labelSelector"))
        fields = field_selector_matcher(request.params.get("fieldSelector"), spec)
        namespace, name = request.namespace, request.name

        def matcher(obj: Mapping[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            return (
                (namespace is None or meta.get("namespace") == namespace)
                and (name is None or meta.get("name") == name)
                and labels(obj)
                and fields(obj)
            )

        return matcher

    def _snapshot(
        self, spec: ResourceSpec, matcher: Callable[[Mapping[str, Any]], bool]
    ) -> list[dict[str, Any]]:
        items = [
            obj.raw
            for (res, _, _), obj in self.objects.items()
            if res == spec.resource and not obj.deleted
        ]
        items = [item for item in items if matcher(item)]
        items.sort(
            key=lambda o: ((o["metadata"].get("namespace") or ""), o["metadata"].get("name", ""))
        )
        return items

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        spec = self._spec_of(request)
        matcher = self._matcher(request, spec)
        async with self._lock:
            items = self._snapshot(spec, matcher)
            rv = str(self._last_rv)
        cont = ""
        if request.params.get("continue"):
            after = json.loads(base64.urlsafe_b64decode(request.params["continue"]))
            items = [
                i
                for i in items
                if [i["metadata"].get("namespace") or "", i["metadata"]["name"]] > after
            ]
        if request.params.get("limit") and int(request.params["limit"]) < len(items):
            items = items[: int(request.params["limit"])]
            last = items[-1]["metadata"]
            cont = base64.urlsafe_b64encode(
                json.dumps([last.get("namespace") or "", last["name"]]).encode()
            ).decode()
        table = self._table(request, spec, items, rv, cont)
        if table is not None:
            return table
        return {
            "apiVersion": spec.api_version,
            "kind": f"{spec.kind}List",
            "metadata": {"resourceVersion": rv, **({"continue": cont} if cont else {})},
            "items": items,
        }

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        """A watch, as kube-apiserver's watch cache serves it.

        Where it starts depends on ``resourceVersion``:

        * absent, ``""`` or ``"0"``: every matching object as ``ADDED`` (a snapshot taken
          under the lock, so nothing between it and the live stream is lost), then the
          live events; ``sendInitialEvents=true`` adds the initial-events-end BOOKMARK;
        * ``N``: the events after N, DELETED included (from the resource's history of the
          last ``watch_window`` events), then the live ones: nothing is replayed, which is
          what a client resuming a watch, or watching from a LIST's version, expects;
        * ``N`` older than the history: HTTP 200 and one ``ERROR`` event carrying a Status
          ``410 Expired`` ("too old resource version: N (FLOOR)"), then the end of the
          stream, as the cacher answers (the client must LIST again);
        * ``N`` newer than any version handed out: an ``ERROR`` event ``504 Timeout``
          ("Too large resource version") at once (a real server first waits 3 s for its
          cache to catch up; this one is never behind).

        Selectors apply to the events: an object that starts matching is sent as ADDED,
        one that stops as DELETED. A bad selector or resourceVersion is a 400 before any
        byte is streamed. ``timeoutSeconds`` ends the stream (an event arriving exactly at
        the deadline may be lost to that stream; a client resuming from the last version
        it saw gets it). ``hold_watches()`` makes new watches wait before answering.
        """
        spec = self._spec_of(request)
        matcher = self._matcher(request, spec)
        since = self._watch_start(request)
        await self._watch_gate.wait()
        bus = self._buses[spec.resource]
        yield b""  # send the headers now, even if nothing happens for a while
        error: dict[str, Any] | None = None
        initial: list[dict[str, Any]] = []
        async with self._lock:
            marker = await bus.mark()
            rv = str(self._last_rv)
            if since is None:
                initial = [
                    {"type": "ADDED", "object": item} for item in self._snapshot(spec, matcher)
                ]
            elif since > self._last_rv:
                error = _status(
                    504,
                    "Timeout",
                    f"Timeout: Too large resource version: {since}, current: {self._last_rv}",
                    causes=[
                        {
                            "reason": "ResourceVersionTooLarge",
                            "message": "Too large resource version",
                        }
                    ],
                    retryAfterSeconds=1,
                )
            else:
                history = self._history(spec)
                if since < history.floor:
                    error = _status(
                        410, "Expired", f"too old resource version: {since} ({history.floor})"
                    )
                    self.expired_watches.append(ExpiredWatch(spec.key, since, history.floor))
                else:
                    seen = (self._visible(e, matcher) for e in history.since(since))
                    initial = [event for event in seen if event is not None]
        try:
            if error is not None:
                yield {"type": "ERROR", "object": error}
                return
            for event in initial:
                yield event
            if request.params.get("sendInitialEvents") == "true":
                yield {
                    "type": "BOOKMARK",
                    "object": {
                        "apiVersion": spec.api_version,
                        "kind": spec.kind,
                        "metadata": {
                            "resourceVersion": rv,
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    },
                }
            timeout = (
                float(request.params["timeoutSeconds"])
                if request.params.get("timeoutSeconds")
                else None
            )
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            while True:
                try:
                    if deadline is None:
                        event = await bus.get(since=marker)
                    else:
                        event = await asyncio.wait_for(
                            bus.get(since=marker), max(0.0, deadline - loop.time())
                        )
                except (_WatchClosed, TimeoutError):
                    return
                if event.get("type") == "ERROR":  # injected by a test: sent as it is
                    yield {"type": "ERROR", "object": event["object"]}
                    continue
                visible = self._visible(event, matcher)
                if visible is not None:
                    yield visible
        finally:
            await bus.unmark(marker)

    @staticmethod
    def _visible(
        event: Mapping[str, Any], matcher: Callable[[Mapping[str, Any]], bool]
    ) -> dict[str, Any] | None:
        """The event as a watch with this selector sees it (None: not at all)."""
        new_ok = matcher(event["object"])
        old_ok = event.get("old") is not None and matcher(event["old"])
        if event["type"] == "MODIFIED" and new_ok and not old_ok:
            return {"type": "ADDED", "object": event["object"]}
        if event["type"] == "MODIFIED" and old_ok and not new_ok:
            return {"type": "DELETED", "object": event["object"]}
        if new_ok:
            return {"type": event["type"], "object": event["object"]}
        return None

    @staticmethod
    def _watch_start(request: rendering.Request) -> int | None:
        """The resourceVersion a watch resumes after; None for "the state, then changes"."""
        raw = request.params.get("resourceVersion") or ""
        if raw in ("", "0"):
            return None
        try:
            since = int(raw)
            if since < 0:
                raise ValueError(raw)
        except ValueError:
            raise _error(
                400,
                "BadRequest",
                f'resourceVersion: Invalid value: "{raw}": invalid resource version',
            ) from None
        return since

    async def disconnect_watches(self) -> None:
        """End all open watch streams server-side (clients resume from their last version)."""
        for bus in list(self._buses.values()):
            await bus.put(_WatchClosed)

    def hold_watches(self) -> None:
        """New watch requests wait unanswered until ``release_watches()`` (a watch-only
        partition: with ``disconnect_watches()``, clients fall behind while writes go on)."""
        self._watch_gate.clear()

    def release_watches(self) -> None:
        self._watch_gate.set()

    # -- writing -----------------------------------------------------------------------------

    async def _serve_create(self, request: rendering.Request) -> rendering.Payload:
        spec = self._spec_of(request)
        if not isinstance(request.data, Mapping):
            raise _error(400, "BadRequest", "the body of the request was not a JSON object")
        if spec.namespaced and request.namespace is None:
            raise _error(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        body, warning = self._check_fields(request, spec, request.data)
        obj: dict[str, Any] = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        if spec.namespaced:
            if meta.get("namespace") not in (None, "", request.namespace):
                raise _error(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match "
                    "the namespace sent on the request",
                )
            meta["namespace"] = request.namespace
        else:
            meta.pop("namespace", None)
        async with self._lock:
            if spec.namespaced:
                ns_spec = self._specs[kmock.resource("", "v1", "namespaces")]
                if self._current(ns_spec, None, request.namespace or "") is None:
                    raise self._not_found(ns_spec, request.namespace or "")
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise _error(
                        422,
                        "Invalid",
                        f'{spec.kind} "" is invalid: metadata.name: Required value: '
                        "name or generateName is required",
                    )
                while True:
                    suffix = "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
                    meta["name"] = meta["generateName"] + suffix
                    if self._current(spec, request.namespace, meta["name"]) is None:
                        break
            name = meta["name"]
            if self._current(spec, request.namespace, name) is not None:
                raise _error(
                    409,
                    "AlreadyExists",
                    f'{spec.group_qualified()} "{name}" already exists',
                    {"name": name, "group": spec.group, "kind": spec.plural},
                )
            self._fill_new(obj, spec)
            self._openapi.apply_defaults(spec, obj)
            if spec.kind == "Pod" and not spec.group:
                problem = _merge_label_keys(obj)
                if problem:
                    raise _error(422, "Invalid", f'Pod "{name}" is invalid: {problem}')
            self._validate(spec, obj)
            key = self._key(spec, request.namespace, name)
            if key in self.objects:
                self.objects[key].create(obj)  # re-creation after deletion: the history continues
            else:
                self.objects[key] = obj
            await self._emit(spec, "ADDED", obj)
        return rendering.Response(status=201, payload=obj, headers=warning)

    async def _serve_update(self, request: rendering.Request) -> rendering.Payload:
        spec = self._spec_of(request)
        name = request.name or ""
        if request.subresource not in (None, "status") or (
            request.subresource == "status" and "status" not in spec.subresources
        ):
            raise kmock.KubernetesEndpointNotFoundError()
        content_type = _header(request, "Content-Type").split(";")[0].strip().lower()
        patch = request.data
        if content_type.startswith("application/apply-patch"):
            raise _error(415, "UnsupportedMediaType", "server-side apply is not emulated")
        patch, warning = self._check_fields(request, spec, patch, patch=True)
        async with self._lock:
            current = self._current(spec, request.namespace, name)
            if current is None:
                raise self._not_found(spec, name)
            old = copy.deepcopy(current.raw)
            try:
                if isinstance(patch, list) or content_type == "application/json-patch+json":
                    new = jsonpatch.apply_patch(old, patch, in_place=False)
                elif not isinstance(patch, Mapping):
                    raise _error(400, "BadRequest", "the body of the request was not a JSON object")
                elif content_type == "application/strategic-merge-patch+json":
                    new = strategic_merge_patch(old, patch)
                else:
                    new = merge_patch(old, patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
                raise _error(422, "Invalid", f"the patch cannot be applied: {e}") from e
            wanted_rv = (
                (patch.get("metadata") or {}).get("resourceVersion")
                if isinstance(patch, Mapping)
                else None
            )
            if wanted_rv is not None and wanted_rv != old["metadata"].get("resourceVersion"):
                raise self._conflict(
                    spec,
                    name,
                    "the object has been modified; please apply your "
                    "changes to the latest version and try again",
                )
            new_uid = (new.get("metadata") or {}).get("uid") if isinstance(new, Mapping) else None
            if new_uid and new_uid != old["metadata"].get("uid"):
                # uid is immutable: a patch naming another pod's uid (client-go's
                # PatchPodStatus precondition) is refused, as validation refuses it.
                raise _error(
                    422,
                    "Invalid",
                    f'{spec.kind} "{name}" is invalid: metadata.uid: Invalid value: '
                    f'"{new_uid}": field is immutable',
                )
            result = await self._store_update(
                spec, name, request.namespace, old, new, request.subresource
            )
        return rendering.Response(status=200, payload=result, headers=warning)

    async def _serve_replace(self, request: rendering.Request) -> rendering.Payload:
        spec = self._spec_of(request)
        name = request.name or ""
        if (
            request.name is None
            or request.subresource not in (None, "status")
            or (request.subresource == "status" and "status" not in spec.subresources)
        ):
            raise _error(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if not isinstance(request.data, Mapping):
            raise _error(400, "BadRequest", "the body of the request was not a JSON object")
        body, warning = self._check_fields(request, spec, request.data)
        new: dict[str, Any] = copy.deepcopy(dict(body))
        if (new.get("metadata") or {}).get("name") not in (None, name):
            raise _error(
                400, "BadRequest", "the name of the object does not match the name on the URL"
            )
        async with self._lock:
            current = self._current(spec, request.namespace, name)
            if current is None:
                raise self._not_found(spec, name)
            old = copy.deepcopy(current.raw)
            wanted_rv = (new.get("metadata") or {}).get("resourceVersion")
            if wanted_rv not in (None, "") and wanted_rv != old["metadata"].get("resourceVersion"):
                raise self._conflict(
                    spec,
                    name,
                    "the object has been modified; please apply your "
                    "changes to the latest version and try again",
                )
            result = await self._store_update(
                spec, name, request.namespace, old, new, request.subresource
            )
        return rendering.Response(status=200, payload=result, headers=warning)

    async def _serve_delete(self, request: rendering.Request) -> rendering.Payload:
        spec = self._spec_of(request)
        name = request.name or ""
        if request.subresource is not None:
            raise kmock.KubernetesEndpointNotFoundError()
        options = request.data if isinstance(request.data, Mapping) else {}
        async with self._lock:
            current = self._current(spec, request.namespace, name)
            if current is None:
                raise self._not_found(spec, name)
            old = copy.deepcopy(current.raw)
            meta = old["metadata"]
            pre = options.get("preconditions") or {}
            if pre.get("uid") not in (None, meta.get("uid")) or pre.get("resourceVersion") not in (
                None,
                meta.get("resourceVersion"),
            ):
                raise self._conflict(spec, name, "the precondition does not match")
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return rendering.Response(status=200, payload=old)
                new = copy.deepcopy(old)
                new["metadata"]["deletionTimestamp"] = _now()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                new["metadata"]["resourceVersion"] = self._next_rv()
                current.history.append(new)
                await self._emit(spec, "MODIFIED", new, old)
                return rendering.Response(status=200, payload=new)
            final = copy.deepcopy(old)
            final["metadata"]["resourceVersion"] = self._next_rv()
            current.history.append(final)
            current.delete()
            await self._emit(spec, "DELETED", final)
        return rendering.Response(status=200, payload=final)

    async def _serve_binding(self, request: rendering.Request) -> rendering.Payload:
        """``POST /api/v1/namespaces/NS/pods/NAME/binding``, as kube-apiserver's BindingREST.

        Body: a v1 Binding ``{metadata: {name: POD}, target: {kind: Node, name: NODE}}``.
        404 if the pod does not exist; 409 Conflict (kind ``pods/binding``) if it already
        has ``spec.nodeName``, is being deleted, has schedulingGates, or ``metadata.uid``
        is given and differs; otherwise sets ``spec.nodeName``, copies the binding's
        annotations, sets ``PodScheduled=True`` (as UpdatePodCondition does: no reason or
        message, lastTransitionTime now if the status changed), bumps resourceVersion,
        emits MODIFIED, and answers 201 with a Success Status. The target node does not
        need to exist (nor does it on a real server).
        """
        spec = self._spec_of(request)
        if (
            spec.plural != "pods"
            or spec.group != ""
            or request.name is None
            or request.namespace is None
        ):
            raise kmock.KubernetesEndpointNotFoundError()
        body = request.data if isinstance(request.data, Mapping) else {}
        target = body.get("target") or {}
        node = target.get("name")
        status = 500
        uid: str | None = None
        try:
            if (body.get("metadata") or {}).get("name") != request.name:
                status = 400
                raise _error(400, "BadRequest", "name in URL does not match name in Binding object")
            if target.get("kind") not in (None, "", "Node"):
                status = 422
                raise _error(
                    422,
                    "Invalid",
                    f'Binding.target.kind: must be empty or "Node", got {target.get("kind")!r}',
                )
            if not node:
                status = 422
                raise _error(
                    422,
                    "Invalid",
                    f'Binding "{request.name}" is invalid: target.name: Required value',
                )
            async with self._lock:
                current = self._current(spec, request.namespace, request.name)
                if current is None:
                    status = 404
                    raise self._not_found(spec, request.name)
                old = copy.deepcopy(current.raw)
                uid = old["metadata"].get("uid")
                why: str | None = None
                wanted_uid = (body.get("metadata") or {}).get("uid")
                if wanted_uid and wanted_uid != uid:
                    why = (
                        f"Precondition failed: UID in precondition: {wanted_uid}, "
                        f"UID in object meta: {uid}"
                    )
                elif old["metadata"].get("deletionTimestamp"):
                    why = f"pod {request.name} is being deleted, cannot be assigned to a host"
                elif (old.get("spec") or {}).get("nodeName"):
                    assigned = old["spec"]["nodeName"]
                    why = f'pod {request.name} is already assigned to node "{assigned}"'
                elif (old.get("spec") or {}).get("schedulingGates"):
                    why = f"pod {request.name} has non-empty .spec.schedulingGates"
                if why is not None:
                    status = 409
                    raise self._conflict(spec, request.name, why, kind="pods/binding")
                new = copy.deepcopy(old)
                new.setdefault("spec", {})["nodeName"] = node
                annotations = (body.get("metadata") or {}).get("annotations") or {}
                if annotations:
                    new["metadata"].setdefault("annotations", {}).update(annotations)
                conditions = new.setdefault("status", {}).setdefault("conditions", [])
                previous = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
                condition = {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": (
                        previous.get("lastTransitionTime")
                        if previous and previous.get("status") == "True"
                        else _now()
                    ),
                }
                if previous is None:
                    conditions.append(condition)
                else:
                    conditions[conditions.index(previous)] = condition
                new["metadata"]["resourceVersion"] = self._next_rv()
                current.history.append(new)
                await self._emit(spec, "MODIFIED", new, old)
                status = 201
        finally:
            with self._binding_lock:
                self.binding_log.append(
                    BindingRecord(
                        namespace=request.namespace,
                        pod=request.name,
                        node=node,
                        status=status,
                        time=time.time(),
                        uid=uid,
                    )
                )
        return rendering.Response(
            status=201,
            payload={
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": 201,
            },
        )

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        raw = request._raw_request
        agent = raw.headers.get("User-Agent", "") if raw is not None else ""
        path = raw.path if raw is not None else ""
        # raw.method, not str(request.method): KMock's enum prints as "method.GET", which
        # no fault's method matched, so faults with a method were never injected.
        method = raw.method if raw is not None else ""
        fault = next((f for f in self.faults if f.applies(method, path, agent)), None)
        if fault is None:
            return await self._dispatch(request)
        if fault.action == "hang":
            await self._hanging.wait()
            raise ConnectionResetError("the emulator is stopping")
        if fault.action == "after":
            await self._dispatch(request)
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": fault.status,
            "reason": "InternalError" if fault.status >= 500 else "TooManyRequests",
            "message": "injected fault",
        }
        return aiohttp.web.json_response(status, status=fault.status)

    def stop_hanging(self) -> None:
        """Let the requests held by "hang" faults go (they fail)."""
        self._hanging.set()

    async def inject_watch_event(self, api_version: str, kind: str, event: dict[str, Any]) -> None:
        """Send ``event`` (e.g. an ERROR with a Status) down every watch of one resource."""
        spec = find_resource(api_version, kind)
        await self._buses[spec.resource].put(event)

    async def delete_silently(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> None:
        """Delete an object without a watch event: what a client whose watch was down
        during the deletion never hears of."""
        spec = find_resource(api_version, kind)
        async with self._lock:
            current = self._current(spec, namespace, name)
            if current is not None:
                current.delete()

    async def update_silently(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        change: Callable[[dict[str, Any]], None],
    ) -> None:
        """Store a changed version (a new resourceVersion) without a watch event: a write
        that a client whose watch lags behind has not heard of yet."""
        spec = find_resource(api_version, kind)
        async with self._lock:
            current = self._current(spec, namespace, name)
            if current is None:
                raise self._not_found(spec, name)
            new = copy.deepcopy(current.raw)
            change(new)
            new["metadata"]["resourceVersion"] = self._next_rv()
            current.history.append(new)

    async def _dispatch(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        # Skip KubernetesEmulator._handle(): it stores every write before the reactions run
        # (so even intercepted writes happen). Here, the writes are the fallback reactions.
        #
        # KMock's RawHandler decides whether a reaction applies with ``request in view``,
        # which re-filters every request served so far: O(requests) per reaction and per
        # request, so a run of a few thousand requests takes minutes. For reactions behind
        # plain filters (all of the emulation, most test reactions) the request alone
        # decides; only views that count requests (slices like ``[:6]``) need the history.
        priorities = [payload.priorities for payload in self._payloads]
        depth = max((len(p) for p in priorities), default=0)
        keys = [tuple(-v for v in p) + (0,) * (depth - len(p)) for p in priorities]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        for index in order:
            payload = self._payloads[index]
            if payload._disabled.is_set():
                continue
            inside = self._matches(payload._source, request)
            if inside is None:
                inside = request in payload._source
            if not inside:
                continue
            try:
                return await payload(request)
            except rendering.ReactionMismatchError:
                payload._disabled.set()
            except NotImplementedError:
                pass
        raise NotImplementedError("no reaction matches the request")

    def _matches(self, view: Any, request: rendering.Request) -> bool | None:
        """Whether ``request`` is in ``view`` by its own criteria; None if history matters."""
        while view is not self:
            if isinstance(view, kmock_dsl.Filter):
                if not view.criteria(request):
                    return False
            elif not isinstance(view, kmock_dsl.Priority):
                return None  # a slice, group or exclusion: counts depend on past requests
            view = view._source
        return True


# ---------------------------------------------------------------------------------------------
# Running it on a port, in its own thread.


class _QuickShutdownServer(aiohttp.test_utils.RawTestServer):
    """aiohttp's test server, but not waiting 60 s for open watch streams on shutdown."""

    async def _make_runner(self, debug: bool = True, **kwargs: Any) -> aiohttp.web.ServerRunner:
        srv = aiohttp.web.Server(self._handler, loop=self._loop, debug=debug, **kwargs)
        return aiohttp.web.ServerRunner(srv, debug=debug, shutdown_timeout=0.5, **kwargs)


class EmulatorServer:
    """Runs an ``ApiEmulator`` on http://127.0.0.1:<free port> in a dedicated thread.

    Usage::

        with EmulatorServer(validator=fn) as server:
            server.url              # 'http://127.0.0.1:PORT'
            server.emulator         # the ApiEmulator (KMock handler) -- see call()
            server.bindings         # list[BindingRecord], thread-safe copy
            server.call(lambda em: em.objects[...])   # run in the emulator's loop
            server.disconnect_watches()
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 5.0,
        **emulator_kwargs: Any,
    ) -> None:
        self._host = host
        self._port = port or None  # None: a free port
        self._startup_timeout = startup_timeout
        self._kwargs = emulator_kwargs
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.emulator: ApiEmulator | None = None
        self.url: str = ""

    def __enter__(self) -> EmulatorServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="k8s-emulator", daemon=True)
        self._thread.start()
        if not self._ready.wait(self._startup_timeout) or self._error is not None:
            raise RuntimeError(f"The emulator did not start: {self._error!r}")

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is None or self._loop is None or self._stop is None:
            return
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError("The emulator thread did not stop in time.")
        self._thread = None
        if self._error is not None:
            raise RuntimeError("The emulator failed") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:
            self._error = e
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        emulator = ApiEmulator(**self._kwargs)
        async with (
            emulator,
            kmock.Server(
                emulator, host=self._host, port=self._port, server_cls=_QuickShutdownServer
            ) as server,
        ):
            self.emulator = emulator
            self.url = str(server.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()
            emulator.stop_hanging()
            emulator.release_watches()
            await emulator.disconnect_watches()

    def call(self, fn: Callable[[ApiEmulator], Any], timeout: float = 5.0) -> Any:
        """Run ``fn(emulator)`` (sync or async) in the emulator's loop; return its result."""
        assert self._loop is not None and self.emulator is not None
        emulator = self.emulator

        async def runner() -> Any:
            result = fn(emulator)
            return await result if asyncio.iscoroutine(result) else result

        return asyncio.run_coroutine_threadsafe(runner(), self._loop).result(timeout)

    @property
    def bindings(self) -> list[BindingRecord]:
        assert self.emulator is not None
        return self.emulator.bindings

    @property
    def unexpected_errors(self) -> list[BaseException]:
        """Exceptions the emulator answered with 500 (its own bugs, not API errors like 404/409)."""
        return list(
            self.call(lambda em: [e for e in em.errors if not isinstance(e, kmock.KubernetesError)])
        )

    def disconnect_watches(self) -> None:
        self.call(lambda em: em.disconnect_watches())

    def set_validator(self, validator: Validator | None, resource: str = POLICY_RESOURCE) -> None:
        """Install (or remove, with None) the validation hook for a resource key."""

        def setter(em: ApiEmulator) -> None:
            if validator is None:
                em.validators.pop(resource, None)
            else:
                em.validators[resource] = validator

        self.call(setter)

    def hold_watches(self) -> None:
        """New watch requests wait unanswered until ``release_watches()``."""
        self.call(lambda em: em.hold_watches())

    def release_watches(self) -> None:
        self.call(lambda em: em.release_watches())

    @property
    def expired_watches(self) -> list[ExpiredWatch]:
        """Every watch refused with "410 Expired" so far."""
        return list(self.call(lambda em: list(em.expired_watches)))


def write_kubeconfig(path: pathlib.Path, url: str, *, namespace: str = "default") -> pathlib.Path:
    """A kubeconfig with one context pointing at ``url`` (plain http, anonymous)."""
    import yaml  # a project dependency; imported lazily as only this helper needs it

    cluster = {"name": "emulator", "cluster": {"server": url}}
    context = {"cluster": "emulator", "user": "emulator", "namespace": namespace}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": "emulator", "user": {}}],
                "contexts": [{"name": "emulator", "context": context}],
                "current-context": "emulator",
            }
        )
    )
    return path
