"""Decisions rendered for people: the per-node table of ``simulate`` and ``explain``,
and the one-line summary of ``simulate -o summary``.

Table: for each pod, a headline with the chosen node (or the summary message when
nothing fits), then one row per evaluated node — feasible nodes by total score, each
priority's raw 0..10 score and the weighted total; refused nodes with the reasons their
predicates gave. The chosen node is marked with ``*``.

Summary: one line per decision, nothing else, so that ``grep``, ``wc -l`` and ``sort``
work on it: ``NS/POD -> NODE`` when the pod was placed, ``NS/POD: MESSAGE`` when not
(kube-scheduler's summary, ``0/5 nodes are available: ...``). A pod name holds no
space and no colon, so the first `` -> `` or ``: `` ends it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .engine.algorithm import Decision
from .engine.compiler import CompiledPolicy


def _column(name: str) -> str:
    return name.removesuffix("Priority") or name


def render_decision(decision: Decision, policy: CompiledPolicy) -> str:
    pod = decision.pod.key
    if decision.node is None:
        lines = [f"{pod}: not scheduled: {decision.message}"]
    else:
        lines = [
            f"{pod} -> {decision.node}  "
            f"({len(decision.feasible)} feasible of {decision.evaluated or decision.num_all_nodes}"
            f" evaluated, {decision.num_all_nodes} nodes)"
        ]
    # Score columns only when some node was scored.
    priority_names = [entry.name for entry in policy.priorities] if decision.scores else []
    weights = {entry.name: entry.weight for entry in policy.priorities}
    header = ["", "NODE", "RESULT"]
    header += [
        f"{_column(n)}(x{weights[n]})" if weights[n] != 1 else _column(n) for n in priority_names
    ]
    if decision.scores:
        header.append("TOTAL")
    rows: list[list[str]] = []
    ranked = sorted(decision.scores.items(), key=lambda item: -item[1].total)
    for name, score in ranked:
        row = ["*" if name == decision.node else "", name, "fits"]
        row += [str(score.priorities.get(p, "")) for p in priority_names]
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
    return "\n".join(lines)


def _fmt(cells: Sequence[str], widths: Sequence[int]) -> str:
    parts = [c.ljust(w) for c, w in zip(cells, widths, strict=False)]
    return "  ".join(parts).rstrip()


def render_report(policy: CompiledPolicy, decisions: Sequence[Decision]) -> str:
    scheduled = sum(1 for d in decisions if d.node is not None)
    blocks = [f"policy {policy.name!r}: {scheduled}/{len(decisions)} pods scheduled"]
    blocks += [render_decision(d, policy) for d in decisions]
    return "\n\n".join(blocks) + "\n"


def summary_line(decision: Decision) -> str:
    """``NS/POD -> NODE`` or ``NS/POD: MESSAGE`` (see the module doc), newline included."""
    if decision.node is not None:
        return f"{decision.pod.key} -> {decision.node}\n"
    message = " ".join(decision.message.split()) or "not scheduled"
    return f"{decision.pod.key}: {message}\n"
