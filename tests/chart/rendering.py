"""The chart rendered offline, read back as manifests: shared by the chart's tests."""

from __future__ import annotations

from typing import Any

import yaml

#: Kubernetes version whose schemas validate the manifests (kubernetes-validate).
K8S_VERSION = "1.30.0"
RELEASE = "ps"
NAMESPACE = "scheduling"


class Rendered:
    """One ``helm template``: the manifests by kind and name, and NOTES.txt."""

    def __init__(self, files: dict[str, str]) -> None:
        self.notes = ""
        self.docs: list[dict[str, Any]] = []
        for path, text in files.items():
            if path.endswith("NOTES.txt"):
                self.notes = text
                continue
            self.docs += [doc for doc in yaml.safe_load_all(text) if doc]

    def kinds(self) -> list[str]:
        return sorted(doc["kind"] for doc in self.docs)

    def get(self, kind: str) -> dict[str, Any]:
        (found,) = self.all(kind)
        return found

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [doc for doc in self.docs if doc["kind"] == kind]

    @property
    def container(self) -> dict[str, Any]:
        pod = self.get("Deployment")["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        return container

    @property
    def args(self) -> list[str]:
        args: list[str] = self.container["args"]
        return args

    def arg(self, flag: str) -> str | None:
        args = self.args
        return args[args.index(flag) + 1] if flag in args else None
