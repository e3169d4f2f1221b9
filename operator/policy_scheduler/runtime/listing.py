"""One LIST of every kind the scheduler reads, as raw API dicts.

Used twice: to fill the cache before the first decision when this replica becomes the
leader (kube-scheduler's WaitForCacheSync: deciding against a half-listed cluster would
place pods on the first nodes that happen to be known), and by ``explain`` to build the
same picture read-only. Items of a LIST carry no ``kind``/``apiVersion``; they are
filled in here so that the objects look exactly like watch events.

Responses are read as raw JSON (``_preload_content=False``): the generated models of
kubernetes-asyncio are slow to build and would only be turned back into dicts.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio import client

from ..kinds import KINDS, Kind


async def list_kind(api_client: client.ApiClient, kind: Kind) -> list[dict[str, Any]]:
    if kind.group:
        path = f"/apis/{kind.group}/{kind.version}/{kind.plural}"
    else:
        path = f"/api/{kind.version}/{kind.plural}"
    response = await api_client.call_api(
        path,
        "GET",
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    try:
        if response.status == 404:
            return []  # the kind is not served (e.g. the CRD is not installed yet)
        if response.status >= 300:
            raise RuntimeError(f"listing {kind.plural}: HTTP {response.status}")
        data = json.loads(await response.read())
    finally:
        response.release()
    items: list[dict[str, Any]] = []
    for item in data.get("items") or []:
        item.setdefault("apiVersion", kind.api_version)
        item.setdefault("kind", kind.kind)
        items.append(item)
    return items


async def list_cluster(api_client: client.ApiClient) -> list[dict[str, Any]]:
    """Every object of every kind in :data:`..kinds.KINDS`, nodes first."""
    out: list[dict[str, Any]] = []
    for kind in KINDS:
        out.extend(await list_kind(api_client, kind))
    return out
