"""Fit hints: for a pod that fits nowhere, the single changes that would make it fit a node.

:func:`fit_hints` reads each refused node's failure reasons and derives, per family of
reasons, the candidate changes they point at, smallest first:

* **requests** — ``Insufficient cpu`` (memory, ephemeral-storage, an extended resource)
  -> the largest request that fits: the node's allocatable minus what its pods request
  and what the pods nominated there that the pod yields to (priority at least its own)
  request, for every resource the node is short of, as one change (``cpu request <=
  1500m``; ``pod-level cpu request <= 1400m`` for a resource the pod's ``spec.resources``
  sets, its overhead left out).
  Byte amounts are rounded down to a whole Mi (still a request that fits) and written the
  Kubernetes way (``1536Mi``, ``2Gi``). The request is the pod's as ``Insufficient``
  compares it: its containers' requests summed (or its largest init container's, if
  larger), plus its overhead. A node with no room left, or ``Insufficient pods``, gets
  none. Once every node is done, each request change is also tried on the nodes whose
  own request change allowed as much or more (a smaller request fits a roomier node),
  so ``cpu request <= 500m`` lists every node it fits, not only the tightest.
* **tolerations** — ``node(s) had taints that the pod didn't tolerate`` (and ``node(s)
  were unschedulable``) -> tolerate exactly the node's untolerated NoExecute taints, else
  all its untolerated NoSchedule and NoExecute taints. None when one of them is a taint
  Kubernetes puts on an unhealthy node (``node.kubernetes.io/not-ready``, ...): that node
  needs fixing, not the pod; nor for a cordoned node's
  ``node.kubernetes.io/unschedulable``: ``uncordon`` is the fix, pods other than
  DaemonSets' should not tolerate a cordon.
* **cordon** — ``node(s) were unschedulable`` -> ``uncordon`` (``spec.unschedulable``
  false and the cordon's taint gone, as ``kubectl uncordon`` leaves the node).
* **labels** — ``node(s) didn't match node selector`` / ``node(s) didn't have the
  requested labels`` -> the node label edits, in ``kubectl label`` syntax (``label
  disktype=ssd gpu-``), after which the node meets the nodeSelector, one required node
  affinity term (the term needing the fewest edits first) and the policy's labelsPresence
  rules. A value the rules leave open is the one most nodes carry for that key (else
  empty). Labels that describe the machine itself (hostname, os, arch, instance type,
  zone, region) are never proposed: relabelling a node does not move it.
* **volume zone** — ``node(s) had no available volume zone`` (NoVolumeZoneConflict) or
  ``node(s) had volume node affinity conflict`` (CheckVolumeBinding, which the default
  order runs first) -> the pod's bound volumes in the node's zone and region: their zone
  labels and the ``In`` requirements of their node affinity on those keys, as ``volume
  pv-1 in zone us-east-1b``. None when the node lacks one of the keys.

No other reason has a hint. Host ports in particular: the port is how the pod is reached,
and the node's copy of it belongs to another pod; no change to this pod's placement frees
it. Nor do ``Insufficient pods``, pod (anti-)affinity, topology spread, node conditions
and pressure, disk conflicts, attach limits and volume binding: what they need changes
other pods or the node's health.

**Every candidate is verified** before it becomes a hint: the policy's own predicates, all
of them, run on that node with the change applied — on a copy of the pod, of the node
and the cluster (:meth:`ClusterState.with_node`), or of the cluster's PVs
(:meth:`ClusterState.with_persistent_volumes`); the live state and its NodeInfos are never
modified (a node holding nominated pods the pod yields to is also checked with them on it,
the first of the decision's two passes, in a trial undone at once: ``fitting.py``). A
candidate is kept only when the pod then passes every predicate on the node:
a hint is a *single* change and never claims a node it would not fix. A node that needs
two changes (short of cpu *and* tainted) gets no hint, and a pod that fits nowhere
whatever single change gets ``[]``. With ``alwaysCheckAllPredicates: false`` a node
reports only its first failing predicate; the verification still runs them all.

Per node and family the first candidate that passes wins (the smallest); families are
independent, so a cordoned node may get both ``uncordon`` and a toleration. Hints group
the nodes one change fixes (nodes by name) and are ranked by how little they change
(:data:`RANKS`): first what changes the pod alone (a toleration, then a smaller request,
the smallest cut first), then the cluster's state (uncordon, then moving volumes), and
last relabelling nodes, which makes a node claim to be another kind of machine (a CPU
node labelled as a GPU one); within a family, fewer taints, edits or volumes first, then
the most nodes, then the change's text.

Cost. A pod or volume change shares one :class:`CycleState` across the nodes it is tried
on. A node change runs the ``node_local`` predicates (which read only the pod and the one
NodeInfo, by their contract) on ``NodeInfo.copy()``, and only if they pass the others on
a what-if cluster (O(nodes) to build): they may read the node's labels through the
cluster's indexes (a relabelled node takes its pods into the new topology domain). The
work is bounded: at most ``budget`` (:data:`MAX_CHECKS`) (node, change) checks per pod,
nodes taken by name; beyond it nodes are left out of the hints rather than unchecked in
them. Hints are computed only when the scheduler explains (``simulate``, ``explain``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from ..objects import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    REGION_LABELS,
    ZONE_LABELS,
    Node,
    PersistentVolume,
    Pod,
    Resources,
    Taint,
    Toleration,
    resources,
    tolerations_tolerate,
)
from ..quantities import format_bytes, format_milli
from ..selectors import DOES_NOT_EXIST, EXISTS, GT, IN, LT, NodeSelectorTerm, Requirement, Selector
from ..volumenames import PVC, VOLUME_NODE_CONFLICT, VOLUME_ZONE_CONFLICT
from .cluster import ClusterState
from .compiler import CompiledPolicy
from .fitting import first_pass, nominated_for
from .functions import CycleState, Predicate
from .nodeinfo import NodeInfo
from .predicates.general import (
    ERR_NODE_SELECTOR_NOT_MATCH,
    ERR_NODE_UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
)
from .predicates.labels import ERR_NODE_LABEL_PRESENCE_VIOLATED, LabelPresenceCheck
from .predicates.taints import ERR_TAINTS_TOLERATIONS_NOT_MATCH, NO_EXECUTE, NO_SCHEDULE
from .predicates.volumes import VOLUME_ZONE_LABELS, volume_zone_constraints

#: (node, change) checks one pod's hints may cost at most.
MAX_CHECKS: Final = 2000

INSUFFICIENT: Final = "Insufficient "
MI: Final = 2**20

#: Taints the node lifecycle controller sets on unhealthy nodes (and the cordon's):
#: tolerating them is not a fix.
CONDITION_TAINTS: Final = frozenset(
    {
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/out-of-disk",
    }
)

#: Labels the kubelet or the cloud provider set to describe the machine.
MACHINE_LABELS: Final = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        *ZONE_LABELS,
        *REGION_LABELS,
    }
)


@dataclass(frozen=True, slots=True)
class Hint:
    """One change, and the nodes (by name) where the pod would fit with it."""

    change: str
    nodes: tuple[str, ...]


#: How much each family's change changes, least first: the pod's spec alone (tolerate a
#: taint, ask for less), the cluster's state (uncordon a node, move volumes), what a node
#: says it is (its labels).
RANKS: Final = {"toleration": 0, "request": 1, "uncordon": 2, "volume": 3, "label": 4}


@dataclass(frozen=True, slots=True)
class _Change:
    """A candidate change: its text and what it changes, applied (one of the three)."""

    text: str
    pod: Pod | None = None
    node: Node | None = None
    volumes: tuple[PersistentVolume, ...] = ()
    #: For a request change, the requests it sets, by resource name.
    requests: Mapping[str, int] | None = None
    #: How much it changes: its family's rank, then its size within the family.
    cost: tuple[int, float] = (0, 0.0)


@dataclass(frozen=True, slots=True)
class _Context:
    """One pod's hinting: what the families read, and what they work out once."""

    pod: Pod
    cluster: ClusterState
    policy: CompiledPolicy
    #: Node -> the nominated pods the pod yields to there (no change to the pod moves its
    #: priority, so one answer serves every candidate).
    nominated: Mapping[str, Sequence[Pod]]
    #: (label key, its requirements) -> the values meeting them, preferred first.
    label_values: dict[tuple[str, tuple[Requirement, ...]], list[str]] = field(default_factory=dict)


#: A family: (context, refused node, its reasons) -> candidate changes, smallest first.
_Family = Callable[[_Context, NodeInfo, Sequence[str]], list[_Change]]


def fit_hints(
    pod: Pod,
    cluster: ClusterState,
    policy: CompiledPolicy,
    failed: Mapping[str, Sequence[str]],
    *,
    budget: int = MAX_CHECKS,
) -> list[Hint]:
    """The verified single changes that would make ``pod`` fit the ``failed`` nodes."""
    context = _Context(pod, cluster, policy, nominated_for(pod, cluster))
    checker = _Checker(context)
    #: Change text -> the nodes it fixes (a dict as an ordered set), and what it costs.
    fixed: dict[str, dict[str, None]] = {}
    costs: dict[str, tuple[int, float]] = {}
    #: Request changes that fixed a node, by text; and per node, the requests its own
    #: change allows.
    requests: dict[str, tuple[_Change, Mapping[str, int]]] = {}
    room: dict[str, Mapping[str, int]] = {}
    for name in sorted(failed):
        info = cluster.nodes.get(name)
        if info is None:
            continue
        reasons = failed[name]
        for family in _FAMILIES:
            for change in family(context, info, reasons):
                if checker.spent >= budget:
                    return _ranked(fixed, costs)
                if checker.fits(change, info):
                    # Two families may propose the same change for one node: one entry.
                    fixed.setdefault(change.text, {})[name] = None
                    costs.setdefault(change.text, change.cost)
                    if change.requests is not None:
                        requests.setdefault(change.text, (change, change.requests))
                        room[name] = change.requests
                    break
    # A request that fits one node often fits others with more room: say so, checked.
    # The smallest requests first (they fit the most nodes); the comparisons are cheap,
    # but bounded too.
    comparisons = budget * 50
    for text, (change, amounts) in sorted(
        requests.items(), key=lambda kv: sorted(kv[1][1].items())
    ):
        nodes = fixed[text]
        for name, allowed in room.items():
            comparisons -= 1
            if comparisons < 0:
                return _ranked(fixed, costs)
            if name in nodes or not _within(amounts, allowed):
                continue
            if checker.spent >= budget:
                return _ranked(fixed, costs)
            if checker.fits(change, cluster.nodes[name]):
                nodes[name] = None
    return _ranked(fixed, costs)


def _within(amounts: Mapping[str, int], allowed: Mapping[str, int]) -> bool:
    """``amounts`` lowers every request ``allowed`` lowers, at least as far."""
    return all(name in amounts and amounts[name] <= limit for name, limit in allowed.items())


def _ranked(
    fixed: Mapping[str, Mapping[str, None]], costs: Mapping[str, tuple[int, float]]
) -> list[Hint]:
    """The hints, the least change first (see the module docstring)."""
    hints = [Hint(text, tuple(sorted(nodes))) for text, nodes in fixed.items()]
    hints.sort(key=lambda hint: (costs[hint.change], -len(hint.nodes), hint.change))
    return hints


class _Checker:
    """Runs the policy's predicates with a change applied, the live state untouched."""

    def __init__(self, context: _Context) -> None:
        self.context = context
        self.spent = 0
        predicates = context.policy.predicates
        self._all = tuple(entry.fn for entry in predicates)
        self._local = tuple(entry.fn for entry in predicates if entry.hints.node_local)
        self._wide = tuple(entry.fn for entry in predicates if not entry.hints.node_local)
        #: Change text -> the attempt's state with that pod or volume change applied.
        self._cycles: dict[str, CycleState] = {}
        #: The unchanged pod on the live cluster, for node changes' node-local checks.
        self._base = context.policy.new_cycle(context.pod, context.cluster)

    def _cycle(self, key: str, pod: Pod, cluster: ClusterState) -> CycleState:
        cycle = self._cycles.get(key)
        if cycle is None:
            cycle = self._cycles[key] = self.context.policy.new_cycle(pod, cluster)
        return cycle

    def fits(self, change: _Change, info: NodeInfo) -> bool:
        self.spent += 1
        context = self.context
        if change.node is not None:
            return self._fits_changed_node(change.node, info)
        if change.volumes:
            cluster = context.cluster.with_persistent_volumes(change.volumes)
            cycle = self._cycle(change.text, context.pod, cluster)
        else:
            cycle = self._cycle(change.text, change.pod or context.pod, context.cluster)
        return _passes(self._all, cycle.pod, info, cycle) and self._yields(
            cycle.pod, cycle.cluster, info.name
        )

    def _fits_changed_node(self, node: Node, info: NodeInfo) -> bool:
        context = self.context
        pod = context.pod
        # Node-local predicates read nothing but the pod and this NodeInfo: a copy of it
        # with the new node answers for them, and most candidates stop here.
        twin = info.copy()
        twin.set_node(node)
        if not _passes(self._local, pod, twin, self._base):
            return False
        if not self._wide and node.name not in context.nominated:
            return True
        view = context.cluster.with_node(node)
        cycle = context.policy.new_cycle(pod, view)
        return _passes(self._wide, pod, view.nodes[node.name], cycle) and self._yields(
            pod, view, node.name
        )

    def _yields(self, pod: Pod, cluster: ClusterState, name: str) -> bool:
        """The first of the scheduler's two passes (fitting.py): the pod still fits with
        the nominated pods it yields to running on the node, as the decision demands."""
        others = self.context.nominated.get(name)
        if not others:
            return True
        info = cluster.nodes[name]
        return not first_pass(pod, info, cluster, self.context.policy, others, check_all=False)


def _passes(predicates: Iterable[Predicate], pod: Pod, info: NodeInfo, cycle: CycleState) -> bool:
    return not any(fn(pod, info, cycle) for fn in predicates)


# -- requests ------------------------------------------------------------------------------


def _requested(info: NodeInfo, name: str) -> int:
    if name == CPU:
        return info.requested_cpu
    if name == MEMORY:
        return info.requested_memory
    if name == EPHEMERAL_STORAGE:
        return info.requested_ephemeral
    return info.requested_scalar.get(name, 0)


def _in_bytes(name: str) -> bool:
    return name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-")


def _amount(name: str, amount: int) -> str:
    if name == CPU:
        return format_milli(amount)
    if _in_bytes(name):
        return format_bytes(amount)
    return str(amount)


def _with_requests(request: Resources, amounts: Mapping[str, int]) -> Resources:
    scalar = {name: amounts.get(name, value) for name, value in request.scalar.items()}
    return resources(
        amounts.get(CPU, request.milli_cpu),
        amounts.get(MEMORY, request.memory),
        amounts.get(EPHEMERAL_STORAGE, request.ephemeral_storage),
        request.allowed_pods,
        scalar,
    )


def _request_changes(context: _Context, info: NodeInfo, reasons: Sequence[str]) -> list[_Change]:
    short = list(
        dict.fromkeys(r[len(INSUFFICIENT) :] for r in reasons if r.startswith(INSUFFICIENT))
    )
    if not short or PODS in short:
        return []
    pod = context.pod
    allocatable = info.node.allocatable
    # The room nominated pods of equal or higher priority are promised is not the pod's.
    promised = context.nominated.get(info.name, ())
    amounts: dict[str, int] = {}
    for name in short:
        room = allocatable.get(name) - _requested(info, name)
        room -= sum(other.request.get(name) for other in promised)
        if _in_bytes(name) and room >= MI:
            room -= room % MI
        if room <= 0 or room >= pod.request.get(name):
            return []
        amounts[name] = room
    init = pod.init
    shown: list[str] = []
    for name, amount in amounts.items():
        if init is not None and name in init.pod_level:
            # spec.resources' own request: what the pod asks beyond it (its overhead)
            # is not the user's to cut there.
            amount -= pod.request.get(name) - init.pod_level_requests.get(name)
            if amount <= 0:
                return []
            shown.append(f"pod-level {name} request <= {_amount(name, amount)}")
        else:
            shown.append(f"{name} request <= {_amount(name, amount)}")
    text = ", ".join(shown)
    request = _with_requests(pod.request, amounts)
    if init is not None and init.request == pod.request:
        # Pod-level resources: today's request is the legacy one; the cut applies to both.
        init = replace(init, request=request)
    changed = replace(pod, request=request, init=init, fingerprint=b"")
    # The deepest cut, as a fraction of what the pod asks: the smallest cut first.
    cut = max(1 - amount / pod.request.get(name) for name, amount in amounts.items())
    return [_Change(text, pod=changed, requests=amounts, cost=(RANKS["request"], cut))]


# -- tolerations and cordon ----------------------------------------------------------------


def _taint_text(taint: Taint) -> str:
    key = f"{taint.key}={taint.value}" if taint.value else taint.key
    return f"{key}:{taint.effect}"


def _tolerating(pod: Pod, taints: Sequence[Taint]) -> _Change:
    added = tuple(Toleration(t.key, "Equal", t.value, t.effect) for t in taints)
    changed = replace(pod, tolerations=pod.tolerations + added, fingerprint=b"")
    text = "tolerate " + ", ".join(_taint_text(t) for t in taints)
    return _Change(text, pod=changed, cost=(RANKS["toleration"], len(taints)))


def _toleration_changes(context: _Context, info: NodeInfo, reasons: Sequence[str]) -> list[_Change]:
    node = info.node
    tolerations = context.pod.tolerations
    untolerated: list[Taint] = []
    if ERR_TAINTS_TOLERATIONS_NOT_MATCH in reasons:
        untolerated = [
            t
            for t in node.taints
            if t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate(tolerations, t)
        ]
    if (
        ERR_NODE_UNSCHEDULABLE in reasons
        and node.unschedulable
        and not tolerations_tolerate(tolerations, UNSCHEDULABLE_TAINT)
    ):
        untolerated.append(UNSCHEDULABLE_TAINT)
    taints = list(dict.fromkeys(untolerated))
    if not taints or any(t.key in CONDITION_TAINTS for t in taints):
        return []
    no_execute = [t for t in taints if t.effect == NO_EXECUTE]
    options = [no_execute] if no_execute and len(no_execute) < len(taints) else []
    options.append(taints)
    return [_tolerating(context.pod, option) for option in options]


def _cordon_changes(context: _Context, info: NodeInfo, reasons: Sequence[str]) -> list[_Change]:
    node = info.node
    if not node.unschedulable or not (
        ERR_NODE_UNSCHEDULABLE in reasons or ERR_TAINTS_TOLERATIONS_NOT_MATCH in reasons
    ):
        return []
    taints = tuple(t for t in node.taints if t.key != UNSCHEDULABLE_TAINT.key)
    uncordoned = replace(node, unschedulable=False, taints=taints)
    return [_Change("uncordon", node=uncordoned, cost=(RANKS["uncordon"], 0))]


# -- labels --------------------------------------------------------------------------------

#: What a label edit sets: a value, or None to remove the label.
_Edits = dict[str, str | None]


def _presence_requirements(policy: CompiledPolicy) -> list[Requirement]:
    """The policy's labelsPresence rules as Exists / DoesNotExist requirements."""
    out: list[Requirement] = []
    for entry in policy.predicates:
        rule = entry.fn
        if isinstance(rule, LabelPresenceCheck):
            operator = EXISTS if rule.presence else DOES_NOT_EXIST
            out.extend(Requirement(label, operator) for label in rule.labels)
    return out


def _allows(requirements: Sequence[Requirement], key: str, value: str | None) -> bool:
    labels = {} if value is None else {key: value}
    return all(r.matches(labels) for r in requirements)


def _label_value(
    context: _Context, key: str, requirements: Sequence[Requirement], current: str | None
) -> tuple[bool, str | None]:
    """(found, value) meeting every requirement on ``key``; None means no label.

    Removing the label is tried first; then the values the requirements name, those other
    nodes carry and the integers next to Gt/Lt bounds, the most common on nodes first
    (worked out once per key and requirements, not once per node).
    """
    if current is not None and _allows(requirements, key, None):
        return True, None
    memo_key = (key, tuple(requirements))
    allowed = context.label_values.get(memo_key)
    if allowed is None:
        carried = context.cluster.node_label_values.get(key, {})
        values = set(carried)
        values.add("")
        for r in requirements:
            if r.operator == IN:
                values.update(r.values)
            elif r.operator == GT:
                values.add(str(r.bound + 1))
            elif r.operator == LT:
                values.add(str(r.bound - 1))
        allowed = [
            value
            for value in sorted(values, key=lambda v: (-carried.get(v, 0), v))
            if _allows(requirements, key, value)
        ]
        context.label_values[memo_key] = allowed
    for value in allowed:
        if value != current:
            return True, value
    return False, None


def _label_edits(
    context: _Context, requirements: Sequence[Requirement], labels: Mapping[str, str]
) -> _Edits | None:
    """The fewest label edits after which ``labels`` meet every requirement; None if none."""
    by_key: dict[str, list[Requirement]] = {}
    for r in requirements:
        by_key.setdefault(r.key, []).append(r)
    edits: _Edits = {}
    for key, reqs in by_key.items():
        current = labels.get(key)
        if _allows(reqs, key, current):
            continue
        if key in MACHINE_LABELS:
            return None
        found, value = _label_value(context, key, reqs, current)
        if not found:
            return None
        edits[key] = value
    return edits


def _label_text(edits: _Edits) -> str:
    parts = [f"{k}={v}" if v is not None else f"{k}-" for k, v in sorted(edits.items())]
    return "label " + " ".join(parts)


def _relabelled(node: Node, edits: _Edits) -> Node:
    labels = {k: v for k, v in node.labels.items() if k not in edits}
    labels.update({k: v for k, v in edits.items() if v is not None})
    return replace(node, labels=labels)


def _label_changes(context: _Context, info: NodeInfo, reasons: Sequence[str]) -> list[_Change]:
    if (
        ERR_NODE_SELECTOR_NOT_MATCH not in reasons
        and ERR_NODE_LABEL_PRESENCE_VIOLATED not in reasons
    ):
        return []
    pod = context.pod
    node = info.node
    base = _presence_requirements(context.policy)
    if pod.has_node_selector:
        base.extend(pod.node_selector.requirements)
    terms: Sequence[NodeSelectorTerm | None] = (
        [None] if pod.required_node_terms is None else pod.required_node_terms
    )
    options: dict[str, _Edits] = {}
    for term in terms:
        requirements = list(base)
        if term is not None:
            if term.empty or term.labels.nothing:
                continue
            requirements.extend(term.labels.requirements)
        edits = _label_edits(context, requirements, node.labels)
        if not edits:
            continue
        relabelled = _relabelled(node, edits)
        if term is not None and not term.matches(relabelled.labels, node.name):
            continue  # its matchFields name another node: no label helps
        options.setdefault(_label_text(edits), edits)
    ranked = sorted(options.items(), key=lambda item: (len(item[1]), item[0]))
    return [
        _Change(text, node=_relabelled(node, edits), cost=(RANKS["label"], len(edits)))
        for text, edits in ranked
    ]


# -- volume zone ---------------------------------------------------------------------------


def _zone_word(key: str) -> str:
    return "zone" if key in ZONE_LABELS else "region"


def _moved_term(term: NodeSelectorTerm, edits: Mapping[str, str]) -> NodeSelectorTerm:
    if term.empty or term.labels.nothing:
        return term
    requirements = tuple(
        Requirement(r.key, IN, frozenset({edits[r.key]}))
        if r.key in edits and r.operator == IN
        else r
        for r in term.labels.requirements
    )
    return replace(term, labels=Selector(requirements))


def _moved(pv: PersistentVolume, edits: Mapping[str, str]) -> PersistentVolume:
    """The PV as if it lived where ``edits`` say: its zone labels and node affinity."""
    affinity = pv.node_affinity
    if affinity is not None:
        affinity = tuple(_moved_term(term, edits) for term in affinity)
    return replace(pv, labels={**pv.labels, **edits}, node_affinity=affinity)


def _volume_places(pv: PersistentVolume) -> list[tuple[str, frozenset[str]]]:
    """Where a PV says it is: its zone and region labels, and the same keys' ``In``
    requirements of its node affinity (what NoVolumeZoneConflict and CheckVolumeBinding
    compare with the node)."""
    places = list(volume_zone_constraints(pv))
    for term in pv.node_affinity or ():
        places.extend(
            (r.key, r.values)
            for r in term.labels.requirements
            if r.key in VOLUME_ZONE_LABELS and r.operator == IN
        )
    return places


def _volume_zone_changes(
    context: _Context, info: NodeInfo, reasons: Sequence[str]
) -> list[_Change]:
    if VOLUME_ZONE_CONFLICT not in reasons and VOLUME_NODE_CONFLICT not in reasons:
        return []
    pod = context.pod
    cluster = context.cluster
    labels = info.node.labels
    moved: dict[str, tuple[PersistentVolume, str]] = {}
    for volume in pod.volumes:
        if volume.kind != PVC:
            continue
        claim = cluster.claims.get(f"{pod.namespace}/{volume.handle}")
        pv = cluster.persistent_volumes.get(claim.volume_name) if claim is not None else None
        if pv is None or pv.name in moved:
            continue
        edits: dict[str, str] = {}
        for key, zones in _volume_places(pv):
            value = labels.get(key)
            if value is None:
                return []  # the node does not say where it is on this key
            if value not in zones:
                edits[key] = value
        if edits:
            # Region before zone; the beta and GA keys of one place say it once.
            where = " ".join(
                f"{word} {v}" for word, v in sorted({(_zone_word(k), v) for k, v in edits.items()})
            )
            moved[pv.name] = (_moved(pv, edits), f"volume {pv.name} in {where}")
    if not moved:
        return []
    text = ", ".join(text for _, text in moved.values())
    volumes = tuple(pv for pv, _ in moved.values())
    return [_Change(text, volumes=volumes, cost=(RANKS["volume"], len(volumes)))]


_FAMILIES: Final[tuple[_Family, ...]] = (
    _request_changes,
    _toleration_changes,
    _cordon_changes,
    _label_changes,
    _volume_zone_changes,
)
