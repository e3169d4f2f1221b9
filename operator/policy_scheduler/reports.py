"""Decisions rendered for people: the per-node table of ``simulate`` and ``explain``,
and the one-line summary of ``simulate -o summary``.

Table: for each pod, a headline with the chosen node (or the summary message when
nothing fits), then one row per evaluated node — feasible nodes by total score, each
priority's raw 0..10 score, each prioritizing extender's raw score (a column headed by
its urlPrefix without the scheme, ``EXT gpu:8888/scheduler``) and the weighted total;
refused nodes with the reasons their predicates or extenders gave. The chosen node is
marked with ``*``. For a pod with claims, a ``volumes:`` line under the headline says
how each binds there (``data -> pv-1``: the free PV it was matched with; ``cache ->
provisioned on node-2``; ``logs -> pv-9 (bound)``: bound before). A pod that fits
nowhere gets, under its headline, what preemption found when it was tried (``would
preempt ns/a, ns/b on node-3``, or ``no preemption: why``), and under the table its fit
hints, one line each (``hint: cpu request <= 1500m would fit node-2, node-5``), the
first :data:`MAX_HINT_LINES` with at most :data:`MAX_HINT_NODES` nodes named each
(``-o json`` has them all), or ``no hint: ...`` when none was found; nothing under a pod
whose attempt failed (an extender's error: the headline says which). Under the
headline, each Shadow policy's decision for the same pod (``shadow 'hdd' -> node-2``),
and after the last pod, one line per Shadow policy counting how its decisions compare
(:func:`shadow_tally_line`).

Summary: one line per decision, nothing else, so that ``grep``, ``wc -l`` and ``sort``
work on it: ``NS/POD -> NODE`` when the pod was placed, ``NS/POD: MESSAGE`` when not
(kube-scheduler's summary, ``0/5 nodes are available: ...``). A pod name holds no
space and no colon, so the first `` -> `` or ``: `` ends it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from .engine.algorithm import Decision
from .engine.compiler import CompiledPolicy
from .engine.hinting import Hint
from .engine.predicates.volumes import PodVolumes
from .engine.preemption import Preemption
from .state.shadows import (
    DIFFERENT_NODE,
    NEITHER_PLACED,
    ONLY_ACTIVE_PLACED,
    ONLY_SHADOW_PLACED,
    SAME_NODE,
    ShadowWindow,
)

MAX_HINT_LINES: Final = 10
MAX_HINT_NODES: Final = 5
NO_HINT: Final = "  no hint: no single change found that makes it fit"


def _column(name: str) -> str:
    return name.removesuffix("Priority") or name


def _extender_column(url_prefix: str, weight: int) -> str:
    name = "EXT " + url_prefix.split("://", 1)[-1].rstrip("/")
    return f"{name}(x{weight})" if weight != 1 else name


def render_decision(decision: Decision, policy: CompiledPolicy) -> str:
    pod = decision.pod.key
    if decision.node is None:
        lines = [f"{pod}: not scheduled: {decision.message}"]
        if decision.preemption is not None:
            lines.append(preemption_line(decision.preemption))
    else:
        lines = [
            f"{pod} -> {decision.node}  "
            f"({len(decision.feasible)} feasible of {decision.evaluated or decision.num_all_nodes}"
            f" evaluated, {decision.num_all_nodes} nodes)"
        ]
        if decision.volumes is not None:
            lines.append(_volumes_line(decision.volumes))
    if decision.gang is not None:
        gang = decision.gang
        placed = "placed with its group" if decision.node is not None else "none of it placed"
        lines.append(f"  gang {gang.key} (minMember {gang.min_member}): all or nothing, {placed}")
    for name, shadow in decision.shadows.items():
        outcome = (
            f"-> {shadow.node}" if shadow.node is not None else f"fits nowhere: {shadow.message}"
        )
        lines.append(f"  shadow {name!r} {outcome}")
    # Score columns only when some node was scored.
    priority_names = [entry.name for entry in policy.priorities] if decision.scores else []
    weights = {entry.name: entry.weight for entry in policy.priorities}
    header = ["", "NODE", "RESULT"]
    header += [
        f"{_column(n)}(x{weights[n]})" if weights[n] != 1 else _column(n) for n in priority_names
    ]
    extender_urls = list(decision.extender_scores) if decision.scores else []
    extender_weights: dict[str, int] = {}
    for extender in policy.extenders:
        extender_weights.setdefault(extender.url_prefix, extender.weight)
    header += [_extender_column(u, extender_weights.get(u, 1)) for u in extender_urls]
    if decision.scores:
        header.append("TOTAL")
    rows: list[list[str]] = []
    ranked = sorted(decision.scores.items(), key=lambda item: -item[1].total)
    for name, score in ranked:
        row = ["*" if name == decision.node else "", name, "fits"]
        row += [str(score.priorities.get(p, "")) for p in priority_names]
        row += [str(score.extenders.get(u, "")) for u in extender_urls]
        row.append(str(score.total))
        rows.append(row)
    failed_rows: list[list[str]] = []
    for name, reasons in decision.failed.items():
        failed_rows.append(["", name, "; ".join(reasons)])
    if not rows and not failed_rows:
        return "\n".join(lines)
    # Failed rows only fill NODE and RESULT; their reasons may be wider than the column.
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    for row in failed_rows:
        widths[1] = max(widths[1], len(row[1]))
    if rows:
        widths[2] = max(widths[2], len("fits"))
    lines.append("  " + _fmt(header, widths))
    lines.extend("  " + _fmt(row, widths) for row in rows)
    lines.extend("  " + _fmt(row, [*widths[:2], 0]) for row in failed_rows)
    if decision.node is None and not decision.error:
        lines.extend(_hint_lines(decision.hints))
    return "\n".join(lines)


def preemption_line(preemption: Preemption) -> str:
    """``would preempt ns/a, ns/b on node-3``, or why preemption would not help."""
    if preemption.node is None:
        return f"  no preemption: {preemption.reason}"
    if not preemption.victims:
        return f"  would be nominated to {preemption.node}: it needs no preemption there any more"
    victims = ", ".join(victim.key for victim in preemption.victims)
    return f"  would preempt {victims} on {preemption.node}"


def _volumes_line(volumes: PodVolumes) -> str:
    """How the pod's claims bind on its node, claim by claim."""
    parts = [f"{pvc.name} -> {pv.name} (bound)" for pvc, pv in volumes.bound]
    parts += [f"{pvc.name} -> {pv.name}" for pvc, pv in volumes.matched]
    parts += [f"{pvc.name} -> provisioned on {volumes.node}" for pvc in volumes.provisioned]
    return "  volumes: " + ", ".join(parts)


def _hint_lines(hints: Sequence[Hint]) -> list[str]:
    if not hints:
        return [NO_HINT]
    lines = []
    for hint in hints[:MAX_HINT_LINES]:
        named = ", ".join(hint.nodes[:MAX_HINT_NODES])
        more = len(hint.nodes) - MAX_HINT_NODES
        if more > 0:
            named += f" and {more} more"
        lines.append(f"  hint: {hint.change} would fit {named}")
    if len(hints) > MAX_HINT_LINES:
        lines.append(f"  ... {len(hints) - MAX_HINT_LINES} more hints (-o json lists them)")
    return lines


def _fmt(cells: Sequence[str], widths: Sequence[int]) -> str:
    parts = [c.ljust(w) for c, w in zip(cells, widths, strict=False)]
    return "  ".join(parts).rstrip()


def tally_line(policy_names: Iterable[str], scheduled: int, pods: int) -> str:
    """``policy 'default': 15/17 pods scheduled`` (pods counted by their last decision)."""
    names = sorted(policy_names)
    quoted = ", ".join(repr(name) for name in names) or "'default'"
    kind = "policy" if len(names) <= 1 else "policies"
    return f"{kind} {quoted}: {scheduled}/{pods} pods scheduled"


def render_report(policies: Mapping[str, CompiledPolicy], decisions: Sequence[Decision]) -> str:
    """The whole table; ``policies``: every policy that decided, by name.

    The headline counts pods, by their last decision (a pod that preempted is decided
    again, and that later decision says where it went).
    """
    last = {d.pod.uid: d for d in decisions}
    scheduled = sum(1 for d in last.values() if d.node is not None)
    blocks = [tally_line(policies, scheduled, len(last))]
    blocks += [render_decision(d, policies[d.policy]) for d in decisions]
    return "\n\n".join(blocks) + "\n"


def shadow_tally_line(name: str, window: ShadowWindow) -> str:
    """How a Shadow policy's decisions compare with the active ones, pods counted once."""
    counts = window.counts()
    return (
        f"shadow policy {name!r}: {len(window)} pod(s) compared: "
        f"{counts[SAME_NODE]} on the same node, {counts[DIFFERENT_NODE]} on another node, "
        f"{counts[ONLY_ACTIVE_PLACED]} placed by the active policy only, "
        f"{counts[ONLY_SHADOW_PLACED]} by the shadow only, {counts[NEITHER_PLACED]} by neither"
    )


def summary_line(decision: Decision) -> str:
    """``NS/POD -> NODE`` or ``NS/POD: MESSAGE`` (see the module doc), newline included."""
    if decision.node is not None:
        return f"{decision.pod.key} -> {decision.node}\n"
    message = " ".join(decision.message.split()) or "not scheduled"
    return f"{decision.pod.key}: {message}\n"
