"""Server-side printing for the emulator: the ``Table`` kube-apiserver answers ``kubectl get``.

``kubectl get`` asks for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...,
application/json``; kube-apiserver then answers a ``meta.k8s.io/v1`` Table whose columns
its printers choose per kind (pkg/printers/internalversion: pods show READY, STATUS,
RESTARTS, AGE, and with ``-o wide`` IP, NODE, NOMINATED NODE; nodes STATUS, ROLES, AGE,
VERSION; ...), or, for a custom resource, the CRD's ``additionalPrinterColumns``
(apiextensions' tableconvertor: JSONPath columns, the first result of each). Each row
carries the object as ``includeObject`` asks: its metadata by default (a
``PartialObjectMetadata``: ``kubectl get -A`` reads the namespace there), the whole
object, or nothing.

``table_version(accept)`` says whether a request wants a Table; ``render_table(...)``
builds it. Tables are rendered for pods, nodes, namespaces, core events and custom
resources; for other kinds the emulator answers plain JSON (the Accept header allows it)
and kubectl prints NAME and AGE itself, where a real server would print more columns.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["TABLE_KINDS", "human_duration", "jsonpath", "render_table", "table_version"]

Obj = Mapping[str, Any]
Column = dict[str, Any]


TABLE_MEDIA_TYPES = {("application/json", "meta.k8s.io", v) for v in ("v1", "v1beta1")}


def table_version(accept: str) -> str | None:
    """``v1``/``v1beta1`` if the first media type the server can answer is a Table, else None."""
    for media in accept.split(","):
        kind, *params = (part.strip() for part in media.split(";"))
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if options.get("as") == "Table":
            if (kind, options.get("g"), options.get("v")) in TABLE_MEDIA_TYPES:
                return options["v"]
            continue  # a Table we cannot give (protobuf, another version): the next one
        if kind in ("application/json", "*/*", "application/*"):
            return None
    return None


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: 45s, 3m20s, 25m, 5h10m, 3d4h, 400d, 3y20d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _since(timestamp: Any, now: datetime.datetime) -> str:
    """translateTimestampSince: the age of an RFC 3339 timestamp, ``<unknown>`` if none."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    return human_duration((now - then).total_seconds())


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _name_column() -> Column:
    return {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name must be unique within a namespace.",
        "priority": 0,
    }


def _column(name: str, description: str, *, priority: int = 0, type_: str = "string") -> Column:
    return {
        "name": name,
        "type": type_,
        "format": "",
        "description": description,
        "priority": priority,
    }


# -- the printers of built-in kinds (pkg/printers/internalversion/printers.go) ---------------


def _pod_columns() -> list[Column]:
    return [
        _name_column(),
        _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        _column("Status", "The aggregate status of the containers in this pod."),
        _column("Restarts", "The number of times the containers in this pod have been restarted"),
        _column("Age", "CreationTimestamp is a timestamp representing the server time..."),
        _column("IP", "podIP address allocated to the pod.", priority=1),
        _column("Node", "NodeName indicates in which node this pod is scheduled.", priority=1),
        _column("Nominated Node", "nominatedNodeName is set when this pod preempts", priority=1),
        _column(
            "Readiness Gates", "If specified, all readiness gates will be evaluated", priority=1
        ),
    ]


def _pod_row(pod: Obj, now: datetime.datetime) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    reason = status.get("reason") or status.get("phase") or ""
    ready = restarts = 0
    for container in reversed(statuses):
        restarts += int(container.get("restartCount") or 0)
        state = container.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            terminated = state["terminated"]
            reason = terminated.get("reason") or (
                f"Signal:{terminated['signal']}"
                if terminated.get("signal")
                else f"ExitCode:{terminated.get('exitCode', 0)}"
            )
        elif container.get("ready") and state.get("running") is not None:
            ready += 1
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    gates = spec.get("readinessGates") or []
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    gates_cell = (
        f"{sum(conditions.get(g.get('conditionType')) == 'True' for g in gates)}/{len(gates)}"
        if gates
        else "<none>"
    )
    return [
        _get(pod, "metadata", "name"),
        f"{ready}/{len(containers)}",
        reason,
        str(restarts),
        _since(_get(pod, "metadata", "creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_cell,
    ]


def _node_columns() -> list[Column]:
    return [
        _name_column(),
        _column("Status", "The status of the node"),
        _column("Roles", "The roles of the node"),
        _column("Age", "CreationTimestamp is a timestamp representing the server time..."),
        _column("Version", "Kubelet Version reported by the node."),
        _column("Internal-IP", "List of addresses reachable to the node.", priority=1),
        _column("External-IP", "List of addresses reachable to the node.", priority=1),
        _column("OS-Image", "OS Image reported by the node.", priority=1),
        _column("Kernel-Version", "Kernel Version reported by the node.", priority=1),
        _column("Container-Runtime", "Container runtime version reported by the node.", priority=1),
    ]


def _node_row(node: Obj, now: datetime.datetime) -> list[Any]:
    conditions = {c.get("type"): c.get("status") for c in _get(node, "status", "conditions") or []}
    state = {"True": "Ready", "False": "NotReady"}.get(conditions.get("Ready") or "", "Unknown")
    if _get(node, "spec", "unschedulable"):
        state += ",SchedulingDisabled"
    labels = _get(node, "metadata", "labels") or {}
    roles = sorted(
        {
            k.removeprefix("node-role.kubernetes.io/")
            for k in labels
            if k.startswith("node-role.kubernetes.io/")
        }
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    addresses = _get(node, "status", "addresses") or []
    info = _get(node, "status", "nodeInfo") or {}

    def address(kind: str) -> str:
        return (
            next((a.get("address") for a in addresses if a.get("type") == kind), None) or "<none>"
        )

    return [
        _get(node, "metadata", "name"),
        state,
        ",".join(r for r in roles if r) or "<none>",
        _since(_get(node, "metadata", "creationTimestamp"), now),
        info.get("kubeletVersion") or "",
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _namespace_columns() -> list[Column]:
    return [
        _name_column(),
        _column("Status", "The status of the namespace"),
        _column("Age", "CreationTimestamp is a timestamp representing the server time..."),
    ]


def _namespace_row(namespace: Obj, now: datetime.datetime) -> list[Any]:
    return [
        _get(namespace, "metadata", "name"),
        _get(namespace, "status", "phase") or "",
        _since(_get(namespace, "metadata", "creationTimestamp"), now),
    ]


def _event_columns() -> list[Column]:
    return [
        _column(
            "Last Seen", "The time at which the most recent occurrence of this event was recorded."
        ),
        _column(
            "Type", "Type of this event (Normal, Warning), new types could be added in the future"
        ),
        _column("Reason", "This should be a short, machine understandable string"),
        _column("Object", "The object that this event is about."),
        _column("Subobject", "FieldPath of the involved object.", priority=1),
        _column("Source", "The component reporting this event.", priority=1),
        _column("Message", "A human-readable description of the status of this operation."),
        _column("First Seen", "The time at which the event was first recorded.", priority=1),
        _column("Count", "The number of times this event has occurred.", priority=1),
        {**_name_column(), "priority": 1},
    ]


def _event_row(event: Obj, now: datetime.datetime) -> list[Any]:
    first = event.get("firstTimestamp") or event.get("eventTime")
    last = event.get("lastTimestamp") or first
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return [
        _since(last, now),
        event.get("type") or "",
        event.get("reason") or "",
        f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
        involved.get("fieldPath") or "",
        f"{component}, {host}" if host else component,
        str(event.get("message") or "").strip(),
        _since(first, now),
        int(event.get("count") or 1),
        _get(event, "metadata", "name"),
    ]


Printer = tuple[Callable[[], list[Column]], Callable[[Obj, datetime.datetime], list[Any]]]

#: (group, kind) -> (columns, row) for the built-in kinds the emulator prints.
TABLE_KINDS: dict[tuple[str, str], Printer] = {
    ("", "Pod"): (_pod_columns, _pod_row),
    ("", "Node"): (_node_columns, _node_row),
    ("", "Namespace"): (_namespace_columns, _namespace_row),
    ("", "Event"): (_event_columns, _event_row),
}


# -- custom resources: the CRD's printer columns --------------------------------------------

_STEP = re.compile(
    r"\.([A-Za-z0-9_-]+)|\[(\*|\d+)\]|\[\?\(@((?:\.[A-Za-z0-9_-]+)+)\s*==\s*(\"[^\"]*\"|'[^']*')\)\]"
)


def jsonpath(path: str, obj: Any) -> list[Any]:
    """The values a simple JSONPath (``.a.b``, ``[0]``, ``[*]``, ``[?(@.k=="v")]``) finds."""
    values, position = [obj], 0
    path = path.strip().removeprefix("{").removesuffix("}").strip()
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {path[position:]!r}")
        position = step.end()
        field, index, filter_path, filter_value = step.groups()
        found: list[Any] = []
        for value in values:
            if field is not None:
                if isinstance(value, Mapping) and field in value:
                    found.append(value[field])
            elif index is not None:
                if isinstance(value, list):
                    found += value if index == "*" else value[int(index) : int(index) + 1]
            elif isinstance(value, list):
                wanted = filter_value[1:-1]
                keys = filter_path.split(".")[1:]
                found += [item for item in value if str(_get(item, *keys)) == wanted]
        values = found
    return values


def _custom_columns(crd_columns: Sequence[Obj]) -> list[Column]:
    columns = [_name_column()]
    for column in crd_columns:
        columns.append(
            {
                "name": column["name"],
                "type": column.get("type", "string"),
                "format": column.get("format", ""),
                "description": column.get("description")
                or f"Custom resource definition column (in JSONPath format): {column['jsonPath']}",
                "priority": int(column.get("priority", 0)),
            }
        )
    return columns


def _custom_cell(column: Obj, obj: Obj, now: datetime.datetime) -> Any:
    try:
        found = jsonpath(column["jsonPath"], obj)
    except ValueError:
        return None
    if not found or found[0] is None:
        return None
    value, type_ = found[0], column.get("type", "string")
    if type_ == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if type_ == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if type_ == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if type_ == "boolean" and isinstance(value, bool):
        return value
    if type_ == "date" and isinstance(value, str):
        return _since(value, now)
    return None


#: apiextensions' default when a CRD names no printer column.
DEFAULT_CRD_COLUMNS = [
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def render_table(
    version: str,
    kind: tuple[str, str],
    items: Sequence[Obj],
    resource_version: str,
    *,
    include_object: str = "Metadata",
    crd_columns: Sequence[Obj] | None = None,
    continue_token: str = "",
) -> dict[str, Any] | None:
    """The Table for ``items`` of ``kind`` (group, Kind), or None if the kind has no printer.

    ``crd_columns`` marks a custom resource: its CRD's ``additionalPrinterColumns`` for the
    served version (an empty list: the default Age column).
    """
    now = datetime.datetime.now(tz=datetime.UTC)
    row: Callable[[Obj, datetime.datetime], list[Any]]
    if crd_columns is not None:
        crd_columns = list(crd_columns) or DEFAULT_CRD_COLUMNS
        columns = _custom_columns(crd_columns)

        def custom_row(obj: Obj, now: datetime.datetime) -> list[Any]:
            cells = [_custom_cell(c, obj, now) for c in custom]
            return [_get(obj, "metadata", "name"), *cells]

        custom = list(crd_columns)
        row = custom_row

    elif kind in TABLE_KINDS:
        columns_of, row = TABLE_KINDS[kind]
        columns = columns_of()
    else:
        return None
    rows = []
    for obj in items:
        entry: dict[str, Any] = {"cells": row(obj, now)}
        if include_object == "Object":
            entry["object"] = dict(obj)
        elif include_object != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": dict(obj.get("metadata") or {}),
            }
        rows.append(entry)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }
