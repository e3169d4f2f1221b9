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
from typing import Any, Final

from kubernetes_asyncio import client

from .kubeapi import CRD_GROUP, CRD_PLURAL, CRD_VERSION
from .permissions import watches

#: (group, version, plural, kind, namespaced) of every kind the scheduler reads.
KINDS: Final[tuple[tuple[str, str, str, str, bool], ...]] = (
    ("", "v1", "nodes", "Node", False),
    ("", "v1", "pods", "Pod", True),
    ("", "v1", "persistentvolumes", "PersistentVolume", False),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("", "v1", "services", "Service", True),
    ("", "v1", "replicationcontrollers", "ReplicationController", True),
    ("apps", "v1", "replicasets", "ReplicaSet", True),
    ("apps", "v1", "statefulsets", "StatefulSet", True),
    ("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    ("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    (CRD_GROUP, CRD_VERSION, CRD_PLURAL, "SchedulingPolicy", False),
)

for _group, _version, _plural, _kind, _namespaced in KINDS:
    watches(_group, _plural)


async def list_kind(
    api_client: client.ApiClient, group: str, version: str, plural: str, kind: str
) -> list[dict[str, Any]]:
    path = f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"
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
            raise RuntimeError(f"listing {plural}: HTTP {response.status}")
        data = json.loads(await response.read())
    finally:
        response.release()
    api_version = f"{group}/{version}" if group else version
    items: list[dict[str, Any]] = []
    for item in data.get("items") or []:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
        items.append(item)
    return items


async def list_cluster(api_client: client.ApiClient) -> list[dict[str, Any]]:
    """Every object of every kind in :data:`KINDS`, nodes first."""
    out: list[dict[str, Any]] = []
    for group, version, plural, kind, _ in KINDS:
        out.extend(await list_kind(api_client, group, version, plural, kind))
    return out
