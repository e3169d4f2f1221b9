"""Every built-in name of the contract is bound to a function through the compiler alone."""

from __future__ import annotations

import subprocess
import sys


def test_every_builtin_is_registered_in_a_fresh_interpreter() -> None:
    # A fresh interpreter: in this one, test modules have imported the families directly.
    code = (
        "from policy_scheduler import names\n"
        "from policy_scheduler.engine.compiler import REGISTRY\n"
        "missing = sorted(n for n in names.BUILTIN_PREDICATES if names.canonical_predicate(n)"
        " not in REGISTRY.predicates)\n"
        "missing += sorted(n for n in names.BUILTIN_PRIORITIES if n not in REGISTRY.priorities)\n"
        "kinds = set(names.PREDICATE_ARGUMENT_KINDS) - set(REGISTRY.predicate_factories)\n"
        "kinds |= set(names.PRIORITY_ARGUMENT_KINDS) - set(REGISTRY.priority_factories)\n"
        "print(missing, sorted(kinds))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[] []"
