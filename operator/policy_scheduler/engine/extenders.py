"""HTTP scheduler extenders as a decision sees them: who is asked, when, and what counts.

kube-scheduler's legacy extenders (``HTTPExtender``, v1.13-v1.17) are remote filters,
scorers and binders reached over HTTP. The HTTP is not here: the engine is pure and
talks to extenders through :class:`ExtenderClient`, a Protocol that ``extending.py``
implements with aiohttp (the operator and ``simulate`` pass one in; tests pass fakes).
This module holds the semantics, as ``genericScheduler`` applied them:

* **Interest** (:meth:`CompiledExtender.is_interested`): an extender without
  ``managedResources`` is asked about every pod; one with some only about pods whose
  containers or init containers request or limit one of them (even at 0).
* **Filter** (:func:`filter_nodes`): after the predicates, and only if some node passed,
  each interested extender with a ``filterVerb``, in policy order, gets the nodes still
  feasible and returns those that pass; the ``failedNodes`` reasons join the nodes'
  failure reasons (so the summary message counts them). Once no node is left, later
  extenders are not asked. An error (no reply in time, a status other than 200, an
  ``error`` in the reply, a reply that does not read) fails the attempt with an
  :class:`ExtenderError` naming the extender, unless it is ``ignorable``: then that
  extender is skipped and the error is only reported. A node the extender returns that
  it was not sent is an error (kube-scheduler v1.18's rule; earlier versions crashed).
* **Prioritize** (:func:`prioritize_nodes`): with two or more feasible nodes, every
  interested extender with a ``prioritizeVerb`` scores them, concurrently; a node's raw
  score is what the reply lists for it (0 when absent, entries for one host added up, as
  upstream summed them), unclamped. The algorithm adds ``weight`` x raw score to the
  totals (weights are applied there, by ``weighted_sum``). Errors are ignored, as
  upstream ignored them: the node is chosen by the others.
* **Bind** (the runtime's binding cycle): the first extender with a ``bindVerb`` binds
  the pods it is interested in, instead of the ``pods/binding`` call.
* **Preempt** (:func:`narrow_victims`): each interested extender with a ``preemptVerb``
  may drop candidate nodes or victims (``processPreemptionWithExtenders``).

Errors are :class:`ExtenderError`, whose text names the extender by its ``urlPrefix``
and says what failed, e.g. ``extender "http://gpu:8888/scheduler" filter failed: HTTP
500``; an ``error`` the extender returned is quoted as it wrote it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..objects import Node, Pod
from .cluster import ClusterState
from .nodeinfo import NodeInfo

FILTER = "filter"
PRIORITIZE = "prioritize"
BIND = "bind"
PREEMPT = "preempt"


@dataclass(frozen=True, slots=True)
class ExtenderTLS:
    """An extender's ``tlsConfig`` (client-go's TLSClientConfig); data fields in base64."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""

    @property
    def has_ca(self) -> bool:
        return bool(self.ca_file or self.ca_data)


@dataclass(frozen=True, slots=True)
class CompiledExtender:
    """One extender of a policy, as the engine and the client use it (hashable)."""

    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    preempt_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: ExtenderTLS | None = None
    #: Seconds each call may take, the whole exchange (Go's http.Client.Timeout).
    timeout: float = 5.0
    node_cache_capable: bool = False
    managed_resources: frozenset[str] = frozenset()
    ignorable: bool = False
    #: The policy allows a link-local or cloud metadata address (its
    #: ``allowMetadataAddresses``); the client refuses to connect to one otherwise.
    allow_metadata_addresses: bool = False

    def is_interested(self, pod: Pod) -> bool:
        """IsInterested: no managed resources, or the pod mentions one of them."""
        managed = self.managed_resources
        return not managed or not managed.isdisjoint(pod.resource_names)


class ExtenderError(Exception):
    """An extender call that failed; the text names the extender (its urlPrefix)."""

    def __init__(self, url_prefix: str, action: str, detail: str) -> None:
        super().__init__(f'extender "{url_prefix}" {action} failed: {detail}')
        self.url_prefix = url_prefix
        self.action = action
        self.detail = detail


@dataclass(frozen=True, slots=True)
class FilterReply:
    """What a filter call returned: the nodes that pass, by name, in the extender's order,
    and the reasons for those it refused (``failedNodes``)."""

    nodes: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    #: Something about the reply that people should know (it was read as upstream read it).
    note: str = ""


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods preemption would evict on one node (most important first), and how many
    of them violate a PodDisruptionBudget (``extenderv1.Victims``)."""

    pods: tuple[Pod, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class MetaVictims:
    """Victims by uid, as an extender returns them (``MetaVictims``)."""

    uids: tuple[str, ...]
    num_pdb_violations: int = 0


class ExtenderClient(Protocol):
    """The engine's door to extenders; each call raises :class:`ExtenderError` on failure.

    Implemented over HTTP by ``extending.HttpExtenderClient``; the wire format (field
    names, case-insensitive replies) is its business.
    """

    async def filter(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> FilterReply:
        """The extender's verdict on ``nodes`` for ``pod``."""
        ...

    async def prioritize(
        self, extender: CompiledExtender, pod: Pod, nodes: Sequence[Node]
    ) -> list[tuple[str, int]]:
        """The extender's (host, score) list for ``nodes``, as it returned it."""
        ...

    async def bind(self, extender: CompiledExtender, pod: Pod, node: str) -> None:
        """Have the extender bind ``pod`` to ``node``."""
        ...

    async def preempt(
        self, extender: CompiledExtender, pod: Pod, candidates: Mapping[str, Victims]
    ) -> dict[str, MetaVictims]:
        """The candidates (node -> victims) the extender keeps, victims by uid."""
        ...


@dataclass(slots=True)
class FilterOutcome:
    """The nodes still feasible after the extenders, and the errors that were ignored."""

    feasible: list[NodeInfo]
    ignored: list[str] = field(default_factory=list)


async def filter_nodes(
    client: ExtenderClient,
    extenders: Sequence[CompiledExtender],
    pod: Pod,
    feasible: list[NodeInfo],
    failed: dict[str, list[str]],
) -> FilterOutcome:
    """Narrow ``feasible`` through the filtering extenders, in order (module docstring).

    Refusal reasons are appended to ``failed`` (node -> reasons). Raises
    :class:`ExtenderError` for a failure of an extender that is not ignorable.
    """
    outcome = FilterOutcome(feasible)
    for extender in extenders:
        if not outcome.feasible:
            break
        if not extender.filter_verb or not extender.is_interested(pod):
            continue
        sent = outcome.feasible
        try:
            reply = await client.filter(extender, pod, [info.node for info in sent])
            passed = _passed(extender, sent, reply)
        except ExtenderError as exc:
            if extender.ignorable:
                outcome.ignored.append(f"{exc} (ignorable: skipped)")
                continue
            raise
        if reply.note:
            outcome.ignored.append(reply.note)
        for name, reason in reply.failed.items():
            failed.setdefault(name, []).append(reason)
        outcome.feasible = passed
    return outcome


def _passed(extender: CompiledExtender, sent: list[NodeInfo], reply: FilterReply) -> list[NodeInfo]:
    by_name = {info.name: info for info in sent}
    passed: list[NodeInfo] = []
    seen: set[str] = set()
    for name in reply.nodes:
        info = by_name.get(name)
        if info is None:
            raise ExtenderError(
                extender.url_prefix,
                FILTER,
                f'it returned node "{name}", which was not in the list it was sent',
            )
        if name not in seen:
            seen.add(name)
            passed.append(info)
    return passed


@dataclass(slots=True)
class ScoreOutcome:
    """Each extender that scored, with its raw scores (one per node, in the nodes'
    order), and the errors that were ignored."""

    columns: list[tuple[CompiledExtender, list[int]]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


async def prioritize_nodes(
    client: ExtenderClient,
    extenders: Sequence[CompiledExtender],
    pod: Pod,
    nodes: Sequence[NodeInfo],
) -> ScoreOutcome:
    """Every interested prioritizing extender's raw scores for ``nodes`` (errors ignored)."""
    asked = [e for e in extenders if e.prioritize_verb and e.is_interested(pod)]
    outcome = ScoreOutcome()
    if not asked:
        return outcome
    sent = [info.node for info in nodes]
    # Concurrently, as upstream ran one goroutine per extender.
    replies = await asyncio.gather(
        *(client.prioritize(extender, pod, sent) for extender in asked), return_exceptions=True
    )
    place = {info.name: i for i, info in enumerate(nodes)}
    for extender, reply in zip(asked, replies, strict=True):
        if isinstance(reply, ExtenderError):
            outcome.ignored.append(f"{reply} (prioritize errors are ignored)")
            continue
        if isinstance(reply, BaseException):
            raise reply
        column = [0] * len(nodes)
        for host, score in reply:
            i = place.get(host)
            if i is not None:  # a host it was not asked about counts for nothing
                column[i] += score
        outcome.columns.append((extender, column))
    return outcome


async def narrow_victims(
    client: ExtenderClient,
    extenders: Sequence[CompiledExtender],
    pod: Pod,
    candidates: Mapping[str, Victims],
    cluster: ClusterState,
) -> tuple[dict[str, Victims], list[str]]:
    """processPreemptionWithExtenders: the candidates the preempting extenders keep.

    Each interested extender with a ``preemptVerb``, in policy order, gets the current
    candidates (node -> victims) and returns the ones it keeps, victims by uid; its
    answer replaces the candidates for the next extender, and once none is left the rest
    are not asked. A uid or node the cluster does not know fails the call. An error of
    an ignorable extender skips it; any other error raises :class:`ExtenderError`
    (upstream gave up the preemption). Returns the kept candidates and the ignored errors.
    """
    current = dict(candidates)
    ignored: list[str] = []
    for extender in extenders:
        if not current:
            break
        if not extender.preempt_verb or not extender.is_interested(pod):
            continue
        try:
            kept = await client.preempt(extender, pod, current)
            current = _victims_of(extender, kept, cluster)
        except ExtenderError as exc:
            if extender.ignorable:
                ignored.append(f"{exc} (ignorable: skipped)")
                continue
            raise
    return current, ignored


def _victims_of(
    extender: CompiledExtender, kept: Mapping[str, MetaVictims], cluster: ClusterState
) -> dict[str, Victims]:
    out: dict[str, Victims] = {}
    for node, meta in kept.items():
        info = cluster.nodes.get(node)
        if info is None:
            raise ExtenderError(
                extender.url_prefix,
                PREEMPT,
                f'it claims to preempt on node "{node}", which is unknown',
            )
        pods: list[Pod] = []
        for uid in meta.uids:
            victim = info.pods.get(uid)
            if victim is None:
                raise ExtenderError(
                    extender.url_prefix,
                    PREEMPT,
                    f'it claims to preempt pod (UID: {uid}) on node "{node}", '
                    "but the pod is not found on that node",
                )
            pods.append(victim)
        out[node] = Victims(tuple(pods), meta.num_pdb_violations)
    return out
