"""RBAC permissions, declared where the API call that needs them is written.

:mod:`.kubeapi`'s methods declare their (group, resource, verbs) with :func:`needs`;
:func:`.kubeapi.required_rules` adds list/watch for every kind read and turns the lot
into RBAC rules with :func:`rules`. This module imports nothing of the project, so the
declarations never make an import run back up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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


def declared() -> set[tuple[str, str, str]]:
    """Every (group, resource, verb) declared so far."""
    return set(_DECLARED)


def rules(permissions: Iterable[tuple[str, str, str]]) -> list[dict[str, list[str]]]:
    """RBAC PolicyRules, one per (group, resource), verbs sorted; stable order."""
    by_resource: dict[tuple[str, str], set[str]] = {}
    for group, resource, verb in permissions:
        by_resource.setdefault((group, resource), set()).add(verb)
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": sorted(verbs)}
        for (group, resource), verbs in sorted(by_resource.items())
    ]
