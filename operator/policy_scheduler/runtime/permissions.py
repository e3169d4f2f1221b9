"""Every Kubernetes API permission the operator uses, declared where it is used.

API calls are made in :mod:`.kubeapi`, whose methods declare their (group, resource,
verb) with :func:`needs`; the kinds the operator watches declare list/watch through
:func:`watches`. :func:`required_rules` turns the declarations into RBAC rules, and
the Helm chart's ClusterRole is tested to be exactly that: nothing missing, nothing
more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_DECLARED: set[tuple[str, str, str]] = set()


def needs(group: str, resource: str, *verbs: str) -> Callable[[F], F]:
    """Declare that the decorated API call uses ``verbs`` on ``group``/``resource``."""
    for verb in verbs:
        _DECLARED.add((group, resource, verb))

    def mark(fn: F) -> F:
        return fn

    return mark


def watches(group: str, resource: str) -> None:
    """Declare a watched kind: the operator lists and watches it."""
    _DECLARED.add((group, resource, "list"))
    _DECLARED.add((group, resource, "watch"))


def required_rules() -> list[dict[str, list[str]]]:
    """RBAC PolicyRules, one per (group, resource), verbs sorted; stable order."""
    # Import the modules that declare, so the set is complete whoever asks.
    from .. import handlers  # noqa: F401
    from . import kubeapi  # noqa: F401

    by_resource: dict[tuple[str, str], set[str]] = {}
    for group, resource, verb in _DECLARED:
        by_resource.setdefault((group, resource), set()).add(verb)
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": sorted(verbs)}
        for (group, resource), verbs in sorted(by_resource.items())
    ]
