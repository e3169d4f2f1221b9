"""kube-scheduler's plugin-set rules, one copy for a SchedulingPolicy and a configuration.

A point's plugins come from two places, as in kube-scheduler v1.30: the point's own
PluginSet (``spec.plugins.<point>``, a profile's ``plugins.<point>``) and ``multiPoint``.
Two steps make the list a point runs, whoever wrote the sets:

1. **Merge** (:func:`merge_plugin_set`, ``mergePluginSet`` of pkg/scheduler/apis/config/v1):
   a written set over the defaults. ``"*"`` in ``disabled`` drops every default, a name
   drops that default; a written entry named as a kept default replaces it *in place*
   (weight and all); the other written entries follow, in order. The disabled names of
   both are kept, for step 2.
2. **Expand** (:func:`expand_point`, NewFramework's ``expandMultiPointPlugins``, at one
   point): with ``"*"`` disabled at the point, only the point's own enabled plugins run;
   otherwise the point's entries that name a multiPoint plugin come first (in the point's
   order), then multiPoint's plugins that implement the point, not disabled there (in
   multiPoint's order, once each), then the point's other entries.

A configuration's defaults live in ``multiPoint`` (v1, v1beta3) or per point (v1beta2);
a SchedulingPolicy's defaults (PrioritySort, the PreFilter / PreScore / Reserve / PreBind
of the plugins named in ``predicates`` and ``priorities``, LegacyPreemption,
CheckVolumeBinding, DefaultBinder) stand where a v1 profile's defaults stand: in the
multiPoint of the point they run at, before the policy's own ``multiPoint`` entries. So
the same sets give the same lists either way (``schedconfig.expand_plugins`` and
``engine.compiler``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from ..policy import Path

#: In a PluginSet's ``disabled``: every default of the point (and multiPoint's plugins).
ALL: Final = "*"


@dataclass(frozen=True)
class Ref:
    """A plugin named in a PluginSet: its weight (None: unset) and where the file wrote it
    (None: a default)."""

    name: str
    weight: int | None = None
    path: Path | None = None


@dataclass(frozen=True)
class PluginSet:
    """A point's plugins: those enabled, in order, and the names disabled (``*``: all)."""

    enabled: tuple[Ref, ...] = ()
    disabled: tuple[str, ...] = ()


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Step 1 (module docstring): ``custom`` merged over ``default``.

    When a name is enabled twice in ``custom``, its last entry replaces the default and
    the first follows the defaults (the expansion then reports it twice).
    """
    disabled = set(custom.disabled) | set(default.disabled)
    last: dict[str, int] = {ref.name: index for index, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Ref] = []
    if ALL not in disabled:
        for ref in default.enabled:
            if ref.name in disabled:
                continue
            index = last.get(ref.name)
            if index is not None:
                ref = custom.enabled[index]
                replaced.add(index)
            enabled.append(ref)
    enabled += [ref for index, ref in enumerate(custom.enabled) if index not in replaced]
    return PluginSet(tuple(enabled), custom.disabled + default.disabled)


def expand_point(
    explicit: Sequence[str], multi: Sequence[str], disabled: Collection[str]
) -> list[str]:
    """Step 2 (module docstring) at one point: the names it runs, in order.

    ``explicit``: the point's own enabled plugins (merged, each once); ``multi``:
    multiPoint's plugins that implement the point, in order; ``disabled``: the names the
    point disables (``*``: multiPoint adds nothing here).
    """
    if ALL in disabled:
        return list(explicit)
    offered = {name for name in multi if name not in disabled}
    expanded: list[str] = []
    for name in multi:
        if name in offered and name not in explicit and name not in expanded:
            expanded.append(name)
    first = [name for name in explicit if name in offered]
    rest = [name for name in explicit if name not in offered]
    return first + expanded + rest
