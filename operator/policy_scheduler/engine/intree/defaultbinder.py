"""DefaultBinder, kube-scheduler v1.30's Bind: the pods/binding subresource.

``bind`` POSTs a ``v1.Binding`` (the pod's name, namespace and uid; target the Node) to
``/api/v1/namespaces/<ns>/pods/<name>/binding`` through the handle's API, as upstream's
``DefaultBinder`` does with client-go, within the plugin's deadline. 200 or 201 is
Success; anything else is an Error carrying the API's message (``Operation cannot be
fulfilled on pods/binding ...: pod ... is already assigned to node ...`` for a pod bound
meanwhile), or the status when the answer has none; no answer within the deadline, or
no API at all (offline), is an Error too. Binding is the last Bind plugin's job: it
never Skips.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

from ...objects import Pod
from ..functions import CycleState
from ..interface import BindPlugin, Handle, Status

NAME: Final = "DefaultBinder"


def binding_path(pod: Pod) -> str:
    return (
        f"/api/v1/namespaces/{quote(pod.namespace, safe='')}"
        f"/pods/{quote(pod.name, safe='')}/binding"
    )


def binding_body(pod: Pod, node_name: str) -> dict[str, Any]:
    """The v1.Binding upstream sends: ObjectMeta{Namespace, Name, UID}, Target{Kind, Name}."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"kind": "Node", "name": node_name},
    }


def _failure(status: int, body: Any) -> str:
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message:
        return message
    return f"binding was refused: HTTP {status}"


class DefaultBinder(BindPlugin):
    """Binds the pod to its node through the API."""

    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args, handle)

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        api = self.handle.api
        if api is None:
            return Status.error("no Kubernetes API to bind the pod with")
        status, body = await api.request(
            "POST",
            binding_path(pod),
            body=binding_body(pod, node_name),
            timeout=self.timeout_seconds,
        )
        if status in (200, 201):
            return None
        if status == 0:
            return Status.error(
                f"binding {pod.key} to {node_name}: no answer within {self.timeout_seconds:g}s"
            )
        return Status.error(_failure(status, body))
