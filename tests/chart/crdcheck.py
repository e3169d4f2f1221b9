"""An offline stand-in for the API server's checks of a SchedulingPolicy against the CRD.

``crd_errors(obj)`` returns ``[(path, message), ...]`` the way the API server would
refuse the object, paths in its form (``spec.priorities[0].weight``):

1. the openAPIV3Schema, by ``jsonschema`` (Draft 7 reads the OpenAPI subset a structural
   schema may use; ``format`` and ``x-kubernetes-*`` keys are ignored). Unknown fields
   are errors, as with ``kubectl apply`` (server-side field validation ``Strict``): every
   object schema with ``properties`` gets ``additionalProperties: false`` here;
2. then, when the schema passed, every ``x-kubernetes-validations`` rule, evaluated with
   ``cel-python`` at each node of the object its schema node applies to, the error
   placed at that node plus the rule's ``fieldPath``. ``isSorted()`` is the Kubernetes
   CEL list library's, so it is supplied here. The API server also runs CEL on objects
   with schema errors; we stop at the first layer to keep the expectations simple.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import celpy
import jsonschema
from celpy import celtypes

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "policy-scheduler"

Errors = list[tuple[str, str]]


def openapi_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def format_path(parts: list[str | int] | tuple[str | int, ...]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items()}
    if "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def schema_errors(schema: dict[str, Any], obj: Any) -> Errors:
    validator = jsonschema.Draft7Validator(_strict(schema))
    errors: Errors = []
    for error in validator.iter_errors(obj):
        parts: list[str | int] = list(error.absolute_path)
        if error.validator == "required":
            match = re.match(r"'([^']+)' is a required property", error.message)
            parts.append(match.group(1) if match else "?")
        elif error.validator == "additionalProperties":
            match = re.search(r"\('([^']+)' was unexpected\)", error.message)
            parts.append(match.group(1) if match else "?")
        errors.append((format_path(parts), error.message))
    return sorted(errors)


def _is_sorted(values: Any) -> celtypes.BoolType:
    items = list(values)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(items)))


_CEL_ENV = celpy.Environment()
_CEL_FUNCTIONS = {"isSorted": _is_sorted}
_COMPILED: dict[str, Any] = {}


def cel_program(rule: str) -> Any:
    if rule not in _COMPILED:
        _COMPILED[rule] = _CEL_ENV.program(_CEL_ENV.compile(rule), functions=_CEL_FUNCTIONS)
    return _COMPILED[rule]


def evaluate_rule(rule: str, value: Any) -> bool:
    result = cel_program(rule).evaluate({"self": celpy.json_to_cel(value)})
    if isinstance(result, Exception):  # cel-python returns evaluation errors as values
        raise result
    return bool(result)


def cel_errors(schema: dict[str, Any], value: Any, path: str) -> Errors:
    errors: Errors = []
    for rule in schema.get("x-kubernetes-validations", []):
        if not evaluate_rule(rule["rule"], value):
            errors.append((path + rule.get("fieldPath", ""), rule["message"]))
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                errors += cel_errors(sub, value[name], f"{path}.{name}" if path else name)
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += cel_errors(schema["items"], item, f"{path}[{index}]")
    return errors


def validate_object(crd: dict[str, Any], obj: dict[str, Any]) -> Errors:
    schema = openapi_schema(crd)
    errors = schema_errors(schema, obj)
    if errors:
        return errors
    return sorted(cel_errors(schema, obj, ""))
