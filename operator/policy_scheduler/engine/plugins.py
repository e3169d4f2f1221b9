"""Which plugins exist, and how a policy's plugin is made: found, its args checked, built.

Two sources, one namespace:

* the built-in plugins: the legacy stages (:mod:`.builtins`) and kube-scheduler's in-tree
  plugins of v1.25-v1.30 (:data:`INTREE`, filled by ``engine/intree``);
* installed packages: every entry point of the group ``policy_scheduler.plugins``
  (``Name = "package.module:Class"``), imported the first time a policy names it. A
  built-in name cannot be taken over by a package.

Loading an installed plugin runs its package's import, which may take any time: it runs
on a thread of its own (:class:`_Load`, one per entry point), and whoever needs the
class waits for it until :data:`LOAD_DEADLINE` seconds after the load began, then gets
``PluginLoadFailed`` ("timed out after N s"). The operator waits without holding its
event loop (:func:`load_named`, before a policy is compiled), so a hung import costs only
the policies naming that plugin; the CLI waits on its own thread, so it answers within
the deadline. A load that finished is kept; one that failed is tried again next time. A
thread stuck in an import holds the import lock of that module only.

A package installed while the process runs is found: before a load begins, the import
system's caches are dropped and ``.pth`` files that appeared in a site directory since the
start (what ``pip install -e`` writes) are applied as ``site`` applies them at start-up
(:func:`refresh_import_paths`).

:func:`make_plugin` checks a plugin's arguments against its ``Args`` pydantic model
before the plugin is made, so that bad arguments never reach a running plugin: errors
name the field (``spec.pluginConfig[0].args.label: field required``). Failures carry the
Accepted condition's reason: ``PluginNotFound``, ``PluginLoadFailed`` (its package would
not import, or the entry point is not a plugin class), ``InvalidArgs``, ``PluginFailed``
(its constructor raised).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import site
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
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


#: (when :func:`names.installed_plugin_names` last read the metadata, what was found):
#: the entry points are read again only when the names are (a policy naming thousands of
#: plugins looks each up; reading the metadata costs milliseconds every time).
_entry_points_cache: tuple[float, dict[str, EntryPoint]] | None = None


def installed_entry_points() -> dict[str, EntryPoint]:
    """The group's entry points by name (metadata only: nothing is imported), read
    again whenever :func:`names.installed_plugin_names` reads the installed names."""
    global _entry_points_cache
    names.installed_plugin_names()
    read_at = names.installed_names_read_at()
    if _entry_points_cache is not None and _entry_points_cache[0] == read_at:
        return dict(_entry_points_cache[1])
    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=names.PLUGIN_ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry)
    _entry_points_cache = (read_at, found)
    return dict(found)


#: How long loading an installed plugin (its package's import) may take, in seconds
#: (environment ``POLICY_SCHEDULER_PLUGIN_LOAD_TIMEOUT``; default 10).
LOAD_DEADLINE: float = 10.0


def _load_deadline(text: str | None) -> float:
    """The environment's load deadline; a value that is not a positive number is
    ignored with a one-line warning (the default stands)."""
    if not text:
        return LOAD_DEADLINE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        logger.warning(
            "POLICY_SCHEDULER_PLUGIN_LOAD_TIMEOUT: must be a positive number of seconds, "
            "got %r; using %g",
            text,
            LOAD_DEADLINE,
        )
        return LOAD_DEADLINE
    return value


LOAD_DEADLINE = _load_deadline(os.environ.get("POLICY_SCHEDULER_PLUGIN_LOAD_TIMEOUT"))


def _site_dirs() -> list[str]:
    """The directories whose ``.pth`` files Python applies at start-up."""
    found = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    return found


def _pth_files() -> set[Path]:
    found: set[Path] = set()
    for directory in _site_dirs():
        try:
            found.update(Path(directory).glob("*.pth"))
        except OSError:
            continue
    return found


#: The ``.pth`` files applied already (those of the start, read when this module is).
_applied_pth: set[Path] = _pth_files()
_refresh_lock = threading.Lock()


def refresh_import_paths() -> None:
    """Make packages installed since the start importable: new ``.pth`` files applied
    (their paths on ``sys.path``, their ``import`` lines run, as ``site`` does), the
    import system's and the metadata's caches dropped."""
    with _refresh_lock:
        for pth in sorted(_pth_files() - _applied_pth):
            _applied_pth.add(pth)
            _apply_pth(pth)
        importlib.invalidate_caches()


def _apply_pth(pth: Path) -> None:
    try:
        lines = pth.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        try:
            if line.startswith(("import ", "import\t")):
                exec(line)  # what site.addpackage does with such a line
                continue
            path = os.path.join(str(pth.parent), line.rstrip())
            if path not in sys.path and os.path.exists(path):
                sys.path.append(path)
        except Exception:
            logger.debug("%s: could not apply %r", pth, line, exc_info=True)


class _Load:
    """One entry point's load, on a thread of its own: a hung import holds only it."""

    def __init__(self, name: str, entry: EntryPoint) -> None:
        self.entry = entry
        self.started = time.monotonic()
        self.done = threading.Event()
        self.loaded: Any = None
        self.error: BaseException | None = None
        threading.Thread(target=self._run, name=f"load-plugin-{name}", daemon=True).start()

    def _run(self) -> None:
        try:
            self.loaded = self.entry.load()
        except BaseException as exc:  # a plugin's import may raise anything
            self.error = exc
        finally:
            self.done.set()

    def remaining(self) -> float:
        return self.started + LOAD_DEADLINE - time.monotonic()


_loads: dict[tuple[str, str], _Load] = {}
_loads_lock = threading.Lock()


#: How often an unknown name may have the installed packages read again (each read is
#: some 10-20 ms: a policy naming 2000 unknown plugins must not cost 2000 of them).
REFRESH_INTERVAL: Final = 1.0
_last_refresh = float("-inf")


def _refresh_installed(*, force: bool = False) -> None:
    """The installed packages read again (a package installed since), at most once per
    :data:`REFRESH_INTERVAL` unless ``force``."""
    global _last_refresh
    now = time.monotonic()
    if not force and now - _last_refresh < REFRESH_INTERVAL:
        return
    _last_refresh = now
    refresh_import_paths()
    names.installed_plugin_names(max_age=0)


def _entry(name: str, *, refresh: bool = True) -> EntryPoint | None:
    """The installed entry point called ``name``; when missing and ``refresh``, the
    installed packages are read again (rate-limited) and it is looked up once more."""
    entry = installed_entry_points().get(name)
    if entry is None and refresh:
        _refresh_installed()
        entry = installed_entry_points().get(name)
    return entry


def begin_load(name: str, *, refresh: bool = True) -> _Load | None:
    """The load of the installed plugin ``name``, begun now unless under way or done;
    None for a built-in or unknown name."""
    if name in BUILTIN_PLUGINS or name in INTREE_CLASSES:
        return None
    entry = _entry(name, refresh=refresh)
    if entry is None:
        return None
    key = (name, entry.value)
    with _loads_lock:
        load = _loads.get(key)
        if load is not None and load.done.is_set() and load.error is not None:
            load = None  # a failed load is tried again (the package may be fixed)
        if load is None:
            refresh_import_paths()
            load = _loads[key] = _Load(name, entry)
    return load


async def load_named(plugin_names: Iterable[str]) -> None:
    """Begin loading each installed plugin of ``plugin_names`` and wait, without holding
    the event loop, until each has loaded or its deadline has passed."""
    wanted = {n for n in set(plugin_names) if n not in BUILTIN_PLUGINS and n not in INTREE_CLASSES}
    installed = installed_entry_points()
    if any(name not in installed for name in wanted):
        _refresh_installed(force=True)  # once for all of them: a package installed since
    loads = [load for name in wanted if (load := begin_load(name, refresh=False)) is not None]
    for load in loads:
        while not load.done.is_set() and load.remaining() > 0:
            await asyncio.sleep(min(0.05, load.remaining()))


def named_in(raw: Any) -> set[str]:
    """Every string under a ``name`` key in a policy object's spec: the plugins it may
    name (a superset; only installed plugins' names matter to :func:`load_named`)."""
    found: set[str] = set()
    stack = [raw.get("spec") if isinstance(raw, Mapping) else None]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            value = item.get("name")
            if isinstance(value, str):
                found.add(value)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def plugin_class(name: str) -> type[Plugin]:
    """The class of the plugin called ``name``; :class:`PluginProblem` if there is none,
    or if its package has not loaded by its deadline (this waits for it until then)."""
    builtin = BUILTIN_PLUGINS.get(name) or intree_class(name)
    if builtin is not None:
        return builtin
    load = begin_load(name)
    if load is None:
        raise PluginProblem(
            f"no plugin {name!r} is installed (`policy-scheduler plugins` lists them)",
            PLUGIN_NOT_FOUND,
        )
    entry = load.entry
    if not load.done.wait(max(0.0, load.remaining())):
        raise PluginProblem(
            f"plugin {name!r} ({entry.value}) failed to load: its import timed out after "
            f"{LOAD_DEADLINE:g} s",
            PLUGIN_LOAD_FAILED,
        )
    loaded = load.loaded
    if load.error is not None:
        exc = load.error
        # The one line below is what people read; the traceback is for --log-level debug.
        logger.debug("plugin %s (%s) failed to load", name, entry.value, exc_info=exc)
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
