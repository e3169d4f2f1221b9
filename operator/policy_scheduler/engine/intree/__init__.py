"""kube-scheduler v1.25-v1.30's in-tree plugins, one module per family.

Each plugin class implements the points it has upstream, with that era's semantics,
failure reasons, argument models (``pluginargs``) and defaults, and gives the engine's
fast path its Filter as a predicate (``predicate()``) and its Score + NormalizeScore as a
priority (``priority()``). ``engine.plugins.INTREE_CLASSES`` names where each lives, and
imports a family only when a policy names one of its plugins (the families import the
compiler and preemption, which find plugins through ``engine.plugins``: a static import
there would be a cycle). PrioritySort and DefaultBinder are the legacy pipeline's own
(``engine/builtins.py``), the same in both eras.
"""
