"""The Node: its model and :func:`parse_node`.

Allocatable resources, labels, taints, images (with their sizes, shared between
nodes), the preferAvoidPods annotation, conditions and the compact body kept for
extenders.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .common import (
    _TUPLES,
    EMPTY_MAP,
    INT64_MAX,
    INT64_MIN,
    PREFER_AVOID_PODS_ANNOTATION,
    BodySource,
    OwnerRef,
    Resources,
    Taint,
    _body_source,
    _metadata,
    _read_body,
    _Reader,
    _shared,
    shared_labels,
)

_IMAGES: dict[Hashable, Any] = {}


@dataclass(frozen=True, slots=True)
class ImageState:
    """An image a node holds: its names and its size in bytes."""

    names: tuple[str, ...]
    size: int


@dataclass(frozen=True, slots=True)
class Node:
    """A node as the engine reads it."""

    name: str
    uid: str
    labels: Mapping[str, str]
    unschedulable: bool
    taints: tuple[Taint, ...]
    conditions: Mapping[str, str]  # type -> status
    allocatable: Resources
    images: tuple[ImageState, ...]
    avoid_pods: tuple[tuple[str, str], ...]  # (controller kind, controller uid)
    resource_version: str = ""
    #: What :attr:`body` is read from (the package docstring).
    body_source: BodySource = field(default=b"", compare=False, repr=False)
    #: ``metadata.annotations``, for plugins, without kubectl's
    #: ``last-applied-configuration`` (a copy of the whole object, kilobytes a pod, that
    #: no scheduling rule reads). One dict per distinct map, shared.
    annotations: Mapping[str, str] = field(
        default_factory=lambda: EMPTY_MAP, compare=False, repr=False
    )
    #: ``metadata.ownerReferences``, in order (the controller among them).
    owner_references: tuple[OwnerRef, ...] = field(default=(), compare=False, repr=False)

    @property
    def body(self) -> bytes:
        """The API object as compact JSON, sent to extenders that want whole nodes."""
        return _read_body(self)


# -- nodes ---------------------------------------------------------------------------------


def parse_node(raw: Mapping[str, Any]) -> Node:
    meta, name, _ = _metadata(raw, "Node", namespaced=False)
    r = _Reader("Node", name)
    spec = r.mapping(raw.get("spec"), "spec")
    status = r.mapping(raw.get("status"), "status")

    taints = []
    for i, item in enumerate(r.items(spec.get("taints"), "spec.taints")):
        t = r.mapping(item, f"spec.taints[{i}]")
        effect = r.one_of(
            t.get("effect"),
            f"spec.taints[{i}].effect",
            ("NoSchedule", "PreferNoSchedule", "NoExecute"),
        )
        key = r.string(t.get("key"), f"spec.taints[{i}].key")
        if not key:
            raise r.fail(f"spec.taints[{i}].key", "is required")
        taints.append(
            Taint(key=key, value=r.string(t.get("value"), f"spec.taints[{i}].value"), effect=effect)
        )

    conditions: dict[str, str] = {}
    for i, item in enumerate(r.items(status.get("conditions"), "status.conditions")):
        c = r.mapping(item, f"status.conditions[{i}]")
        ctype = r.string(c.get("type"), f"status.conditions[{i}].type")
        conditions[sys.intern(ctype)] = sys.intern(
            r.string(c.get("status"), f"status.conditions[{i}].status")
        )

    # The API server defaults allocatable to capacity when a node reports none.
    allocatable_raw = status.get("allocatable")
    path = "status.allocatable"
    if allocatable_raw is None:
        allocatable_raw, path = status.get("capacity"), "status.capacity"
    allocatable = r.resources(allocatable_raw, path)

    images = [
        _image_state(r, item, f"status.images[{i}]")
        for i, item in enumerate(r.items(status.get("images"), "status.images"))
    ]

    annotations = r.mapping(meta.get("annotations"), "metadata.annotations")
    return Node(
        name=name,
        uid=r.string(meta.get("uid"), "metadata.uid"),
        labels=r.labels(meta.get("labels"), "metadata.labels"),
        unschedulable=r.boolean(spec.get("unschedulable"), "spec.unschedulable"),
        taints=_shared(_TUPLES, tuple(taints), tuple(taints)),
        conditions=shared_labels(conditions),
        allocatable=allocatable,
        images=_shared(_TUPLES, tuple(images), tuple(images)),
        avoid_pods=_avoid_pods(annotations.get(PREFER_AVOID_PODS_ANNOTATION)),
        resource_version=r.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        body_source=_body_source(raw),
    )


def _image_state(r: _Reader, item: object, path: str) -> ImageState:
    """One entry of status.images, shared between nodes that report the same image."""
    img = r.mapping(item, path)
    raw_names = img.get("names")
    size = img.get("sizeBytes")
    names: tuple[str, ...] | None = None
    if type(raw_names) is list:
        # Node image names are taken as reported; only pods' images get ":latest".
        with contextlib.suppress(TypeError):  # not all strings: the slow path says which
            names = tuple(map(sys.intern, raw_names))
    if names is None:
        names = tuple(
            sys.intern(r.string(n, f"{path}.names[{j}]"))
            for j, n in enumerate(r.items(raw_names, f"{path}.names"))
        )
    if type(size) is not int or not INT64_MIN <= size <= INT64_MAX:
        size = r.integer(size, f"{path}.sizeBytes")
    key = (names, size)
    known: ImageState | None = _IMAGES.get(key)
    if known is None:
        known = _shared(_IMAGES, key, ImageState(names=names, size=size))
    return known


def _avoid_pods(value: object) -> tuple[tuple[str, str], ...]:
    """The preferAvoidPods annotation; unreadable JSON counts as no entry, as upstream."""
    if not isinstance(value, str) or not value:
        return ()
    try:
        data = json.loads(value)
        out = []
        for entry in data.get("preferAvoidPods") or []:
            ctrl = (entry.get("podSignature") or {}).get("podController") or {}
            out.append((str(ctrl.get("kind", "")), str(ctrl.get("uid", ""))))
        return tuple(out)
    except (ValueError, AttributeError, TypeError, RecursionError):
        return ()


# -- storage -------------------------------------------------------------------------------


def newer_version(new: str, old: str) -> bool:
    """Whether ``new`` is a later resourceVersion than ``old`` (the volume binder's
    assume cache compares them as integers, as etcd issues them). When either is not a
    decimal number (objects from files, other stores), the newcomer is taken as newer."""
    if not (new.isdecimal() and old.isdecimal()):
        return True
    return int(new) > int(old)
