"""One LIST of every kind the scheduler reads, as raw API dicts.

Used by ``explain`` to build, read-only, the picture the operator builds for itself
(the operator lists kind by kind, each LIST with the moment it began, to reconcile: see
``Operator.resync`` in ``operating.py``). Each kind is listed through
:meth:`.kubeapi.KubeApi.list_objects` (paginated, with deadlines and retries).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..kinds import KINDS, Kind
from .kubeapi import Api


async def list_cluster(api: Api, kinds: Iterable[Kind] = KINDS) -> list[dict[str, Any]]:
    """Every object of every kind in ``kinds`` (all by default), nodes first."""
    out: list[dict[str, Any]] = []
    for kind in kinds:
        out.extend(await api.list_objects(kind))
    return out
