"""Which plugins exist, and how a policy's plugin is made: found, its args checked, built.

Two sources, one namespace:

* the built-in plugins: the legacy stages (:mod:`.builtins`) and kube-scheduler's in-tree
  plugins of v1.25-v1.30 (:data:`INTREE`, filled by ``engine/intree``);
* installed packages: every entry point of the group ``policy_scheduler.plugins``
  (``Name = "package.module:Class"``), imported the first time a policy names it. A
  built-in name cannot be taken over by a package.

:func:`make_plugin` checks a plugin's arguments against its ``Args`` pydantic model
before the plugin is made, so that bad arguments never reach a running plugin: errors
name the field (``spec.pluginConfig[0].args.label: field required``). Failures carry the
Accepted condition's reason: ``PluginNotFound``, ``PluginLoadFailed`` (its package would
not import, or the entry point is not a plugin class), ``InvalidArgs``, ``PluginFailed``
(its constructor raised).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from .. import names
from ..policy import INVALID_ARGS, PLUGIN_NOT_FOUND, format_path
from .builtins import BUILTIN_PLUGINS
from .interface import Handle, Plugin, points_of

logger = logging.getLogger(__name__)

PLUGIN_LOAD_FAILED: Final = "PluginLoadFailed"
PLUGIN_FAILED: Final = "PluginFailed"
WRONG_EXTENSION_POINT: Final = "PluginNotAtPoint"

#: kube-scheduler v1.25-v1.30's in-tree plugins: name -> "module:Class" in
#: ``engine/intree``, imported by name (the families import the compiler, which imports
#: this module: a static import would be a cycle). PrioritySort and DefaultBinder are the
#: legacy pipeline's own (``builtins``), the same in both eras.
INTREE_CLASSES: Final[dict[str, str]] = {
    "SchedulingGates": "schedulinggates:SchedulingGates",
    "NodeUnschedulable": "nodeunschedulable:NodeUnschedulable",
    "NodeName": "nodename:NodeName",
    "TaintToleration": "tainttoleration:TaintToleration",
    "NodeAffinity": "nodeaffinity:NodeAffinity",
    "NodePorts": "nodeports:NodePorts",
    "NodeResourcesFit": "noderesources:NodeResourcesFit",
    "NodeResourcesBalancedAllocation": "noderesources:NodeResourcesBalancedAllocation",
    "ImageLocality": "imagelocality:ImageLocality",
    "VolumeRestrictions": "volumerestrictions:VolumeRestrictions",
    "NodeVolumeLimits": "nodevolumelimits:NodeVolumeLimits",
    "EBSLimits": "nodevolumelimits:EBSLimits",
    "GCEPDLimits": "nodevolumelimits:GCEPDLimits",
    "AzureDiskLimits": "nodevolumelimits:AzureDiskLimits",
    "CinderLimits": "nodevolumelimits:CinderLimits",
    "VolumeBinding": "volumebinding:VolumeBinding",
    "VolumeZone": "volumezone:VolumeZone",
    "PodTopologySpread": "podtopologyspread:PodTopologySpread",
    "InterPodAffinity": "interpodaffinity:InterPodAffinity",
    "DefaultPreemption": "defaultpreemption:DefaultPreemption",
    "DynamicResources": "dynamicresources:DynamicResources",
}
_INTREE_PACKAGE: Final = __name__.rpartition(".")[0] + ".intree"
#: The in-tree classes imported so far.
INTREE: dict[str, type[Plugin]] = {}


class PluginProblem(Exception):
    """Why a plugin cannot be used: the message (no path) and the Accepted reason."""

    def __init__(self, message: str, reason: str) -> None:
        self.reason = reason
        super().__init__(message)


def builtin_plugins() -> dict[str, type[Plugin]]:
    """Every built-in plugin class, the in-tree families imported (``plugins`` lists)."""
    for name in INTREE_CLASSES:
        intree_class(name)
    return {**BUILTIN_PLUGINS, **INTREE}


def intree_class(name: str) -> type[Plugin] | None:
    """The in-tree plugin called ``name``, its family imported the first time."""
    found = INTREE.get(name)
    if found is None and name in INTREE_CLASSES:
        module, _, attribute = INTREE_CLASSES[name].partition(":")
        loaded = getattr(importlib.import_module(f"{_INTREE_PACKAGE}.{module}"), attribute)
        found = INTREE[name] = loaded
    return found


def installed_entry_points() -> dict[str, EntryPoint]:
    """The group's entry points by name (metadata only: nothing is imported)."""
    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=names.PLUGIN_ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry)
    return found


def plugin_class(name: str) -> type[Plugin]:
    """The class of the plugin called ``name``; :class:`PluginProblem` if there is none."""
    builtin = BUILTIN_PLUGINS.get(name) or intree_class(name)
    if builtin is not None:
        return builtin
    entry = installed_entry_points().get(name)
    if entry is None:
        raise PluginProblem(
            f"no plugin {name!r} is installed (`policy-scheduler plugins` lists them)",
            PLUGIN_NOT_FOUND,
        )
    try:
        loaded = entry.load()
    except Exception as exc:
        # The one line below is what people read; the traceback is for --log-level debug.
        logger.debug("plugin %s (%s) failed to load", name, entry.value, exc_info=True)
        raise PluginProblem(
            f"plugin {name!r} ({entry.value}) failed to load: {type(exc).__name__}: {exc}",
            PLUGIN_LOAD_FAILED,
        ) from None
    if not (isinstance(loaded, type) and issubclass(loaded, Plugin)):
        raise PluginProblem(
            f"plugin {name!r} ({entry.value}) is not a policy_scheduler.framework.Plugin class",
            PLUGIN_LOAD_FAILED,
        )
    if not points_of(loaded):
        raise PluginProblem(
            f"plugin {name!r} ({entry.value}) implements no extension point",
            PLUGIN_LOAD_FAILED,
        )
    return loaded


def check_args(cls: type[Plugin], raw: Mapping[str, Any] | None, where: str) -> Any:
    """The plugin's arguments as its ``Args`` model (defaults filled in), or None for a
    plugin that takes none; :class:`PluginProblem` (InvalidArgs) naming the field."""
    model = cls.Args
    if model is None:
        if raw:
            raise PluginProblem(
                f"{where}: plugin {cls.name or '?'} takes no arguments", INVALID_ARGS
            )
        return None
    try:
        return model.model_validate(dict(raw or {}))
    except ValidationError as exc:
        lines = [f"{where}{_path(error['loc'])}: {_message(error)}" for error in exc.errors()]
        raise PluginProblem("\n".join(lines), INVALID_ARGS) from None


def _path(loc: tuple[Any, ...]) -> str:
    text = format_path(tuple(loc))
    if not text:
        return ""
    return text if text.startswith("[") else f".{text}"


def _message(error: Any) -> str:
    text = str(error.get("msg", "invalid"))
    text = text[:1].lower() + text[1:]
    if error.get("type") not in ("missing", "extra_forbidden"):
        value = error.get("input")
        shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
        text += f", got {shown[:80]}"
    return text


def make_plugin(name: str, cls: type[Plugin], args: Any, handle: Handle) -> Plugin:
    """The plugin made with its checked arguments; :class:`PluginProblem` if it raises."""
    try:
        plugin = cls(args, handle)
    except Exception as exc:
        logger.debug("plugin %s failed to start", name, exc_info=True)
        raise PluginProblem(
            f"plugin {name!r} failed to start: {type(exc).__name__}: {exc}", PLUGIN_FAILED
        ) from None
    if not plugin.name:
        plugin.name = name
    return plugin


def describe(cls: type[Plugin]) -> dict[str, Any]:
    """A plugin class for people: its points and its arguments' JSON schema."""
    model: type[BaseModel] | None = cls.Args
    return {
        "points": list(points_of(cls)),
        "args": model.model_json_schema() if model is not None else None,
        "doc": (cls.__doc__ or "").strip().split("\n\n")[0],
    }
