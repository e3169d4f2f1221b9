"""The cluster state the engine decides against.

:class:`ClusterState` holds one :class:`NodeInfo` per node, the placed pods (bound or
assumed) by uid, and the other kinds the predicates read (PVs, PVCs, StorageClasses,
CSINodes, Services and controllers). It is fed by ``simulate`` from files and by the
operator's cache from watches; both call the same ``set_*`` / ``remove_*`` methods, and
every call is idempotent, so a duplicate ADDED event changes nothing.

Nodes are listed the way kube-scheduler's NodeTree lists them: zones in the order they
were first seen, one node from each zone in turn. With ``percentageOfNodesToScore``
below 100, the sample a pod sees is then spread over zones.

A pod whose node is not (yet) known is kept and accounted for as soon as the node
appears, as the scheduler cache does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..objects import (
    REGION_LABELS,
    WORKLOAD_KINDS,
    ZONE_LABELS,
    CSINode,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    Workload,
    parse_csi_node,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_storage_class,
    parse_workload,
)
from .nodeinfo import NodeInfo

#: Kinds besides Pods and Nodes that the predicates read (what apply_object takes).
STORAGE_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode"})
OTHER_KINDS = STORAGE_KINDS | WORKLOAD_KINDS


def zone_key(node: Node) -> str:
    """Region and zone of a node (utilnode.GetZoneKey); "" for a node without both."""
    labels = node.labels
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class ClusterState:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.pods: dict[str, Pod] = {}  # placed pods by uid
        self.persistent_volumes: dict[str, PersistentVolume] = {}
        self.claims: dict[str, PersistentVolumeClaim] = {}  # "ns/name"
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.workloads: dict[str, Workload] = {}  # "Kind/ns/name"
        self.image_nodes: dict[str, int] = {}  # image name -> nodes that have it
        self._zones: dict[str, list[str]] = {}  # zone key -> node names, in arrival order
        self._ordered: list[NodeInfo] | None = None
        #: Bumped on every change; lets per-cycle caches know the world moved.
        self.generation = 0

    # -- nodes ---------------------------------------------------------------------

    def set_node(self, node: Node) -> None:
        info = self.nodes.get(node.name)
        if info is None:
            info = NodeInfo(node)
            self.nodes[node.name] = info
            self._zones.setdefault(zone_key(node), []).append(node.name)
            self._ordered = None
            for pod in self.pods.values():
                if pod.node_name == node.name:
                    info.add_pod(pod)
        else:
            old = info.node
            self._count_images(old, -1)
            if zone_key(old) != zone_key(node):
                self._zones[zone_key(old)].remove(node.name)
                self._zones.setdefault(zone_key(node), []).append(node.name)
                self._ordered = None
            info.set_node(node)
        self._count_images(node, 1)
        self.generation += 1

    def remove_node(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is None:
            return
        self._count_images(info.node, -1)
        zone = self._zones[zone_key(info.node)]
        zone.remove(name)
        if not zone:
            del self._zones[zone_key(info.node)]
        self._ordered = None
        self.generation += 1

    def _count_images(self, node: Node, sign: int) -> None:
        # A node counts once per image name, however often it lists the name.
        for name in {name for image in node.images for name in image.names}:
            total = self.image_nodes.get(name, 0) + sign
            if total > 0:
                self.image_nodes[name] = total
            else:
                self.image_nodes.pop(name, None)

    def ordered_nodes(self) -> list[NodeInfo]:
        """Nodes interleaved across zones, as NodeTree.Next() hands them out."""
        if self._ordered is None:
            zones = [names for names in self._zones.values() if names]
            ordered: list[NodeInfo] = []
            depth = 0
            while True:
                added = False
                for names in zones:
                    if depth < len(names):
                        ordered.append(self.nodes[names[depth]])
                        added = True
                if not added:
                    break
                depth += 1
            self._ordered = ordered
        return self._ordered

    # -- pods ----------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        """Place a pod (bound or assumed) on ``pod.node_name``; replaces a known copy."""
        if not pod.node_name:
            raise ValueError(f"pod {pod.key} has no node to be placed on")
        old = self.pods.get(pod.uid)
        if old is not None and old.node_name != pod.node_name:
            self._unplace(old)
        self.pods[pod.uid] = pod
        info = self.nodes.get(pod.node_name)
        if info is not None:
            info.add_pod(pod)
        self.generation += 1

    def remove_pod(self, uid: str) -> Pod | None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            self._unplace(pod)
            self.generation += 1
        return pod

    def _unplace(self, pod: Pod) -> None:
        info = self.nodes.get(pod.node_name)
        if info is not None:
            info.remove_pod(pod)

    def pods_in(self, namespaces: Iterable[str] | None = None) -> Iterator[Pod]:
        """Placed pods on known nodes, optionally limited to some namespaces."""
        wanted = None if namespaces is None else set(namespaces)
        for info in self.nodes.values():
            for pod in info.pods.values():
                if wanted is None or pod.namespace in wanted:
                    yield pod

    # -- other kinds ---------------------------------------------------------------

    def apply_object(self, raw: Mapping[str, Any]) -> bool:
        """Parse and store a PV, PVC, StorageClass, CSINode or workload; False for others.

        Raises ObjectError for a malformed object of a known kind.
        """
        kind = raw.get("kind")
        if kind == "PersistentVolume":
            self.set_persistent_volume(parse_persistent_volume(raw))
        elif kind == "PersistentVolumeClaim":
            self.set_claim(parse_persistent_volume_claim(raw))
        elif kind == "StorageClass":
            self.set_storage_class(parse_storage_class(raw))
        elif kind == "CSINode":
            self.set_csi_node(parse_csi_node(raw))
        elif kind in WORKLOAD_KINDS:
            self.set_workload(parse_workload(raw))
        else:
            return False
        return True

    def delete_object(self, raw: Mapping[str, Any]) -> bool:
        """Forget an object of a kind :meth:`apply_object` takes; False for others."""
        kind = raw.get("kind")
        meta = raw.get("metadata") or {}
        name = str(meta.get("name", ""))
        key = f"{meta.get('namespace') or 'default'}/{name}"
        if kind == "PersistentVolume":
            self.remove_persistent_volume(name)
        elif kind == "PersistentVolumeClaim":
            self.remove_claim(key)
        elif kind == "StorageClass":
            self.remove_storage_class(name)
        elif kind == "CSINode":
            self.remove_csi_node(name)
        elif kind in WORKLOAD_KINDS:
            self.remove_workload(f"{kind}/{key}")
        else:
            return False
        return True

    def set_persistent_volume(self, pv: PersistentVolume) -> None:
        self.persistent_volumes[pv.name] = pv
        self.generation += 1

    def remove_persistent_volume(self, name: str) -> None:
        if self.persistent_volumes.pop(name, None) is not None:
            self.generation += 1

    def set_claim(self, pvc: PersistentVolumeClaim) -> None:
        self.claims[pvc.key] = pvc
        self.generation += 1

    def remove_claim(self, key: str) -> None:
        if self.claims.pop(key, None) is not None:
            self.generation += 1

    def set_storage_class(self, sc: StorageClass) -> None:
        self.storage_classes[sc.name] = sc
        self.generation += 1

    def remove_storage_class(self, name: str) -> None:
        if self.storage_classes.pop(name, None) is not None:
            self.generation += 1

    def set_csi_node(self, csi: CSINode) -> None:
        self.csi_nodes[csi.name] = csi
        self.generation += 1

    def remove_csi_node(self, name: str) -> None:
        if self.csi_nodes.pop(name, None) is not None:
            self.generation += 1

    def set_workload(self, workload: Workload) -> None:
        self.workloads[workload.key] = workload
        self.generation += 1

    def remove_workload(self, key: str) -> None:
        if self.workloads.pop(key, None) is not None:
            self.generation += 1
