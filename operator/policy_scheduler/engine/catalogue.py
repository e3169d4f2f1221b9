"""Import every predicate and priority family so that each registers its names.

The families register themselves with the decorators of :mod:`.functions`; this module
is the one place that lists them, and the compiler imports it. ``FAMILIES`` keeps the
imports used, so no linter "fix" can drop one (a test checks every built-in name is
registered through this module alone).
"""

from __future__ import annotations

from types import ModuleType

from .predicates import general, interpod, labels, spreading, taints, volumes
from .priorities import affinity, misc, resources
from .priorities import interpod as interpod_priorities
from .priorities import spreading as spreading_priorities

FAMILIES: tuple[ModuleType, ...] = (
    general,
    taints,
    labels,
    volumes,
    interpod,
    spreading,
    resources,
    affinity,
    misc,
    interpod_priorities,
    spreading_priorities,
)
