"""Offline scheduling: Kubernetes objects from files in, one decision per pending pod out.

``simulate`` reads what ``kubectl get -o yaml`` writes (single documents, multi-document
YAML, ``kind: List``) and feeds every object through the operator's own door,
:meth:`~.state.world.World.observe`: the same parsing, the same admission rule (which
pods are taken: not gated, not being deleted, not finished), the same cache and the same
queue order (higher ``spec.priority`` first, then older, then file order). Then it
decides the pending pods one by one with the same engine the operator runs, each on a
snapshot of the cache, and *assumes* each decision in the cache before the next pod is
decided, so the decisions see each other, as in a live scheduler: the pod on its node,
and the PVs its claims were matched with bound to them (a free PV serves one claim per
run), its claims to provision annotated with the node.

Each pending pod is decided by the policy serving its ``spec.schedulerName``, as the
operator would: the SchedulingPolicies (and legacy Policies) among the inputs, and the
built-in default policy for the default name. An invalid policy among them is skipped
with a warning, as the operator refuses it, and the others decide. Pods of a name nobody
serves are skipped with a note; ``--policy FILE`` decides every pending pod with that
one policy instead (whatever its ``mode``: that is how a Shadow policy is previewed alone).

``--config FILE`` (:func:`load_configuration`) brings a KubeSchedulerConfiguration: each
profile, converted as ``convert`` converts it (``schedconfig``) and compiled, is a policy
serving the profile's schedulerName, beside the policies among the inputs; a profile
takes its name from any of them (it claims the name first; an input policy of the same
``metadata.name`` is left out, with a warning).

Shadow policies among the inputs (``mode: Shadow``) never decide a pod as if active:
each decides, on the same snapshot, every pod the active policy of its schedulerName
decides (no sampling, no budget, no extenders, as ``state/shadows.py`` says), nothing
of theirs is assumed, and :attr:`Decision.shadows` keeps their decisions (``shadow`` in
the JSON; :class:`ShadowTally` counts them as a shadow's status would).
Pods the operator would not take (being deleted, with ``schedulingGates``) are reported
as skipped, never silently dropped. Finished pods (Succeeded / Failed) use no resources.

Priority and preemption: PriorityClasses among the inputs are read first, so that a pod
naming one without ``spec.priority`` gets its value (the ``globalDefault`` class's, or
0, when it names none), as the API server's admission would have written it.
Gangs (a policy enabling Coscheduling, with the PodGroups among the inputs) are placed
all or nothing: a group's pending members are decided together, and when fewer than
``minMember`` would fit none is placed, each member's message saying why (the member
that did not fit); such decisions carry ``gang`` (the group and its minMember).
PodDisruptionBudgets (policy/v1 and v1beta1) and the ``status.nominatedNodeName`` of
pending pods are read as the operator reads them, and so are CSIDrivers and
CSIStorageCapacities (v1.30's VolumeBinding checks storage capacity with them), and
DRA's DeviceClasses, ResourceSlices, ResourceClaims and templates (DynamicResources). A
pod that fits nowhere preempts as the operator would (see :func:`simulate`); its decision
carries ``preemption`` (the node and the victims, most important first), null on every
other decision.
A policy's HTTP extenders are called through the ``extenders`` client the caller passes
(the CLI builds one; this module does no I/O): their filters and scores count as in the
operator (preempt calls included, when a pod would preempt); bind calls are never
made. Without a client they are left out.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from .deciding import Attempt, Decider, Outcome
from .documents import InputError, collector_paused, read_file_documents
from .engine.algorithm import Decision, NodeScore
from .engine.compiler import CompiledPolicy, compile_policy
from .engine.extenders import ExtenderClient
from .engine.interface import Status, points_of
from .engine.intree.dynamicresources import claimed_devices
from .engine.plugins import PluginProblem, plugin_class
from .engine.predicates.volumes import PodVolumes
from .kinds import (
    DRA_KINDS,
    POD,
    POD_GROUP,
    PRIORITY_CLASS,
    SCHEDULING_POLICY,
    Kind,
    PolicyObject,
    kind_of,
)
from .legacy import convert_legacy
from .names import DEFAULT_SCHEDULER_NAME
from .objects import ObjectError, Pod, bodies_deferred
from .pluginargs import CATALOGUE, RELEASE_OF
from .policy import INVALID, PolicyError, SchedulingPolicy, parse_policy
from .schedconfig import Conversion, convert_configuration, is_configuration
from .state.cache import SchedulerCache
from .state.handles import SchedulerHandle
from .state.policies import NO_ACTIVE_POLICY, PolicyBook
from .state.shadows import ShadowRunner, ShadowWindow, compare
from .state.world import World

SCHEDULING_POLICY_KIND = SCHEDULING_POLICY.kind
LEGACY_POLICY_KIND = "Policy"
#: ``simulate --seed``'s default: the same input gives the same output, ties included.
DEFAULT_SEED: Final = 0


@dataclass
class Inputs:
    """What the files hold, sorted the operator's way into a :class:`World`."""

    world: World
    #: Policies found among the inputs, in file order (legacy ones converted).
    policies: list[SchedulingPolicy] = field(default_factory=list)
    #: Pods the operator would not take, and why.
    skipped: list[tuple[Pod, str]] = field(default_factory=list)
    #: Pods that cannot be read (an API server would have refused them), one line each
    #: naming the pod and the field: skipped, as the operator skips them.
    unreadable: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def unserved(self) -> dict[str, int]:
        """Pending pods no policy serves, counted by schedulerName."""
        queue = self.world.queue
        return dict(
            Counter(p.scheduler_name for p in queue.pods() if queue.where(p.uid) == "waiting")
        )

    def deciding_policies(self) -> dict[str, CompiledPolicy]:
        """The policies that will decide the pending pods, by name."""
        book = self.world.book
        return {
            policy.name: policy
            for pod in self.world.queue.pods()
            if (policy := book.policy_for(pod.scheduler_name)) is not None
        }

    def policy_names(self) -> list[str]:
        """The policies that will decide the pending pods, by name."""
        return sorted(self.deciding_policies())


def read_documents(path: str | Path) -> list[dict[str, Any]]:
    """Every object in a YAML/JSON file (``-``: stdin), ``kind: List`` expanded.

    Reading and decoding are :mod:`documents`' (JSON by content, libyaml, limits on
    size, depth and aliases); errors name the file.
    """
    return kubernetes_objects(read_file_documents(path), str(path))


def kubernetes_objects(documents: Iterable[Any], source: str) -> list[dict[str, Any]]:
    """The objects of decoded documents, lists expanded, each checked as an API object.

    Each is a mapping whose ``kind`` (if any) is a string and whose ``metadata`` (if
    any) is a mapping with a string ``name``, as the API guarantees: what sorts the
    objects dispatches on the kind and names objects it ignores, and a kind that is a
    list or metadata that is ``true`` would reach it as a TypeError. They are refused
    here, naming the document.
    """
    out: list[dict[str, Any]] = []
    for index, doc in enumerate(documents):
        if doc is None:
            continue
        where = f"{source}: document {index + 1}"
        _check_object(doc, where)
        items, kind = doc.get("items"), doc.get("kind")
        if isinstance(items, list) and isinstance(kind, str) and kind.endswith("List"):
            for item_index, item in enumerate(items):
                _check_object(item, f"{where}: items[{item_index}]")
            out.extend(items)
        else:
            out.append(doc)
    return out


def _check_object(doc: object, where: str) -> None:
    if not isinstance(doc, dict):
        raise InputError(f"{where}: not a Kubernetes object")
    kind = doc.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise InputError(f"{where}: kind: must be a string, got {type(kind).__name__}")
    meta = doc.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise InputError(f"{where}: metadata: must be an object, got {type(meta).__name__}")
    name = meta.get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(f"{where}: metadata.name: must be a string, got {type(name).__name__}")


def is_legacy_policy(doc: Mapping[str, Any]) -> bool:
    kind = doc.get("kind")
    if kind == LEGACY_POLICY_KIND:
        return True
    legacy_keys = {"predicates", "priorities", "extenders", "hardPodAffinitySymmetricWeight"}
    return kind is None and "metadata" not in doc and bool(legacy_keys & set(doc))


def load_policy_document(doc: Mapping[str, Any]) -> SchedulingPolicy:
    """A SchedulingPolicy object, or a legacy Policy converted to one."""
    if is_legacy_policy(doc):
        return convert_legacy(doc).policy
    return parse_policy(doc)


def load_policy_file(path: str | Path) -> SchedulingPolicy:
    docs = read_documents(path)
    if len(docs) != 1:
        raise InputError(f"{path}: expected one policy, found {len(docs)} documents")
    return load_policy_document(docs[0])


def load_configuration(path: str | Path) -> Conversion:
    """The profiles of a KubeSchedulerConfiguration file, converted and compiled.

    The file holds that one object. Refused as ``validate`` refuses it: what
    kube-scheduler would refuse (``schedconfig``), and what policy-scheduler cannot run
    (:func:`check_profiles`).
    """
    docs = read_documents(path)
    if len(docs) != 1 or not is_configuration(docs[0]):
        kinds = ", ".join(str(d.get("kind") or "an object without kind") for d in docs)
        raise InputError(
            f"{path}: expected one KubeSchedulerConfiguration, found {kinds or 'nothing'}"
        )
    conversion = convert_configuration(docs[0], extra_plugins=out_of_tree_plugins(docs[0]))
    check_profiles(conversion, RELEASE_OF.get(str(docs[0].get("apiVersion")), ""))
    return conversion


def out_of_tree_plugins(doc: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The plugins a configuration names that are not kube-scheduler's in-tree ones and
    that a SchedulingPolicy may name (shipped, e.g. Coscheduling, or installed by entry
    point): name -> the extension points its class implements. A name no class answers
    to is left for the configuration's reader to refuse."""
    names: set[str] = set()
    for profile in doc.get("profiles") or ():
        if not isinstance(profile, Mapping):
            continue
        plugins = profile.get("plugins")
        for plugin_set in plugins.values() if isinstance(plugins, Mapping) else ():
            if isinstance(plugin_set, Mapping):
                for ref in plugin_set.get("enabled") or ():
                    if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
                        names.add(ref["name"])
    found: dict[str, tuple[str, ...]] = {}
    for name in sorted(names - set(CATALOGUE)):
        try:
            found[name] = points_of(plugin_class(name))
        except PluginProblem:
            continue
    return found


def check_profiles(conversion: Conversion, release: str = "") -> None:
    """Compile each profile's policy as the scheduler would: PolicyError naming the
    profile when one cannot run here (an in-tree plugin of that kube-scheduler release
    policy-scheduler does not implement, a plugin whose constructor refuses its args)."""
    errors: list[str] = []
    reason = ""
    for index, policy in enumerate(conversion.policies):
        where = f'KubeSchedulerConfiguration: profiles[{index}] ("{policy.name}")'
        missing = [name for name in _plugin_names(policy) if _not_run_here(name)]
        for name in missing:
            errors.append(
                f"{where}: plugin {name!r} is an in-tree plugin of kube-scheduler "
                f"{release or 'v1.25-v1.30'} that policy-scheduler does not run; "
                "disable it in this profile"
            )
        if missing:
            continue
        try:
            compile_policy(policy)
        except PolicyError as exc:
            own = f'SchedulingPolicy "{policy.name}": '
            errors.extend(f"{where}, converted: {line.removeprefix(own)}" for line in exc.errors)
            reason = reason or exc.reason
    if errors:
        raise PolicyError(errors, reason=reason or INVALID)


def _plugin_names(policy: SchedulingPolicy) -> list[str]:
    """Every plugin a converted profile names, once each, in order."""
    spec = policy.spec
    found = [entry.name for entry in spec.predicates or ()]
    found += [entry.name for entry in spec.priorities or ()]
    if spec.plugins is not None:
        for _, plugin_set in spec.plugins.sets():
            found += [ref.name for ref in plugin_set.enabled]
    return list(dict.fromkeys(found))


def _not_run_here(name: str) -> bool:
    """An in-tree plugin name kube-scheduler runs and policy-scheduler has no class for."""
    known = CATALOGUE.get(name)
    if known is None or not known.runs:
        return False
    try:
        plugin_class(name)
    except PluginProblem:
        return True
    return False


def load_inputs(
    paths: Iterable[str | Path],
    *,
    policy: SchedulingPolicy | None = None,
    profiles: Sequence[SchedulingPolicy] = (),
    default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    retain: list[dict[str, Any]] | None = None,
) -> Inputs:
    """The objects of ``paths`` through :func:`inputs_from_objects`.

    ``retain``: a list the decoded documents are appended to, for a caller that exits
    without freeing memory (the console's ``simulate``): freeing ten thousand decoded
    pods at the end of the load costs a tenth of a second or more, for nothing.
    """
    # Parsing builds long-lived objects only: no collection pass would free anything.
    # The documents are all in memory here: nodes and pending pods keep theirs and encode
    # an extender's JSON body only if one is sent (most runs call no extender).
    with collector_paused(), bodies_deferred():
        documents = [(doc, str(path)) for path in paths for doc in read_documents(path)]
        if retain is not None:
            retain.extend(doc for doc, _ in documents)
        return inputs_from_objects(
            documents,
            policy=policy,
            profiles=profiles,
            default_scheduler_name=default_scheduler_name,
        )


def inputs_from_objects(
    objects: Iterable[tuple[dict[str, Any], str]],
    *,
    policy: SchedulingPolicy | None = None,
    profiles: Sequence[SchedulingPolicy] = (),
    default_scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> Inputs:
    """Feed (object, where it came from) pairs through the operator's door.

    ``policy``: decide every pending pod with it (the policies among the inputs are
    then only listed). ``profiles``: a KubeSchedulerConfiguration's (``--config``),
    each serving its schedulerName ahead of the policies among the inputs (not with
    ``policy``). Raises for a malformed object: a preview built on a misread input would
    mislead; a malformed pod is the exception, skipped and listed in ``unreadable``, as
    the operator reports it and decides the rest. An invalid policy is what the operator
    meets too, and handles the same way: refused (a warning here, ``Accepted=False``
    there), the rest decided.
    """
    if policy is not None and profiles:
        raise ValueError("a policy for every pod and a configuration's profiles exclude each other")
    # The plugins are made with the simulation's handle: offline, its waits on no clock.
    cache = SchedulerCache()
    handle = SchedulerHandle(cache, offline=True)
    serve_all = compile_policy(policy, handle) if policy is not None else None
    book = PolicyBook(default_scheduler_name, serve_all=serve_all, handle=handle)
    world = World(
        default_scheduler_name=default_scheduler_name, cache=cache, book=book, handle=handle
    )
    inputs = Inputs(world)
    # The profiles claim their names first (the oldest claimant keeps a name), in order.
    for index, profile in enumerate(profiles):
        created = float(index - len(profiles))
        world.apply_policy(PolicyObject(profile.name, "", 1, created, profile, None, {}))
    profile_names = {profile.name for profile in profiles}
    # PriorityClasses first, wherever they are in the files: pods are resolved on arrival;
    # then PodGroups: a gang's pods are queued in their group's order.
    ordered = sorted(objects, key=lambda pair: _load_rank(kind_of(pair[0])))
    for index, (doc, source) in enumerate(ordered):
        kind = kind_of(doc)
        if kind is SCHEDULING_POLICY or (kind is None and is_legacy_policy(doc)):
            try:
                found = load_policy_document(doc)
            except PolicyError as exc:
                inputs.warnings.append(
                    f"{source}: skipping an invalid policy, as the operator refuses it "
                    f"(Accepted=False, reason Invalid): {'; '.join(exc.errors)}"
                )
                continue
            if found.name in profile_names:
                inputs.warnings.append(
                    f"{source}: ignoring policy {found.name!r}: the --config profile of "
                    "that name takes its place"
                )
                continue
            inputs.policies.append(found)
            if serve_all is None:
                # File order decides between two policies claiming one name.
                world.apply_policy(PolicyObject(found.name, "", 1, float(index), found, None, {}))
            continue
        if kind is None:
            name = (doc.get("metadata") or {}).get("name", "?")
            hint = " (to decide with its profiles: --config FILE)" if is_configuration(doc) else ""
            inputs.warnings.append(
                f"{source}: ignoring {doc.get('kind') or 'an object without kind'} {name!r}{hint}"
            )
            continue
        outcome = world.observe("ADDED", doc, kind)
        if outcome.error is not None and kind is POD:
            # One pod an API server would refuse (a dump from another version, an edit by
            # hand) does not stop the others being decided: the operator reports such a
            # pod and goes on, and so does the preview.
            inputs.unreadable.append(f"{source}: {outcome.error}")
            continue
        if outcome.error is not None:
            raise InputError(outcome.error)
        if outcome.skipped is not None:
            inputs.skipped.append((outcome.obj, outcome.skipped.value))
    for found in [*profiles, *inputs.policies] if serve_all is None else ():
        verdict = book.verdict(found.name)
        if verdict is not None and not verdict.accepted:
            message = "; ".join(verdict.message.splitlines())
            inputs.warnings.append(f"policy {found.name!r} is not used: {message}")
        elif verdict is not None and verdict.reason == NO_ACTIVE_POLICY:
            inputs.warnings.append(
                f"Shadow policy {found.name!r} decides nothing: {verdict.message}"
            )
    return inputs


def _load_rank(kind: Kind | None) -> int:
    # PodGroups and DRA objects before pods: a pod's claims must be known when it is
    # queued (DynamicResources' PreEnqueue).
    return 0 if kind is PRIORITY_CLASS else 1 if kind is POD_GROUP or kind in DRA_KINDS else 2


ProgressFn = Callable[[int, int], None]


async def simulate(
    inputs: Inputs,
    *,
    explain: bool = True,
    progress: ProgressFn | None = None,
    extenders: ExtenderClient | None = None,
    on_decision: Callable[[Decision], None] | None = None,
    seed: int = DEFAULT_SEED,
) -> list[Decision]:
    """Decide every served pending pod in queue order, assuming each before the next.

    ``seed``: of the random generator that breaks ties among the best nodes for the
    policies decided by kube-scheduler v1.30's cycle (``Scheduler.rng``): the same
    inputs and seed give the same decisions.

    With ``on_decision``, each decision is handed to it as soon as it is made (and
    assumed) and is not kept: the list returned is then empty, so that a caller writing
    the decisions out as they come holds one at a time, whatever the cluster's size.

    ``extenders``: how to reach the policies' extenders (their filters, scores and say
    on preemption victims); None leaves them out.

    A pod that fits nowhere may preempt (unless its policy disables it): the victims
    leave the simulated cluster, the pod is nominated to the node, lower-priority
    nominations there are cleared, and the pod goes back to the queue at its place, to
    be decided again (a later decision for the same pod). A preemption that needs no
    victim only nominates the pod: deciding it again would decide it the same way. A pod
    whose attempt deallocated one of its ResourceClaims (DynamicResources' PostFilter)
    is decided again too, as the claim's update would wake it in a cluster.
    """
    world = inputs.world
    queue, cache = world.queue, world.cache
    rng = random.Random(seed)
    decider = Decider(
        world,
        explain=explain,
        extenders=extenders,
        shadows=ShadowRunner(sample=False, rng=rng),
        rng=rng,
    )
    waiting = world.handle.waiting
    decisions: list[Decision] = []
    held: dict[str, tuple[Decision, Attempt]] = {}  # pods a Permit plugin holds, by uid
    decided = 0
    total = queue.lengths()["active"]

    def emit(decision: Decision) -> None:
        nonlocal decided
        if on_decision is not None:
            on_decision(decision)
        else:
            decisions.append(decision)
        decided += 1
        if progress is not None:
            progress(decided, total)

    def settle() -> list[Decision]:
        """Pods a Permit plugin held whose wait is over: placed, or given up."""
        settled = []
        for uid, (decision, attempt) in list(held.items()):
            if attempt.waiting is None or not attempt.waiting.done:
                continue
            del held[uid]
            status = attempt.waiting.outcome.result()
            if not status.is_success:
                _give_up(decider, decision, attempt, status)
            settled.append(decision)
        return settled

    while (popped := queue.pop_nowait()) is not None:
        decided_now: list[Decision] = []  # one, or a gang's members in the plan's order
        deallocated = cache.claims_deallocated
        for attempt in await decider.decide(popped):
            queued = attempt.queued
            decision = attempt.decision
            if decision is None:
                # A gang's member deleted meanwhile (not in a simulation), or one left
                # with no policy: nothing to show.
                queue.done(queued.pod.uid)
                continue
            decision.gang = attempt.gang
            for shadow in attempt.shadows:
                if shadow.decision is not None:
                    decision.shadows[shadow.policy] = shadow.decision
            if attempt.outcome is Outcome.ASSUMED and attempt.waiting is not None:
                held[queued.pod.uid] = (decision, attempt)
            elif attempt.outcome is Outcome.REJECTED:
                assert attempt.status is not None
                _give_up(decider, decision, attempt, attempt.status)
            decided_now.append(decision)
            preemption = attempt.preemption
            if preemption is not None and preemption.node is not None and preemption.victims:
                # The victims left the cache (the ports carried the preemption out).
                queue.retry(queued)  # decided again at its place in the queue
                total += 1
            elif decision.node is None and cache.claims_deallocated > deallocated:
                # DynamicResources' PostFilter freed a claim of the pod: the claim's
                # update wakes it in a cluster; here it is decided again at its place.
                deallocated = cache.claims_deallocated
                queue.retry(queued)
                total += 1
            else:
                queue.done(queued.pod.uid)
        # A gang's members wait on each other at Permit: shown in the plan's order once
        # it settled them; pods held before and let go now, after them.
        settled = settle()
        for decision in decided_now:
            if decision.pod.uid not in held:
                emit(decision)
        now = {decision.pod.uid for decision in decided_now}
        for decision in settled:
            if decision.pod.uid not in now:
                emit(decision)
    # Nothing else will happen: whoever still waits at Permit times out.
    waiting.expire_all()
    for decision in settle():
        emit(decision)
    return decisions


def _give_up(decider: Decider, decision: Decision, attempt: Attempt, status: Status) -> None:
    """A Reserve or Permit plugin rejected the pod (or its wait ended without an allow):
    it is not placed; the decision says why, naming the plugin."""
    if attempt.node is not None and attempt.state is not None and attempt.policy is not None:
        decider.unreserve(decision.pod.uid, attempt.state, attempt.policy, attempt.node)
    decision.node = None
    decision.volumes = None
    text = status.message or "rejected"
    decision.message = f"{status.plugin}: {text}" if status.plugin else text


@dataclass(frozen=True)
class Detail:
    """How much per-node detail a decision's JSON carries (``--detail``).

    ``all`` (the default): DESIGN.md's shape, every evaluated node. ``top=N``: the same,
    but ``scores`` holds only the N best-scored nodes (and the chosen one). ``none``: no
    per-node data at all: ``feasibleNodes``, ``failedPredicates`` and ``scores`` give
    way to ``feasibleCount``, the number of nodes that fit.
    """

    #: None: every scored node; 0: no per-node detail; N: the N best-scored nodes.
    top: int | None = None

    @property
    def per_node(self) -> bool:
        return self.top != 0

    @classmethod
    def parse(cls, text: str) -> Detail:
        """``all``, ``none`` or ``top=N`` (N >= 1); ValueError otherwise."""
        if text == "all":
            return cls(None)
        if text == "none":
            return cls(0)
        name, _, count = text.partition("=")
        if name == "top" and count.isdigit() and int(count) >= 1:
            return cls(int(count))
        raise ValueError(f"expected all, none or top=N (N >= 1), got {text!r}")

    def __str__(self) -> str:
        return "all" if self.top is None else "none" if self.top == 0 else f"top={self.top}"


ALL_DETAIL: Final = Detail()


def decision_to_json(decision: Decision, detail: Detail = ALL_DETAIL) -> dict[str, Any]:
    """One decision in the ``simulate -o json`` contract of DESIGN.md (``detail``: less)."""
    out: dict[str, Any] = {"pod": decision.pod.key, "node": decision.node}
    if not detail.per_node:
        out["feasibleCount"] = len(decision.feasible)
    else:
        scores = decision.scores
        names: Iterable[str] = scores
        if detail.top is not None and len(scores) > detail.top:
            best = sorted(scores, key=lambda name: -scores[name].total)[: detail.top]
            if decision.node in scores and decision.node not in best:
                best.append(decision.node)  # a tie the round-robin broke past the cut
            names = best
        out["feasibleNodes"] = list(decision.feasible)
        out["failedPredicates"] = {name: list(r) for name, r in decision.failed.items()}
        out["scores"] = {name: _score_to_json(decision, scores[name]) for name in names}
    out["message"] = decision.message
    if decision.error:
        out["error"] = decision.error
    if decision.extender_errors:
        out["extenderErrors"] = list(decision.extender_errors)
    if decision.node is None:
        if detail.per_node:  # hints are per-node findings, only computed when explaining
            out["hints"] = [{"change": h.change, "nodes": list(h.nodes)} for h in decision.hints]
    else:
        if decision.volumes is not None:
            out["volumes"] = volumes_to_json(decision.volumes)
        claims = claimed_devices(decision.state) if decision.state is not None else {}
        if claims:
            out["claims"] = claims
    if decision.shadows:
        out["shadow"] = [
            {"policy": name, "node": shadow.node, "message": shadow.message}
            | ({"error": shadow.error} if shadow.error else {})
            for name, shadow in decision.shadows.items()
        ]
    if decision.gang is not None:
        # Placed all or nothing with its group: the message says why a group was not.
        out["gang"] = {"name": decision.gang.key, "minMember": decision.gang.min_member}
    preemption = decision.preemption
    out["preemption"] = (
        {"node": preemption.node, "victims": [victim.key for victim in preemption.victims]}
        if preemption is not None and preemption.node is not None
        else None
    )
    return out


class ShadowTally:
    """Each Shadow policy's decisions against the active ones, as its status counts them
    (the latest decision of each pod; failed decisions on either side left out), added
    one decision at a time (``simulate`` streams them)."""

    def __init__(self) -> None:
        self.windows: dict[str, ShadowWindow] = {}

    def add(self, decision: Decision) -> None:
        for name, shadow in decision.shadows.items():
            if not decision.error and not shadow.error:
                window = self.windows.setdefault(name, ShadowWindow(size=None))
                window.add(decision.pod.uid, compare(decision, shadow))

    def add_all(self, decisions: Iterable[Decision]) -> dict[str, ShadowWindow]:
        for decision in decisions:
            self.add(decision)
        return self.windows


def volumes_to_json(volumes: PodVolumes) -> dict[str, dict[str, Any]]:
    """Claim name -> how it binds on the chosen node: ``{"pv": NAME}`` matched to a free
    PV, ``{"provision": true}`` provisioned there, ``{"pv": NAME, "bound": true}``
    bound before this decision."""
    out: dict[str, dict[str, Any]] = {}
    for pvc, pv in volumes.bound:
        out[pvc.name] = {"pv": pv.name, "bound": True}
    for pvc, pv in volumes.matched:
        out[pvc.name] = {"pv": pv.name}
    for pvc in volumes.provisioned:
        out[pvc.name] = {"provision": True}
    return out


def _score_to_json(decision: Decision, score: NodeScore) -> dict[str, Any]:
    # The priorities dicts are the decision's own, fresh per node: not copied again.
    out: dict[str, Any] = {"total": score.total, "priorities": score.priorities}
    if decision.extender_scores:
        # urlPrefix -> the extender's raw score (before its weight), for every scored node.
        out["extenders"] = dict(score.extenders)
    return out


def report_to_json(policy_name: str, decisions: Sequence[Decision]) -> dict[str, Any]:
    return {"policy": policy_name, "decisions": [decision_to_json(d) for d in decisions]}


class JsonReportWriter:
    """``simulate -o json``, streamed: the document is written as decisions come.

    The output is the document :func:`report_to_json` describes, laid out with one
    decision per line (``jq`` indents it for reading; ``grep`` finds a pod's line), and
    nothing of it is kept in memory: each decision is encoded by the C encoder and
    written at once. Call :meth:`write` per decision, then :meth:`close`.
    """

    def __init__(self, out: IO[str], policy_name: str, detail: Detail = ALL_DETAIL) -> None:
        self.out = out
        self.detail = detail
        self.count = 0
        out.write(f"{{{_encode('policy')}: {_encode(policy_name)}, {_encode('decisions')}: [")

    def write(self, decision: Decision) -> None:
        separator = ",\n" if self.count else "\n"
        self.out.write(separator + _encode(decision_to_json(decision, self.detail)))
        self.count += 1

    def close(self) -> None:
        self.out.write("\n]}\n" if self.count else "]}\n")
        self.out.flush()


#: The C encoder, built once (json.dumps with options makes a new encoder per call).
_encode: Final = json.JSONEncoder().encode


__all__ = [
    "ALL_DETAIL",
    "Detail",
    "InputError",
    "Inputs",
    "JsonReportWriter",
    "ObjectError",
    "PolicyError",
    "ShadowTally",
    "compile_policy",
    "decision_to_json",
    "kubernetes_objects",
    "load_inputs",
    "load_policy_file",
    "read_documents",
    "report_to_json",
    "simulate",
    "volumes_to_json",
]
