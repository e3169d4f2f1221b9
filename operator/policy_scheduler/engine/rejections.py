"""Which plugins rejected a pod that fits nowhere (kube-scheduler's unschedulablePlugins).

A PreFilter refusal names its plugins itself (``Decision.rejected_by``: every PreFilter
that said Unschedulable, the one that said UnschedulableAndUnresolvable, or those whose
node sets did not meet, as v1.34's RunPreFilterPlugins returns them); a Reserve or
Permit refusal names its plugin (``Status.plugin``, :func:`refused_by`). For Filter:
the filter's fast path records each refused node's reasons, not who gave them; once an
attempt found no node, :func:`rejecting_plugins` asks again, off that path: for each
distinct set of reasons, on one node that gave it, every predicate of the policy runs
with the attempt's cycle state, and those whose reasons are among the node's are the
rejecting ones. The queue wakes the pod only on events these plugins register
(:mod:`.events`). When the answer cannot be trusted (an error, a node gone, reasons no
predicate gives again, or too many distinct sets) it is None,
and any change that could help wakes the pod, as before hints.
"""

from __future__ import annotations

from collections.abc import Mapping

from .algorithm import Decision
from .compiler import CompiledPolicy
from .nodeinfo import NodeInfo

#: Beyond this many distinct reason sets, the attribution is not tried (None).
MAX_REASON_SETS = 16


def rejecting_plugins(
    policy: CompiledPolicy, decision: Decision, nodes: Mapping[str, NodeInfo]
) -> frozenset[str] | None:
    """The names (as the policy wrote them) of the predicates and Filter plugins that
    refused the pod; None when not known (module docstring)."""
    if decision.error:
        return None
    if decision.rejected_by is not None:
        return decision.rejected_by or None
    if not decision.failed or decision.state is None:
        return None
    samples: dict[frozenset[str], str] = {}
    for node, reasons in decision.failed.items():
        samples.setdefault(frozenset(str(reason) for reason in reasons), node)
        if len(samples) > MAX_REASON_SETS:
            return None
    names: set[str] = set()
    for given, node in samples.items():
        info = nodes.get(node)
        if info is None:
            return None
        found = False
        for entry in policy.predicates:
            try:
                result = entry.fn(decision.pod, info, decision.state)
            except Exception:
                return None
            if result and given.intersection(str(reason) for reason in result):
                names.add(entry.name)
                found = True
        if not found:
            return None
    return frozenset(names) or None


def refused_by(plugin: str) -> frozenset[str] | None:
    """The plugins a Reserve or Permit refusal (or a wait at Permit) names: its own,
    as v1.34 files such a pod (UnschedulablePlugins of one); None when unnamed."""
    return frozenset((plugin,)) if plugin else None
