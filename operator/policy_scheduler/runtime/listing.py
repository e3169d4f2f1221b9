"""One LIST of every kind the scheduler reads, as raw API dicts.

Used to fill the cache before the first decision when this replica becomes the leader
(kube-scheduler's WaitForCacheSync: deciding against a half-listed cluster would place
pods on the first nodes that happen to be known), to reconcile the cache with the API
after the watches were down, and by ``explain`` to build the same picture read-only.
Each kind is listed through :meth:`.kubeapi.KubeApi.list_objects` (paginated, with
deadlines and retries).
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
