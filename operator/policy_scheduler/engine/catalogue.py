"""Import every predicate and priority family so that each registers its names.

The families register themselves with the decorators of :mod:`.framework`; this module
is the one place that lists them, and the compiler imports it.
"""

from __future__ import annotations

from .predicates import general, interpod, labels, spreading, taints, volumes  # noqa: F401
from .priorities import affinity, interpod as interpod_priority, resources, spreading as spreading_priority, misc  # noqa: F401
