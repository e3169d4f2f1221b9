"""OpenAPI v3 for the emulator, and the unknown-field check behind ``fieldValidation``.

``kubectl apply`` validates by default (``--validate=strict``) in one of two ways: it reads
``/openapi/v3`` and, when the kind's PATCH operation takes the ``fieldValidation`` query
parameter, leaves validation to the server (it sends ``fieldValidation=Strict``);
otherwise it validates the manifest itself against ``/openapi/v2``. A server serving
neither gets "failed to download openapi" and nothing applied. kube-apiserver serves
both and validates fields itself; so does the emulator, with OpenAPI v3:

* ``GET /openapi/v3``: ``{"paths": {"api/v1": {"serverRelativeURL":
  "/openapi/v3/api/v1?hash=H"}, "apis/GROUP/VERSION": ...}}``, one entry per served group
  version (``H`` changes when the document does, as kubectl caches by it);
* ``GET /openapi/v3/api/v1`` (``/apis/GROUP/VERSION``): an OpenAPI 3.0 document with the
  paths of each resource (collection: list, create, deletecollection; object: get,
  replace, patch, delete; status; ``pods/binding``), each operation tagged with
  ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``, writes taking
  ``fieldValidation``, and the kinds' schemas under ``components.schemas``.

``unknown_fields(obj, ...)`` is what ``fieldValidation`` checks: the fields of a body its
kind's schema does not declare (``spec.containers[0].imagePullPolcy``), which Strict
refuses and Warn reports in a ``Warning`` header, as kube-apiserver does.

Schemas of built-in kinds come from kubernetes-validate (a dev dependency: Kubernetes'
OpenAPI definitions for ``SERVER_VERSION`` as JSON Schema), turned back into OpenAPI 3's
shape (no ``null`` in types, ``$ref`` to ``#/components/schemas/...``, int-or-string and
quantities as strings, the ``x-kubernetes-*`` extensions kept). A custom resource is
described by the ``openAPIV3Schema`` of its stored CRD (``apiVersion``, ``kind`` and
``metadata`` as every object's); without a stored CRD, as an object accepting anything.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import json
import pathlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["OpenApi", "apply_defaults", "unknown_fields"]

Schema = dict[str, Any]
REF = "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


class Resource(Protocol):
    """What the documents need of a served resource (``emulator.ResourceSpec``)."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...
    @property
    def subresources(self) -> tuple[str, ...]: ...
    @property
    def verbs(self) -> tuple[str, ...]: ...
    @property
    def custom(self) -> bool: ...
    @property
    def api_version(self) -> str: ...


@functools.cache
def _kubernetes_definitions(version: str) -> dict[str, Schema]:
    """Kubernetes' definitions as OpenAPI 3 schemas, by name (``io.k8s.api.core.v1.Pod``)."""
    found = importlib.util.find_spec("kubernetes_validate")
    if found is None or found.origin is None:
        raise RuntimeError(
            "the emulator's OpenAPI needs kubernetes-validate (pip install -e .[dev])"
        )
    root = pathlib.Path(found.origin).parent / "kubernetes-json-schema"
    path = root / f"{version}-local" / "_definitions.json"
    if not path.exists():
        raise RuntimeError(f"kubernetes-validate has no schemas for {version} ({root})")
    definitions = json.loads(path.read_text())["$defs"]
    return {name: _to_openapi(schema) for name, schema in definitions.items()}


def _to_openapi(schema: Any) -> Any:
    """A kubernetes-validate JSON Schema back in OpenAPI 3's shape (structurally, so that
    property *names* such as JSONSchemaProps' ``oneOf`` are left alone)."""
    if not isinstance(schema, Mapping):
        return schema
    out: Schema = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = REF + str(value).rsplit("/", 1)[-1]
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "oneOf" and all(isinstance(v, Mapping) and "type" in v for v in value):
            # IntOrString and Quantity: a string on the wire (or a number), as upstream says.
            alternatives = {
                t
                for v in value
                for t in (v["type"] if isinstance(v["type"], list) else [v["type"]])
            }
            out["type"] = "string"
            if "integer" in alternatives:
                out["format"] = "int-or-string"
                out["x-kubernetes-int-or-string"] = True
        elif key in ("properties", "patternProperties"):
            out[key] = {name: _to_openapi(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _to_openapi(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_to_openapi(sub) for sub in value]
        else:
            out[key] = value
    return out


def _references(schema: Any) -> Iterable[str]:
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(REF):
                yield value[len(REF) :]
            elif key != "enum":
                yield from _references(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _references(value)


def _closure(names: Iterable[str], definitions: Mapping[str, Schema]) -> dict[str, Schema]:
    """The named schemas and every schema they refer to."""
    out: dict[str, Schema] = {}
    todo = [n for n in names if n in definitions]
    while todo:
        name = todo.pop()
        if name not in out:
            out[name] = definitions[name]
            todo += [r for r in _references(definitions[name]) if r in definitions and r not in out]
    return out


def _resolve(schema: Mapping[str, Any], components: Mapping[str, Schema]) -> Mapping[str, Any]:
    seen = 0
    while seen < 32:
        seen += 1
        if isinstance(schema.get("$ref"), str):
            schema = components.get(schema["$ref"].removeprefix(REF), {})
        elif len(schema.get("allOf") or ()) == 1 and "properties" not in schema:
            schema = schema["allOf"][0]
        else:
            break
    return schema


def unknown_fields(
    value: Any,
    schema: Mapping[str, Any],
    components: Mapping[str, Schema],
    path: str = "",
    *,
    patch: bool = False,
    prune: bool = False,
) -> list[str]:
    """The paths of ``value``'s fields the schema does not declare, as kube-apiserver's
    strict decoding names them: ``spec.foo``, ``spec.containers[0].bar``.

    ``patch``: ``value`` is a merge patch (a null removes a field: not a field sent);
    ``prune``: remove those fields from ``value`` (as the server drops them when it only
    warns)."""
    schema = _resolve(schema, components)
    if schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return []
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in list(value.items()):
            where = f"{path}.{key}" if path else str(key)
            if str(key).startswith("$") or (patch and item is None):  # patch directives
                continue
            if isinstance(properties, Mapping) and key in properties:
                sub = properties[key]
            elif isinstance(extra, Mapping):
                sub = extra
            elif isinstance(properties, Mapping) and extra is not True:
                found.append(where)
                if prune:
                    del value[key]
                continue
            else:
                continue
            found += unknown_fields(item, sub, components, where, patch=patch, prune=prune)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            found += unknown_fields(
                item, schema["items"], components, where, patch=patch, prune=prune
            )
    return found


def apply_defaults(value: Any, schema: Mapping[str, Any], components: Mapping[str, Schema]) -> None:
    """Fill in, in place, the ``default`` of every property absent from an object present
    (structural defaulting, as kube-apiserver does for custom resources)."""
    schema = _resolve(schema, components)
    if isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, sub in properties.items():
                if key not in value and isinstance(sub, Mapping) and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                if key in value:
                    apply_defaults(value[key], sub, components)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key, item in value.items():
                if not isinstance(properties, Mapping) or key not in properties:
                    apply_defaults(item, extra, components)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            apply_defaults(item, schema["items"], components)


class OpenApi:
    """The ``/openapi/v3`` documents of a set of resources.

    ``crd_schema(resource)`` gives a custom resource's ``openAPIV3Schema`` (from its stored
    CRD, for its version) or None.
    """

    def __init__(
        self,
        resources: Sequence[Resource],
        server_version: str,
        crd_schema: Callable[[Resource], Mapping[str, Any] | None],
    ) -> None:
        self.resources = resources
        self.server_version = server_version
        self.crd_schema = crd_schema

    @property
    def definitions(self) -> dict[str, Schema]:
        major_minor = ".".join(self.server_version.lstrip("v").split(".")[:2])
        return _kubernetes_definitions(f"v{major_minor}.0")

    @staticmethod
    def path_of(group: str, version: str) -> str:
        """The key of a group version in the root document: ``api/v1``, ``apis/apps/v1``."""
        return f"apis/{group}/{version}" if group else f"api/{version}"

    def group_versions(self) -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        for resource in self.resources:
            if (resource.group, resource.version) not in seen:
                seen.append((resource.group, resource.version))
        return seen

    def root(self) -> dict[str, Any]:
        paths = {}
        for group, version in self.group_versions():
            text = json.dumps(self.document(group, version), sort_keys=True).encode()
            digest = hashlib.sha512(text).hexdigest()[:64].upper()
            key = self.path_of(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
        return {"paths": paths}

    def schema_name(self, resource: Resource, kind: str | None = None) -> str:
        """The components name of a kind: upstream's for built-ins, reversed-group for CRs."""
        kind = kind or resource.kind
        for name, schema in self.definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (
                    resource.group,
                    resource.version,
                    kind,
                ):
                    return name
        reverse = ".".join(reversed(resource.group.split("."))) if resource.group else "core"
        return f"{reverse}.{resource.version}.{kind}"

    def kind_schema(self, resource: Resource) -> tuple[Schema, dict[str, Schema]]:
        """The kind's schema and the components it refers to."""
        definitions = self.definitions
        if not resource.custom:
            name = self.schema_name(resource)
            if name in definitions:
                return definitions[name], _closure([name], definitions)
        crd = self.crd_schema(resource)
        if crd is None:
            schema: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            schema = json.loads(json.dumps(crd))  # a copy: the CRD object stays as stored
            properties = schema.setdefault("properties", {})
            properties.setdefault("apiVersion", {"type": "string"})
            properties.setdefault("kind", {"type": "string"})
            properties["metadata"] = {"$ref": REF + OBJECT_META}
        schema["x-kubernetes-group-version-kind"] = [
            {"group": resource.group, "version": resource.version, "kind": resource.kind}
        ]
        return schema, _closure([OBJECT_META, *_references(schema)], definitions)

    def apply_defaults(self, resource: Resource, obj: dict[str, Any]) -> None:
        """A custom resource's defaults from its stored CRD (nothing without one)."""
        if resource.custom and self.crd_schema(resource) is not None:
            schema, components = self.kind_schema(resource)
            apply_defaults(obj, schema, components)

    def unknown_fields(
        self, resource: Resource, body: Any, *, patch: bool = False, prune: bool = False
    ) -> list[str]:
        schema, components = self.kind_schema(resource)
        return unknown_fields(body, schema, components, patch=patch, prune=prune)

    def document(self, group: str, version: str) -> dict[str, Any] | None:
        """The OpenAPI 3.0 document of one group version (None if it is not served)."""
        served = [r for r in self.resources if (r.group, r.version) == (group, version)]
        if not served:
            return None
        schemas: dict[str, Schema] = {}
        paths: dict[str, Any] = {}
        for resource in served:
            schema, components = self.kind_schema(resource)
            name = self.schema_name(resource)
            schemas.update(components)
            schemas[name] = schema
            paths.update(self._paths(resource, name))
            if "binding" in resource.subresources:
                binding = self.schema_name(resource, "Binding")
                schemas.update(_closure([binding], self.definitions))
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": self.server_version},
            "paths": paths,
            "components": {"schemas": dict(sorted(schemas.items()))},
        }

    def _paths(self, resource: Resource, schema: str) -> dict[str, Any]:
        base = (
            f"/apis/{resource.group}/{resource.version}"
            if resource.group
            else f"/api/{resource.version}"
        )
        scope = f"{base}/namespaces/{{namespace}}" if resource.namespaced else base
        gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
        ref = {"$ref": REF + schema}
        path_params = [_parameter("namespace", "path")] if resource.namespaced else []
        named = [_parameter("name", "path"), *path_params]

        def op(action: str, verb: str, body: bool = False, kind: Mapping[str, str] = gvk) -> Schema:
            operation: Schema = {
                "operationId": f"{verb}{resource.kind}",
                "description": f"{verb} {resource.kind}",
                "parameters": [_parameter("dryRun"), _parameter("fieldManager")] if body else [],
                "responses": {
                    "200": {"description": "OK", "content": {"application/json": {"schema": ref}}}
                },
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": dict(kind),
            }
            if body:
                operation["parameters"].append(_parameter("fieldValidation"))
            return operation

        def patch() -> Schema:
            operation = op("patch", "patch", body=True)
            types = (
                PATCH_TYPES
                if not resource.custom
                else tuple(t for t in PATCH_TYPES if t != "application/strategic-merge-patch+json")
            )
            patch_ref = {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}
            operation["requestBody"] = {
                "content": {t: {"schema": patch_ref} for t in types},
                "required": True,
            }
            operation["parameters"].append(_parameter("force"))
            return operation

        def write(action: str, verb: str) -> Schema:
            operation = op(action, verb, body=True)
            operation["requestBody"] = {"content": {"*/*": {"schema": ref}}, "required": True}
            return operation

        paths: dict[str, Any] = {
            f"{scope}/{resource.plural}": {
                "get": op("list", "list"),
                "post": write("post", "create"),
                "delete": op("deletecollection", "deletecollection"),
                "parameters": path_params,
            },
            f"{scope}/{resource.plural}/{{name}}": {
                "get": op("get", "read"),
                "put": write("put", "replace"),
                "patch": patch(),
                "delete": op("delete", "delete"),
                "parameters": named,
            },
        }
        if resource.namespaced:
            paths[f"{base}/{resource.plural}"] = {"get": op("list", "listAllNamespaces")}
        if "status" in resource.subresources:
            paths[f"{scope}/{resource.plural}/{{name}}/status"] = {
                "get": op("get", "readStatus"),
                "put": write("put", "replaceStatus"),
                "patch": patch(),
                "parameters": named,
            }
        if "binding" in resource.subresources:
            binding = {"group": resource.group, "version": resource.version, "kind": "Binding"}
            operation = op("post", "createBinding", body=True, kind=binding)
            operation["requestBody"] = {
                "content": {
                    "*/*": {"schema": {"$ref": REF + self.schema_name(resource, "Binding")}}
                },
                "required": True,
            }
            paths[f"{scope}/{resource.plural}/{{name}}/binding"] = {
                "post": operation,
                "parameters": named,
            }
        return paths


def _parameter(name: str, where: str = "query") -> Schema:
    parameter: Schema = {
        "name": name,
        "in": where,
        "schema": {"type": "string", "uniqueItems": True},
    }
    if where == "path":
        parameter["required"] = True
    return parameter
