"""The SchedulingPolicy model: what a policy says, whether it is valid, and its JSON schema.

A ``SchedulingPolicy`` (``policyscheduler.io/v1alpha1``) declares which predicates
(filters) run, in what order, which priorities (scores) count and with what weight,
plus the legacy HTTP extenders. Field names are the legacy kube-scheduler Policy API's,
camelCase, so that the models' attributes, the CRD and an old Policy file all use the
same words (``spec.hardPodAffinitySymmetricWeight`` is ``spec.hardPodAffinitySymmetricWeight``
everywhere). The models are frozen pydantic models in strict mode: ``"5"`` is not a
weight and ``1`` is not ``true``, as in the Go API.

How a spec is checked (``check_spec``), in two passes whose errors are all collected:

1. *Shape*, by pydantic: types, bounds, required and unknown fields (``extra="forbid"``),
   and the rules local to one object (written as validators on that model):

   * an ``argument`` sets exactly one of its kinds (``argument: {}`` sets none);
   * a predicate without an argument must be a built-in name or an alias
     (``names.BUILTIN_PREDICATES``, the seeds' names included) or a Filter plugin of
     kube-scheduler v1.30 (``names.IN_TREE_FILTER_PLUGINS``); ``CheckNodeLabelPresence``
     / ``CheckServiceAffinity`` take their own argument kind (``labelsPresence`` /
     ``serviceAffinity``) or none (then they filter nothing, as v1.17+); any other
     built-in takes no argument (a custom predicate needs its own name);
   * the name of an argument-carrying entry follows upstream's algorithm name rule
     (``names.NAME_RULE``, enforced by v1.13-v1.16);
   * a priority without an argument must be a built-in name or a Score plugin of
     kube-scheduler v1.30 (``names.IN_TREE_SCORE_PLUGINS``); a built-in takes no
     argument, except ``RequestedToCapacityRatioPriority`` which may carry its
     ``requestedToCapacityRatioArguments``;
   * priority weights are ``1 <= weight < names.MAX_WEIGHT``;
     ``hardPodAffinitySymmetricWeight`` and ``percentageOfNodesToScore`` are 0..100;
   * ``mode`` is ``Active`` or ``Shadow`` (exactly); ``shadow.percentageOfPods`` is
     1..100 and ``shadow.maxDecisionsPerSecond`` at least 1 (``shadow`` is read only in
     Shadow mode, so that promoting a policy is a change of ``mode`` alone);
   * a ``requestedToCapacityRatioArguments.shape`` is non-empty, its utilization values
     strictly increase within 0..100 and its scores are 0..10; resource weights are >= 1;
   * an extender with a ``prioritizeVerb`` has a positive ``weight``; managed resources
     are extended resource names (``example.com/gpu``); TLS data is base64; ``insecure``
     is not combined with a CA; ``urlPrefix`` is an http(s) URL with a host, not a
     link-local or cloud metadata address unless ``allowMetadataAddresses``
     (:func:`url_prefix_problem`).

2. *Across entries*, read leniently from the raw spec so that an entry with some other
   problem still takes part (one bad entry does not hide the others' clashes):

   * two predicates may not mean the same predicate (aliases resolved with
     ``names.canonical_predicate``), nor two priorities share a name;
   * **the order clash rule**: ``order`` values are unique; a second entry with an
     ``order`` already taken is refused, naming both entries. Ties are never broken
     silently because the evaluation order decides which failure reasons a pod gets
     when ``alwaysCheckAllPredicates`` is false;
   * at most one extender implements bind (``bindVerb``); a managed resource name is
     claimed by one extender only.

**The ordering rule** (``SchedulingPolicySpec.ordered_predicates``): entries with an
``order`` run first, ascending; entries without one run after all ordered ones, in list
order. ``predicates`` absent (None) means the legacy DefaultProvider's set in the legacy
fixed order; ``[]`` means no filtering at all. The same "absent is not empty" holds for
``priorities``; the engine expands absent lists from ``names``.

Errors name the object and the field path in the CRD's terms, one line each, in the
form ``SchedulingPolicy "gpu": spec.priorities[2].weight: must be a positive integer,
got 0``. ``PolicyError`` carries them all. Internally an error is an ``Issue`` (a path
tuple and a message) so that ``legacy.py`` can render the same findings with the
legacy file's paths.

``spec_json_schema()`` derives the CRD's ``openAPIV3Schema`` for ``spec`` from these
models (references inlined, nulls dropped, Kubernetes' int-or-string marker), so the
CRD cannot drift from what the operator accepts. Defaults stay out of the schema on
purpose: the API server would otherwise write them into stored objects, and an absent
list must stay absent.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import difflib
import ipaddress
import json
import re
import socket
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from policy_scheduler import names

GROUP: Final = names.CRD_GROUP
VERSION: Final = names.CRD_VERSION
API_VERSION: Final = names.CRD_API_VERSION
KIND: Final = names.CRD_KIND

#: A field path: ``("spec", "priorities", 2, "weight")`` is ``spec.priorities[2].weight``.
Path = tuple[str | int, ...]

# RFC 1123 subdomain: object names, pod spec.schedulerName, resource-name prefixes.
_DNS_SUBDOMAIN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_DNS_SUBDOMAIN_RE: Final = re.compile(_DNS_SUBDOMAIN)
_QUALIFIED_NAME_RE: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_GO_DURATION_RE: Final = re.compile(r"^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_GO_DURATION_PART_RE: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_DURATION_UNITS: Final[dict[str, float]] = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
}  # fmt: skip

#: ``spec.mode``: an Active policy serves its schedulerName (decides and binds); a
#: Shadow policy decides the same pods alongside it and never binds.
ACTIVE: Final = "Active"
SHADOW: Final = "Shadow"
#: ``spec.shadow`` defaults: every pod, up to this many shadow decisions per second.
DEFAULT_SHADOW_PERCENTAGE: Final = 100
DEFAULT_SHADOW_DECISIONS_PER_SECOND: Final = 20

#: kube-scheduler's DefaultExtenderTimeout, used when an extender sets none (or 0).
DEFAULT_EXTENDER_TIMEOUT_SECONDS: Final = 5.0

# The pydantic error type our own validators raise; its ctx carries the message and the
# path below the validated object that the message is about.
_POLICY_ERROR: Final = "policy"

#: Accepted-condition reasons of a policy that cannot be accepted (``PolicyError.reason``).
INVALID: Final = "Invalid"
PLUGIN_NOT_FOUND: Final = "PluginNotFound"
INVALID_ARGS: Final = "InvalidArgs"

#: True while a legacy Policy is checked (``legacy.py``): the legacy scheduler knew no
#: plugins, so a plugin's name is an unknown name there.
_LEGACY_NAMES: ContextVar[bool] = ContextVar("legacy_names", default=False)


@contextlib.contextmanager
def legacy_names() -> Iterator[None]:
    """Check names as the legacy scheduler did: built-in names only, no plugins."""
    token = _LEGACY_NAMES.set(True)
    try:
        yield
    finally:
        _LEGACY_NAMES.reset(token)


#: Set while ``convert`` reads a legacy Policy: an extender's urlPrefix that is no usable
#: URL is kept as written (and warned about) instead of refused; everything that would
#: call it (``validate``, ``simulate``, the operator) still refuses it.
_KEEP_URL_PREFIX: ContextVar[bool] = ContextVar("keep_url_prefix", default=False)


@contextlib.contextmanager
def keeping_url_prefixes() -> Iterator[None]:
    """Read extenders' urlPrefix as written: converting loses nothing."""
    token = _KEEP_URL_PREFIX.set(True)
    try:
        yield
    finally:
        _KEEP_URL_PREFIX.reset(token)


def _plugin_name(name: str) -> bool:
    return not _LEGACY_NAMES.get() and names.is_plugin_name(name)


def _not_a_plugin() -> str:
    if _LEGACY_NAMES.get():
        return ""
    return "; nor is it a plugin's name (`policy-scheduler plugins` lists those installed)"


def _fail(message: str, *subpath: str | int, reason: str = INVALID) -> PydanticCustomError:
    return PydanticCustomError(
        _POLICY_ERROR, "{message}", {"message": message, "subpath": subpath, "reason": reason}
    )


def show(value: Any) -> str:
    """A user's value as it would look in their YAML/JSON (``true``, ``"abc"``), shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    # Compared case-insensitively: enableHttps (the legacy spelling) means enableHTTPS.
    folded = {choice.casefold(): choice for choice in sorted(choices, reverse=True)}
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.75)
    return f" (did you mean {folded[close[0]]}?)" if close else ""


#: Where cloud metadata services answer (credentials, user data): never an extender's
#: address unless a policy says so (``allowMetadataAddresses``). Link-local networks
#: (169.254.0.0/16, fe80::/10, where AWS, GCP, Azure, OpenStack... serve it), AWS's
#: IPv6 address, Alibaba Cloud's, and the names that resolve to them.
METADATA_NETWORKS: Final = (
    ipaddress.ip_network("169.254.0.0/16"),
    ipaddress.ip_network("fe80::/10"),
    ipaddress.ip_network("fd00:ec2::254/128"),
    ipaddress.ip_network("100.100.100.200/32"),
)
METADATA_HOSTS: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
ALLOW_METADATA_FIELD: Final = "allowMetadataAddresses"


def metadata_address(address: str) -> bool:
    """Whether an IP address (any spelling the resolver accepts) is a metadata one."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        try:
            # The C resolver also reads "2852039166", "0xa9fea9fe" or "169.254.43518".
            ip = ipaddress.IPv4Address(socket.inet_aton(address))
        except (OSError, ValueError):
            return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in METADATA_NETWORKS)


def url_prefix_problem(url: str, *, allow_metadata: bool = False) -> str | None:
    """Why ``url`` cannot be an extender's urlPrefix (None if it can).

    An ``http://`` or ``https://`` URL naming a host (upstream posted to any string it
    was given; ``file://`` or a bare path only failed at the first call), and not a
    link-local or cloud metadata address (a name or an IP literal; names resolving to
    one are refused when the client connects) unless ``allow_metadata``.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"must be an http:// or https:// URL with a host, got {show(url)}: {exc}"
    del port
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL with a host, got {show(url)}"
    host = parts.hostname.rstrip(".")
    if not allow_metadata and (host in METADATA_HOSTS or metadata_address(host)):
        return (
            f"{show(url)} is a link-local or cloud metadata address, refused unless the "
            f"extender sets {ALLOW_METADATA_FIELD}: true"
        )
    return None


def extended_resource_name_problem(name: str) -> str | None:
    """Why ``name`` is not an extended resource name (None if it is one).

    Mirrors the legacy ValidatePolicy: a qualified name (``domain/name``) whose domain is
    not ``kubernetes.io`` (those are native resources) and that stays a qualified name
    behind the ``requests.`` prefix quota uses.
    """
    if "/" not in name:
        return "must be an extended resource name with a domain prefix, like example.com/gpu"
    prefix, _, short = name.partition("/")
    if "/" in short or not prefix or not short:
        return "must be one domain prefix, a slash and a name, like example.com/gpu"
    if "kubernetes.io/" in name:
        return "must not use the kubernetes.io domain, which is reserved for native resources"
    if name.startswith("requests."):
        return 'must not start with "requests."'
    if len(short) > 63 or not _QUALIFIED_NAME_RE.match(short):
        return (
            "must have a name part of at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if len("requests." + prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix):
        return "must have a lowercase DNS subdomain as its prefix, like example.com"
    return None


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string (``"30s"``, ``"1m30s"``, ``"250ms"``); no sign."""
    if text == "0":
        return 0.0
    if not _GO_DURATION_RE.match(text):
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(
        float(number) * _GO_DURATION_UNITS[unit]
        for number, unit in _GO_DURATION_PART_RE.findall(text)
    )


def _http_timeout(value: Any) -> int | str | None:
    # A plain validator: the legacy JSON had integer nanoseconds (time.Duration), newer
    # configs a duration string; a union type would report one error per member.
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise _fail(f"must not be negative, got {value}")
        return value
    if isinstance(value, str):
        try:
            parse_go_duration(value)
        except ValueError:
            raise _fail(
                f'must be a Go duration like "30s" or integer nanoseconds, got {show(value)}'
            ) from None
        return value
    raise _fail(f'must be a Go duration like "30s" or integer nanoseconds, got {show(value)}')


HttpTimeout = Annotated[
    int | str | None,
    PlainValidator(_http_timeout, json_schema_input_type=int | str | None),
]
NonEmptyStr = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


# -- predicates ---------------------------------------------------------------------


class LabelsPresenceArgument(_Model):
    """A custom predicate over node labels (legacy CheckNodeLabelPresence)."""

    labels: list[NonEmptyStr] = Field(
        min_length=1, description="Node label keys to look for (values do not matter)."
    )
    presence: bool = Field(
        description="true: a node must have every label; false: a node must have none of them."
    )


class ServiceAffinityArgument(_Model):
    """A custom predicate keeping a service's pods on nodes with equal label values."""

    labels: list[NonEmptyStr] = Field(
        description=(
            "Node label keys whose values must equal those of the nodes already running "
            "pods of the same service (legacy CheckServiceAffinity)."
        )
    )


class PredicateArgument(_Model):
    """What a custom predicate checks: exactly one of the kinds below."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    labelsPresence: LabelsPresenceArgument | None = Field(
        default=None, description="Require nodes to have (or not to have) labels."
    )
    serviceAffinity: ServiceAffinityArgument | None = Field(
        default=None, description="Keep the pods of one service on nodes with equal labels."
    )

    @property
    def kind(self) -> str:
        """The argument kind that is set: a key of ``names.PREDICATE_ARGUMENT_KINDS``."""
        return _argument_kind(self)

    @model_validator(mode="after")
    def _exactly_one(self) -> PredicateArgument:
        _check_exactly_one(self)
        return self


class PredicateEntry(_Model):
    """One predicate (filter) a node must pass."""

    name: NonEmptyStr = Field(
        description=(
            "A built-in predicate name (legacy kube-scheduler), or any name for a custom "
            "predicate, which then needs an argument."
        )
    )
    order: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Evaluation order, ascending; unique within the policy. Entries without order "
            "run after all ordered ones, in list order."
        ),
    )
    argument: PredicateArgument | None = Field(
        default=None,
        description="Makes this a custom predicate (labelsPresence or serviceAffinity).",
    )

    @model_validator(mode="after")
    def _known_name(self) -> PredicateEntry:
        canonical = names.canonical_predicate(self.name)
        if self.argument is None:
            if self.name not in names.BUILTIN_PREDICATES:
                if _plugin_name(self.name):
                    return self  # a Filter plugin: the compiler checks it is one
                hint = names.SEED_PREDICATE_HINTS.get(self.name)
                raise _fail(
                    f"unknown predicate {show(self.name)}"
                    + (
                        f" ({hint})"
                        if hint
                        else did_you_mean(self.name, _suggested_predicates())
                        + "; a custom predicate needs an argument (labelsPresence or "
                        "serviceAffinity)" + _not_a_plugin()
                    ),
                    "name",
                    reason=PLUGIN_NOT_FOUND,
                )
            return self
        _check_custom_name(self.name)
        kind = self.argument.kind
        if canonical in names.PREDICATES_WITH_ARGUMENT:
            if names.PREDICATE_ARGUMENT_KINDS[kind] != canonical:
                expected = _predicate_kind_for(canonical)
                raise _fail(f"{self.name} takes a {expected} argument, got {kind}", "argument")
        elif self.name in names.BUILTIN_PREDICATES:
            raise _fail(
                f"the built-in predicate {self.name} takes no argument; give a custom "
                "predicate a name of its own",
                "argument",
            )
        return self


#: Suggested for a misspelt name: the built-ins and kube-scheduler's own alias, not the
#: seeds' names; and, outside a legacy Policy, the plugins' names.
_SUGGESTED_PREDICATES: Final = names.BUILTIN_PREDICATES - names.SEED_PREDICATE_ALIASES.keys()
_SUGGESTED_PRIORITIES: Final = names.BUILTIN_PRIORITIES


def _suggested_predicates() -> Iterable[str]:
    if _LEGACY_NAMES.get():
        return _SUGGESTED_PREDICATES
    return _SUGGESTED_PREDICATES | names.INTREE_PLUGIN_NAMES | names.installed_plugin_names()


def _suggested_priorities() -> Iterable[str]:
    if _LEGACY_NAMES.get():
        return _SUGGESTED_PRIORITIES
    return _SUGGESTED_PRIORITIES | names.INTREE_PLUGIN_NAMES | names.installed_plugin_names()


def _check_custom_name(name: str) -> None:
    """Upstream's algorithm name rule, on the name of an argument-carrying entry."""
    if not names.NAME_RULE.match(name):
        raise _fail(
            f"{show(name)} is not a valid custom name: letters, digits and '-', starting "
            f"and ending with a letter or digit ({names.NAME_RULE.pattern}, which "
            "kube-scheduler v1.13-v1.16 enforced)",
            "name",
        )


def _predicate_kind_for(builtin: str) -> str:
    return next(k for k, v in names.PREDICATE_ARGUMENT_KINDS.items() if v == builtin)


# -- priorities ---------------------------------------------------------------------


class LabelPreferenceArgument(_Model):
    """A custom priority favouring nodes with (or without) a label."""

    label: NonEmptyStr = Field(description="The node label key.")
    presence: bool = Field(
        description="true: nodes with the label score 10, others 0; false: the reverse."
    )


class ServiceAntiAffinityArgument(_Model):
    """A custom priority spreading a service's pods over the values of a node label."""

    label: NonEmptyStr = Field(
        description="The node label key whose values the service's pods spread over (e.g. rack)."
    )


class UtilizationShapePoint(_Model):
    """One point of the piecewise-linear utilization -> score function."""

    utilization: int = Field(ge=0, le=100, description="Requested/capacity ratio in percent.")
    score: int = Field(ge=0, le=names.MAX_PRIORITY, description="Score at that utilization.")


class ResourceSpec(_Model):
    """A resource the requested-to-capacity ratio counts, and its weight."""

    name: NonEmptyStr = Field(description="Resource name, e.g. cpu, memory, example.com/gpu.")
    weight: int = Field(default=1, ge=1, description="Weight of this resource; default 1.")


class RequestedToCapacityRatioArguments(_Model):
    """Scores nodes by requested/capacity ratio through a user-defined shape."""

    shape: list[UtilizationShapePoint] = Field(
        min_length=1,
        description="Points of the score function; utilization strictly increasing.",
    )
    resources: list[ResourceSpec] | None = Field(
        default=None, description="Resources counted, with weights; absent: cpu and memory, 1 each."
    )

    @field_validator("shape")
    @classmethod
    def _increasing(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        for i in range(1, len(shape)):
            previous, current = shape[i - 1].utilization, shape[i].utilization
            if current <= previous:
                raise _fail(
                    f"must be greater than the previous point's utilization ({previous}), "
                    f"got {current}",
                    i,
                    "utilization",
                )
        return shape


class PriorityArgument(_Model):
    """What a custom priority scores: exactly one of the kinds below."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    labelPreference: LabelPreferenceArgument | None = Field(
        default=None, description="Prefer nodes with (or without) a label."
    )
    serviceAntiAffinity: ServiceAntiAffinityArgument | None = Field(
        default=None, description="Spread a service's pods over the values of a node label."
    )
    requestedToCapacityRatioArguments: RequestedToCapacityRatioArguments | None = Field(
        default=None, description="Score by requested/capacity ratio through a shape."
    )

    @property
    def kind(self) -> str:
        """The argument kind that is set: one of ``names.PRIORITY_ARGUMENT_KINDS``."""
        return _argument_kind(self)

    @model_validator(mode="after")
    def _exactly_one(self) -> PriorityArgument:
        _check_exactly_one(self)
        return self


class PriorityEntry(_Model):
    """One priority (score function) and its weight."""

    name: NonEmptyStr = Field(
        description=(
            "A built-in priority name (legacy kube-scheduler), or any name for a custom "
            "priority, which then needs an argument."
        )
    )
    weight: int = Field(
        ge=1,
        le=names.MAX_WEIGHT - 1,
        description="Positive integer; a node's total is the sum of weight x score (0..10).",
    )
    argument: PriorityArgument | None = Field(
        default=None,
        description=(
            "Makes this a custom priority (labelPreference, serviceAntiAffinity or "
            "requestedToCapacityRatioArguments)."
        ),
    )

    @model_validator(mode="after")
    def _known_name(self) -> PriorityEntry:
        canonical = names.canonical_priority(self.name)
        if self.argument is None:
            if canonical not in names.BUILTIN_PRIORITIES:
                if _plugin_name(self.name):
                    return self  # a Score plugin: the compiler checks it is one
                kind = names.SEED_ARGUMENT_NAMES.get(self.name)
                if kind is not None:
                    raise _fail(
                        f"{self.name} is the seeds' name of the {kind} custom priority: "
                        f"it needs a {kind} argument",
                        "argument",
                    )
                raise _fail(
                    f"unknown priority {show(self.name)}"
                    f"{did_you_mean(self.name, _suggested_priorities())}; a custom priority "
                    "needs an argument (labelPreference, serviceAntiAffinity or "
                    "requestedToCapacityRatioArguments)" + _not_a_plugin(),
                    "name",
                    reason=PLUGIN_NOT_FOUND,
                )
            return self
        _check_custom_name(self.name)
        if canonical in names.BUILTIN_PRIORITIES:
            rtc = "requestedToCapacityRatioArguments"
            if canonical != names.REQUESTED_TO_CAPACITY_RATIO:
                raise _fail(
                    f"the built-in priority {self.name} takes no argument; give a custom "
                    "priority a name of its own",
                    "argument",
                )
            if self.argument.kind != rtc:
                raise _fail(
                    f"{self.name} takes a {rtc} argument, got {self.argument.kind}", "argument"
                )
        return self


# -- extenders ----------------------------------------------------------------------


class ExtenderTLSConfig(_Model):
    """TLS settings for an extender (the legacy ExtenderTLSConfig)."""

    insecure: bool = Field(default=False, description="Skip verifying the server certificate.")
    serverName: str = Field(default="", description="Server name for SNI and verification.")
    certFile: str = Field(default="", description="Path of the client certificate file.")
    keyFile: str = Field(default="", description="Path of the client key file.")
    caFile: str = Field(default="", description="Path of the CA bundle file.")
    certData: str = Field(
        default="", description="Client certificate PEM, base64 (as in Go []byte JSON)."
    )
    keyData: str = Field(default="", description="Client key PEM, base64 (as in Go []byte JSON).")
    caData: str = Field(default="", description="CA bundle PEM, base64 (as in Go []byte JSON).")

    @field_validator("certData", "keyData", "caData")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise _fail(f"must be base64-encoded PEM, got {show(value)}") from None
        return value

    @model_validator(mode="after")
    def _verified_or_not(self) -> ExtenderTLSConfig:
        # client-go's TLSConfigFor refused it, so kube-scheduler did not start.
        if self.insecure and (self.caFile or self.caData):
            raise _fail("must not be true when caFile or caData is set", "insecure")
        return self


class ExtenderManagedResource(_Model):
    """An extended resource an extender manages."""

    name: str = Field(description="An extended resource name, like example.com/gpu.")
    ignoredByScheduler: bool = Field(
        default=False,
        description="true: PodFitsResources does not check this resource; the extender does.",
    )

    @field_validator("name")
    @classmethod
    def _extended(cls, value: str) -> str:
        problem = extended_resource_name_problem(value)
        if problem is not None:
            raise _fail(f"{problem}, got {show(value)}")
        return value


class Extender(_Model):
    """A legacy HTTP scheduler extender (the legacy ExtenderConfig, same fields)."""

    urlPrefix: NonEmptyStr = Field(
        description="URL prefix of the extender, e.g. http://ext:8888/scheduler."
    )
    filterVerb: str = Field(default="", description="Verb of the filter call; empty: no filtering.")
    preemptVerb: str = Field(default="", description="Verb of the preempt call; empty: none.")
    prioritizeVerb: str = Field(default="", description="Verb of the prioritize call; empty: none.")
    bindVerb: str = Field(
        default="", description="Verb of the bind call; at most one extender may bind."
    )
    weight: int = Field(
        default=0,
        description="Multiplier of the extender's scores; positive if prioritizeVerb is set.",
    )
    enableHTTPS: bool = Field(default=False, description="Use HTTPS to reach the extender.")
    # The legacy Policy's JSON tag was enableHttps: a file copied from it keeps working.
    # A field of its own (not an alias) so that the CRD schema lists it and the API
    # server keeps it instead of pruning it.
    enableHttps: bool | None = Field(
        default=None, description="The legacy Policy's spelling of enableHTTPS; same meaning."
    )
    tlsConfig: ExtenderTLSConfig | None = Field(default=None, description="TLS settings.")
    httpTimeout: HttpTimeout = Field(
        default=None,
        description=(
            'Timeout of each call: a Go duration ("30s") or integer nanoseconds as in the '
            "legacy JSON; absent or 0: 5s."
        ),
    )
    nodeCacheCapable: bool = Field(
        default=False, description="The extender caches nodes: send node names only."
    )
    managedResources: list[ExtenderManagedResource] = Field(
        default=[], description="Extended resources this extender manages."
    )
    ignorable: bool = Field(
        default=False, description="Scheduling goes on when this extender fails or is unreachable."
    )
    allowMetadataAddresses: bool = Field(
        default=False,
        description=(
            "Allow a urlPrefix at a link-local or cloud metadata address (169.254.0.0/16, "
            "fe80::/10, fd00:ec2::254, metadata.google.internal...); refused by default."
        ),
    )

    @model_validator(mode="after")
    def _reachable(self) -> Extender:
        problem = url_prefix_problem(self.urlPrefix, allow_metadata=self.allowMetadataAddresses)
        if problem is not None and not _KEEP_URL_PREFIX.get():
            raise _fail(problem, "urlPrefix")
        return self

    @property
    def http_timeout_seconds(self) -> float:
        """The call timeout in seconds (kube-scheduler's 5 s when absent or zero)."""
        if self.httpTimeout is None:
            seconds = 0.0
        elif isinstance(self.httpTimeout, int):
            seconds = self.httpTimeout / 1e9
        else:
            seconds = parse_go_duration(self.httpTimeout)
        return seconds or DEFAULT_EXTENDER_TIMEOUT_SECONDS

    @property
    def https(self) -> bool:
        """enableHTTPS, whichever of its two spellings was written."""
        return self.enableHTTPS or bool(self.enableHttps)

    @model_validator(mode="after")
    def _one_https_spelling(self) -> Extender:
        if (
            self.enableHttps is not None
            and "enableHTTPS" in self.model_fields_set
            and self.enableHttps != self.enableHTTPS
        ):
            raise _fail(
                f"contradicts enableHTTPS: {show(self.enableHTTPS)} (two spellings of one "
                f"setting), got {show(self.enableHttps)}",
                "enableHttps",
            )
        return self

    @model_validator(mode="after")
    def _weighted(self) -> Extender:
        if self.prioritizeVerb and self.weight <= 0:
            raise _fail(
                f"must be a positive integer when prioritizeVerb is set, got {self.weight}",
                "weight",
            )
        return self


# -- the policy ---------------------------------------------------------------------


class ShadowSettings(_Model):
    """How much of the active policy's traffic a Shadow policy decides, and at what cost."""

    percentageOfPods: int = Field(
        default=DEFAULT_SHADOW_PERCENTAGE,
        ge=1,
        le=100,
        description=(
            "Share of the active policy's pods this policy also decides (1..100), chosen "
            "by pod uid so a pod is always or never compared."
        ),
    )
    maxDecisionsPerSecond: int = Field(
        default=DEFAULT_SHADOW_DECISIONS_PER_SECOND,
        ge=1,
        description=(
            "Budget: at most this many shadow decisions per second (bursts of one "
            "second's worth); pods beyond it are not compared."
        ),
    )


# -- scheduling framework plugins ------------------------------------------------------


class PluginRef(_Model):
    """A plugin named at an extension point (kube-scheduler's ``Plugin``)."""

    name: NonEmptyStr = Field(
        description=(
            "A built-in plugin name or one an installed package registers under the "
            'policy_scheduler.plugins entry point; "*" in disabled: every default.'
        )
    )
    weight: int | None = Field(
        default=None,
        ge=1,
        le=names.MAX_WEIGHT - 1,
        description="multiPoint only: the weight of the plugin's Score (default 1).",
    )


class PluginSet(_Model):
    """The plugins of one extension point: defaults, plus enabled, minus disabled."""

    enabled: list[PluginRef] = Field(
        default=[], description="Plugins run after the point's defaults, in this order."
    )
    disabled: list[PluginRef] = Field(
        default=[], description='Defaults not to run; {name: "*"} disables every default.'
    )


class Plugins(_Model):
    """kube-scheduler's ``Plugins``: a PluginSet per extension point.

    Filter and Score plugins are named in ``spec.predicates`` and ``spec.priorities``
    (with their order and weight), not here; naming a plugin there also runs its
    PreFilter (a predicate), its PreScore (a priority), and its Reserve and PreBind.
    """

    preEnqueue: PluginSet | None = Field(
        default=None, description="Gate a pod before it enters the active queue."
    )
    queueSort: PluginSet | None = Field(
        default=None, description="Order of the queue; exactly one plugin (PrioritySort)."
    )
    preFilter: PluginSet | None = Field(default=None, description="Before filtering, per pod.")
    postFilter: PluginSet | None = Field(
        default=None, description="When no node fits (preemption by default)."
    )
    preScore: PluginSet | None = Field(default=None, description="Before scoring, per pod.")
    reserve: PluginSet | None = Field(
        default=None, description="Reserve/Unreserve the chosen node's resources."
    )
    permit: PluginSet | None = Field(default=None, description="Allow, deny or hold binding.")
    preBind: PluginSet | None = Field(default=None, description="Before binding (volumes).")
    bind: PluginSet | None = Field(
        default=None, description="The binding itself; the first that does not Skip binds."
    )
    postBind: PluginSet | None = Field(default=None, description="After a successful binding.")
    multiPoint: PluginSet | None = Field(
        default=None,
        description=(
            "Enable a plugin at every point it implements (but queueSort); its Filter and "
            "Score run after spec.predicates and spec.priorities."
        ),
    )
    filter: PluginSet | None = Field(
        default=None, description="Refused: Filter plugins are named in spec.predicates."
    )
    score: PluginSet | None = Field(
        default=None, description="Refused: Score plugins are named in spec.priorities."
    )

    @model_validator(mode="after")
    def _not_filter_or_score(self) -> Plugins:
        if self.filter is not None:
            raise _fail(
                "Filter plugins are named in spec.predicates (with their order), not in "
                "spec.plugins",
                "filter",
            )
        if self.score is not None:
            raise _fail(
                "Score plugins are named in spec.priorities (with their weight), not in "
                "spec.plugins",
                "score",
            )
        return self

    def sets(self) -> list[tuple[str, PluginSet]]:
        """The points that have a PluginSet, in field order."""
        return [
            (point, found)
            for point in type(self).model_fields
            if (found := getattr(self, point)) is not None
        ]


class PluginConfigEntry(_Model):
    """Arguments for one plugin (kube-scheduler's ``PluginConfig``)."""

    name: NonEmptyStr = Field(description="The plugin these arguments are for.")
    args: dict[str, Any] = Field(
        default={},
        description="The plugin's arguments, checked against its own schema on admission.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )


class SchedulingPolicySpec(_Model):
    """How pods with this schedulerName are placed."""

    schedulerName: str = Field(
        default=names.DEFAULT_SCHEDULER_NAME,
        min_length=1,
        max_length=253,
        pattern=_DNS_SUBDOMAIN,
        description="Pods whose spec.schedulerName equals this use this policy.",
    )
    predicates: list[PredicateEntry] | None = Field(
        default=None,
        description="Predicates (filters). Absent: the legacy default set; []: no filtering.",
    )
    priorities: list[PriorityEntry] | None = Field(
        default=None,
        description="Priorities (scores). Absent: the legacy default set; []: every node scores 0.",
    )
    hardPodAffinitySymmetricWeight: int = Field(
        default=1,
        ge=0,
        le=100,
        description="Weight of the symmetric score of existing pods' required affinity (0..100).",
    )
    alwaysCheckAllPredicates: bool = Field(
        default=False,
        description="true: evaluate every predicate on a node and report every failure.",
    )
    percentageOfNodesToScore: int = Field(
        default=0,
        ge=0,
        le=100,
        description="Share of feasible nodes to find before scoring; 0: adaptive (kube-scheduler).",
    )
    disablePreemption: bool = Field(
        default=False,
        description="true: pods of this policy that fit nowhere never preempt lower-priority pods.",
    )
    mode: Literal["Active", "Shadow"] = Field(
        default=ACTIVE,
        description=(
            "Active: this policy serves its schedulerName. Shadow: it decides the pods the "
            "active policy of that name decides, on the same snapshot, never binds, and "
            "reports how often the two agree in status.shadow."
        ),
    )
    shadow: ShadowSettings | None = Field(
        default=None,
        description="Sampling and budget of a Shadow policy (ignored while mode is Active).",
    )
    extenders: list[Extender] = Field(default=[], description="Legacy HTTP scheduler extenders.")
    plugins: Plugins | None = Field(
        default=None,
        description=(
            "Scheduling framework plugins per extension point (kube-scheduler's Plugins); "
            "Filter and Score plugins are named in predicates and priorities."
        ),
    )
    pluginConfig: list[PluginConfigEntry] = Field(
        default=[], description="Arguments of plugins, one entry per plugin name."
    )

    def ordered_predicates(self) -> list[PredicateEntry] | None:
        """The predicates in evaluation order (None when the spec leaves them absent).

        Ordered entries first, ascending ``order``; then the others, in list order.
        """
        if self.predicates is None:
            return None
        ordered = sorted(
            (entry for entry in self.predicates if entry.order is not None),
            key=lambda entry: entry.order or 0,
        )
        return ordered + [entry for entry in self.predicates if entry.order is None]


class SchedulingPolicy(_Model):
    """A named policy: ``metadata.name`` and its validated ``spec``."""

    name: str = Field(description="metadata.name of the SchedulingPolicy.")
    spec: SchedulingPolicySpec = Field(description="The policy.")

    def ordered_predicates(self) -> list[PredicateEntry] | None:
        """See ``SchedulingPolicySpec.ordered_predicates``."""
        return self.spec.ordered_predicates()


def _argument_kind(argument: BaseModel) -> str:
    return next(key for key in type(argument).model_fields if getattr(argument, key) is not None)


def _check_exactly_one(argument: BaseModel) -> None:
    kinds = list(type(argument).model_fields)
    chosen = [key for key in kinds if getattr(argument, key) is not None]
    if len(chosen) != 1:
        got = "none" if not chosen else " and ".join(chosen)
        raise _fail(f"must set exactly one of {', '.join(kinds)}, got {got}")


# -- errors -------------------------------------------------------------------------


def format_path(path: Path) -> str:
    """``("spec", "priorities", 2, "weight")`` -> ``"spec.priorities[2].weight"``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        if not (isinstance(part, str) and part.isprintable() and len(part) <= 60):
            # A key from the user's file ("a\nb", 5 KB of text): quoted, one line, short.
            part = show(part)
        text += f".{part}" if text else part
    return text


@dataclass(frozen=True)
class Issue:
    """One thing wrong with a spec: where (``path``), what (``message``).

    ``refs`` are other places the message is about (the first entry with the same name or
    order); they are rendered after the message so that another renderer (legacy paths)
    can translate them too.
    """

    path: Path
    message: str
    refs: tuple[Path, ...] = ()
    #: The Accepted condition's reason this problem gives (``INVALID`` unless more precise).
    reason: str = INVALID

    def render(self, render_path: Callable[[Path], str] = format_path) -> str:
        where = render_path(self.path)
        what = self.message
        if self.refs:
            what += " " + " and ".join(render_path(ref) for ref in self.refs)
        return f"{where}: {what}" if where else what


class PolicyError(ValueError):
    """A policy (or legacy Policy) that cannot be accepted; ``errors`` has one line each.

    ``reason`` is what the operator's Accepted=False condition says (``Invalid``,
    ``PluginNotFound``, ``InvalidArgs``, ...): the first problem's.
    """

    def __init__(self, errors: Sequence[str], *, reason: str = INVALID) -> None:
        self.errors = list(errors)
        self.reason = reason
        super().__init__("\n".join(self.errors))

    def __str__(self) -> str:
        return "\n".join(self.errors)


def _issue_from_pydantic(error: ErrorDetails, prefix: Path) -> Issue:
    loc: Path = tuple(error["loc"])
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    value = error["input"]
    got = f"got {show(value)}"
    if kind == _POLICY_ERROR:
        return Issue(
            prefix + loc + tuple(ctx["subpath"]),
            str(ctx["message"]),
            reason=str(ctx.get("reason", INVALID)),
        )
    if kind in ("too_short", "string_too_short"):
        message = "must not be empty"
    elif kind == "string_too_long":
        message = f"must be at most {ctx['max_length']} characters long, {got}"
    elif kind == "string_pattern_mismatch" and ctx.get("pattern") == _DNS_SUBDOMAIN:
        message = f"must be a lowercase RFC 1123 subdomain (like policy-scheduler), {got}"
    elif kind == "literal_error":
        message = f"must be {str(ctx['expected']).replace(chr(39), '')}, {got}"
    elif kind == "greater_than_equal" and ctx.get("ge") == 1:
        message = f"must be a positive integer, {got}"
    elif kind == "greater_than_equal":
        message = f"must be at least {ctx['ge']}, {got}"
    elif kind == "less_than_equal":
        message = f"must be at most {ctx['le']}, {got}"
    else:
        message = pydantic_message(error)
    return Issue(prefix + loc, message)


def pydantic_message(error: ErrorDetails, model: type[BaseModel] | None = None) -> str:
    """A pydantic error of a strict model (a spec's by default) in our words: what Go's
    decoder refuses the same way (a missing or unknown field, a wrong type), else
    pydantic's own words in our form. The policy's and the plugin arguments' errors
    say these alike; each adds the wording of its own constraints first."""
    loc: Path = tuple(error["loc"])
    kind = error["type"]
    got = f"got {show(error['input'])}"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "unknown field" + did_you_mean(str(loc[-1]), fields_at(loc[:-1], model))
    if kind == "int_type":
        return f"must be an integer, {got}"
    if kind == "string_type":
        return f"must be a string, {got}"
    if kind == "bool_type":
        return f"must be true or false, {got}"
    if kind == "list_type":
        return f"must be a list, {got}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be an object, {got}"
    text = error["msg"]
    return f"{text[:1].lower()}{text[1:]}, {got}"


def fields_at(loc: Path, model: type[BaseModel] | None = None) -> list[str]:
    """Field names of the model at ``loc`` below ``model`` (a spec's by default), for
    "did you mean" on unknown fields."""
    if model is None:
        model = SchedulingPolicySpec
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        inner = _model_in(field.annotation) if field is not None else None
        if inner is None:
            return []
        model = inner
    return list(model.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _entries(raw: Any) -> list[tuple[int, dict[str, Any]]]:
    """The object items of a list, with their index; anything else pass 1 reports."""
    if not isinstance(raw, list):
        return []
    return [(index, item) for index, item in enumerate(raw) if isinstance(item, dict)]


def _string(entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    return value if isinstance(value, str) and value else None


def _cross_entry_issues(data: Mapping[str, Any]) -> list[Issue]:
    """Rules across entries, read leniently from the raw spec: an entry with a bad field
    elsewhere still takes part (a wrong-typed value just does not)."""
    issues: list[Issue] = []
    spec: Path = ("spec",)

    seen: dict[str, int] = {}
    orders: dict[int, int] = {}
    for index, entry in _entries(data.get("predicates")):
        here: Path = (*spec, "predicates", index)
        name = _string(entry, "name")
        if name is not None:
            canonical = names.canonical_predicate(name)
            if canonical in seen:
                shown = show(name) + (f" ({canonical})" if canonical != name else "")
                ref: Path = (*spec, "predicates", seen[canonical])
                issues.append(Issue((*here, "name"), f"{shown} is already listed at", (ref,)))
            else:
                seen[canonical] = index
        order = entry.get("order")
        if type(order) is int:
            if order in orders:
                ref = (*spec, "predicates", orders[order])
                issues.append(Issue((*here, "order"), f"{order} is also the order of", (ref,)))
            else:
                orders[order] = index

    seen = {}
    for index, entry in _entries(data.get("priorities")):
        name = _string(entry, "name")
        if name is None:
            continue
        canonical = names.canonical_priority(name)
        if canonical in seen:
            ref = (*spec, "priorities", seen[canonical])
            issues.append(
                Issue(
                    (*spec, "priorities", index, "name"),
                    f"{show(name)} is already listed at",
                    (ref,),
                )
            )
        else:
            seen[canonical] = index

    binders: list[Path] = []
    managers: dict[str, Path] = {}
    for index, entry in _entries(data.get("extenders")):
        here = (*spec, "extenders", index)
        if _string(entry, "bindVerb") is not None:
            binders.append(here)
        for position, resource in _entries(entry.get("managedResources")):
            resource_name = _string(resource, "name")
            if resource_name is None:
                continue
            where: Path = (*here, "managedResources", position, "name")
            if resource_name in managers:
                issues.append(
                    Issue(
                        where,
                        f"{show(resource_name)} is already managed at",
                        (managers[resource_name],),
                    )
                )
            else:
                managers[resource_name] = where
    if len(binders) > 1:
        issues.append(
            Issue(
                (*spec, "extenders"),
                f"only one extender can implement bind, found {len(binders)}:",
                tuple(binders),
            )
        )
    return issues


def _plain(value: Any) -> Any:
    # Kopf bodies are Mappings, not dicts, and strict mode takes dicts and lists only.
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _sort_key(issue: Issue) -> tuple[tuple[int, int, str], ...]:
    # Top-level fields in the order the spec declares them, then paths as they read.
    fields = list(SchedulingPolicySpec.model_fields)
    return tuple(
        (1, part, "")
        if isinstance(part, int)
        else (0, fields.index(part) if depth == 1 and part in fields else len(fields), part)
        for depth, part in enumerate(issue.path)
    )


def check_spec(data: Any) -> tuple[SchedulingPolicySpec | None, list[Issue]]:
    """Validate a spec (as the API serves it): the model, or every issue found (paths from
    ``spec``). Exactly one of the two is set (the list is empty on success)."""
    data = _plain(data)
    if not isinstance(data, dict):
        return None, [Issue(("spec",), f"must be an object, got {show(data)}")]
    issues: list[Issue] = []
    spec: SchedulingPolicySpec | None = None
    try:
        spec = SchedulingPolicySpec.model_validate(data)
    except ValidationError as exc:
        issues = [_issue_from_pydantic(error, ("spec",)) for error in exc.errors()]
    issues += _cross_entry_issues(data)
    if issues:
        # Sorted by path so that an entry's problems read together.
        return None, sorted(issues, key=_sort_key)
    return spec, []


def seed_name_notes(spec: SchedulingPolicySpec) -> list[Issue]:
    """Entries named in the seeds' dialect (accepted aliases kube-scheduler never knew)."""
    named: list[tuple[Path, str, str | None]] = []
    for index, predicate in enumerate(spec.predicates or ()):
        if predicate.argument is None:
            successor = names.SEED_PREDICATE_ALIASES.get(predicate.name)
            named.append((("spec", "predicates", index, "name"), predicate.name, successor))
    for index, priority in enumerate(spec.priorities or ()):
        if priority.argument is None:
            successor = names.SEED_PRIORITY_ALIASES.get(priority.name)
            named.append((("spec", "priorities", index, "name"), priority.name, successor))
    return [
        Issue(
            path,
            f"{name} is the seeds' name of {successor}, accepted as it "
            f"(kube-scheduler registered only {successor})",
        )
        for path, name, successor in named
        if successor is not None
    ]


@dataclass(frozen=True, slots=True)
class Safeguard:
    """What a policy without ``provided_by`` (any of them) stops checking."""

    name: str
    provided_by: frozenset[str]
    unchecked: str


#: The predicates that keep a placement correct (the kubelet, the volume controllers and
#: the pods' own constraints rely on them), each with what goes unchecked without it.
#: GeneralPredicates is three of them at once; its parts, listed one by one, count too.
SAFEGUARDS: Final[tuple[Safeguard, ...]] = (
    Safeguard(
        f"{names.POD_FITS_RESOURCES} (part of {names.GENERAL_PREDICATES})",
        frozenset({names.GENERAL_PREDICATES, names.POD_FITS_RESOURCES, "NodeResourcesFit"}),
        "requests are not checked against what nodes have left: the kubelet refuses "
        "such pods (OutOfcpu, OutOfmemory)",
    ),
    Safeguard(
        f"{names.POD_FITS_HOST_PORTS} (part of {names.GENERAL_PREDICATES})",
        frozenset({names.GENERAL_PREDICATES, names.POD_FITS_HOST_PORTS, "NodePorts"}),
        "two pods may get the same hostPort on one node",
    ),
    Safeguard(
        f"{names.MATCH_NODE_SELECTOR} (part of {names.GENERAL_PREDICATES})",
        frozenset({names.GENERAL_PREDICATES, names.MATCH_NODE_SELECTOR, "NodeAffinity"}),
        "nodeSelector and required node affinity are ignored",
    ),
    Safeguard(
        names.POD_TOLERATES_NODE_TAINTS,
        frozenset({names.POD_TOLERATES_NODE_TAINTS, "TaintToleration"}),
        "NoSchedule taints are ignored: pods land on dedicated, not-ready or cordoned nodes",
    ),
    Safeguard(
        names.MATCH_INTER_POD_AFFINITY,
        frozenset({names.MATCH_INTER_POD_AFFINITY, "InterPodAffinity"}),
        "required pod affinity and anti-affinity are ignored",
    ),
    Safeguard(
        names.EVEN_PODS_SPREAD,
        frozenset({names.EVEN_PODS_SPREAD, "PodTopologySpread"}),
        "topologySpreadConstraints with whenUnsatisfiable: DoNotSchedule are ignored",
    ),
    Safeguard(
        names.CHECK_VOLUME_BINDING,
        frozenset({names.CHECK_VOLUME_BINDING, "VolumeBinding"}),
        "PersistentVolumeClaims are not matched to volumes on the node: pods with "
        "WaitForFirstConsumer claims never start, and local volumes are ignored",
    ),
    Safeguard(
        names.NO_VOLUME_ZONE_CONFLICT,
        frozenset({names.NO_VOLUME_ZONE_CONFLICT, "VolumeZone"}),
        "a pod may land in another zone than its volume's, which it cannot attach there",
    ),
)


def missing_safeguards(spec: SchedulingPolicySpec) -> list[Safeguard]:
    """The :data:`SAFEGUARDS` a spec's predicates leave out (none with the default set);
    kube-scheduler v1.30's in-tree Filter plugin doing the same check counts.

    Leaving one out is allowed (a policy is the user's to write), never silent: ``validate``
    warns, and the operator's Accepted condition says so.
    """
    if spec.predicates is None:
        return []
    listed = {
        names.SEED_PREDICATE_ALIASES.get(entry.name, entry.name)
        for entry in spec.predicates
        if entry.argument is None
    }
    return [guard for guard in SAFEGUARDS if not guard.provided_by & listed]


def safeguard_notes(spec: SchedulingPolicySpec) -> list[Issue]:
    """One note per safeguard the spec's predicates leave out, at ``spec.predicates``."""
    return [
        Issue(("spec", "predicates"), f"leaves out {guard.name}: {guard.unchecked}")
        for guard in missing_safeguards(spec)
    ]


def object_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a cluster-scoped object (None if it can)."""
    if not isinstance(name, str) or not name:
        return f"must be a non-empty string, got {show(name)}"
    if len(name) > 253 or not _DNS_SUBDOMAIN_RE.match(name):
        return f"must be a lowercase RFC 1123 subdomain (like gpu-policy), got {show(name)}"
    return None


def parse_spec(spec: Any, *, name: str) -> SchedulingPolicy:
    """A policy from its name and ``spec`` (e.g. a Kopf handler's ``name`` and ``spec``)."""
    checked, issues = check_spec(spec)
    if checked is None:
        subject = f"{KIND} {show(name)}"
        raise PolicyError(
            [f"{subject}: {issue.render()}" for issue in issues], reason=issues[0].reason
        )
    return SchedulingPolicy(name=name, spec=checked)


def parse_policy(obj: Mapping[str, Any]) -> SchedulingPolicy:
    """A policy from a whole SchedulingPolicy object; ``status`` is ignored, a missing
    ``spec`` is an empty one (every default)."""
    if not isinstance(obj, Mapping):
        raise PolicyError([f"{KIND}: must be an object, got {show(obj)}"])
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    subject = f"{KIND} {show(name)}" if isinstance(name, str) and name else KIND
    errors: list[str] = []
    kind = obj.get("kind")
    if kind != KIND:
        hint = " (a legacy kube-scheduler Policy: convert it with `policy-scheduler convert`)"
        errors.append(
            f"{subject}: kind: must be {KIND}, got {show(kind)}"
            + (hint if kind == "Policy" else "")
        )
    if obj.get("apiVersion") != API_VERSION:
        errors.append(
            f"{subject}: apiVersion: must be {API_VERSION}, got {show(obj.get('apiVersion'))}"
        )
    if not isinstance(metadata, Mapping):
        errors.append(f"{subject}: metadata.name: is required")
    else:
        problem = object_name_problem(name)
        if problem is not None:
            errors.append(f"{subject}: metadata.name: {problem}")
    if errors:
        raise PolicyError(errors)
    assert isinstance(name, str)  # checked above; tells the type checker
    return parse_spec(obj.get("spec", {}), name=name)


def default_policy() -> SchedulingPolicy:
    """The policy used when none exists: the legacy DefaultProvider (absent lists)."""
    return SchedulingPolicy(name="default", spec=SchedulingPolicySpec())


def policy_to_object(policy: SchedulingPolicy) -> dict[str, Any]:
    """The full API object. Only what was set is written: absent stays absent (so the
    default set stays the default set) and empty stays empty."""
    spec = policy.spec.model_dump(mode="json", exclude_unset=True, exclude_none=True)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": policy.name},
        "spec": spec,
    }


# -- JSON schema --------------------------------------------------------------------

# Keys that pydantic writes and a CRD schema must not (or need not) carry: titles are
# noise, defaults would be written into stored objects by the API server, and
# additionalProperties cannot sit beside properties in a structural schema (the API
# server prunes unknown fields instead).
_DROPPED_SCHEMA_KEYS: Final = frozenset({"title", "default", "additionalProperties"})


def spec_json_schema() -> dict[str, Any]:
    """The OpenAPI v3 schema of ``spec`` for the CRD, derived from ``SchedulingPolicySpec``.

    ``$ref`` inlined, null branches dropped, ``int | str`` as
    ``x-kubernetes-int-or-string`` (with the ``anyOf`` Kubernetes allows beside it). Rules
    across entries (unique names, order clashes, shape ordering) are not expressible
    there; the operator still enforces them.
    """
    raw = SchedulingPolicySpec.model_json_schema(mode="validation")
    defs: dict[str, Any] = raw.pop("$defs", {})
    schema = _openapi(raw, defs)
    assert isinstance(schema, dict)
    return schema


def _openapi(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_openapi(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        # The field's own keys (its description) win over the referenced model's.
        node = {**defs[ref.rsplit("/", 1)[-1]], **node}
    branches = node.pop("anyOf", None)
    if branches is not None:
        kept = [branch for branch in branches if branch.get("type") != "null"]
        types = {branch.get("type") for branch in kept}
        if types == {"integer", "string"}:
            # The one anyOf a structural schema allows, exactly in this form.
            node["x-kubernetes-int-or-string"] = True
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        elif len(kept) == 1:
            node = {**kept[0], **node}
            if "$ref" in kept[0]:
                return _openapi(node, defs)
        else:
            node["anyOf"] = kept
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_SCHEMA_KEYS:
            continue
        if key == "properties":
            out[key] = {name: _openapi(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _openapi(value, defs)
    return out
