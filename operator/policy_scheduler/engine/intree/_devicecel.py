"""CEL device selectors, as DRA evaluates them (``k8s.io/dynamic-resource-allocation/cel``).

A selector is a CEL expression over one variable, ``device``:

* ``device.driver``: the driver's name;
* ``device.attributes["<domain>"].<id>``: an attribute's value (int, bool, string, or a
  semantic version for ``version`` attributes); an attribute without a domain belongs to
  the driver's domain. A domain the device has nothing in is an empty map, so
  ``has(device.attributes["gpu.example.com"].model)`` asks whether it is set;
* ``device.capacity["<domain>"].<id>``: a quantity.

Quantities and versions come with Kubernetes' CEL library functions: ``quantity("1Gi")``,
``q.compareTo(q2)``, ``q.isGreaterThan(q2)``, ``q.isLessThan(q2)``, ``q.add(q2)``,
``q.sub(q2)``, ``q.asInteger()``, ``q.asApproximateFloat()``, ``q.isInteger()``,
``q.sign()``; ``semver("1.2.3")``, ``isSemver(s)``, ``v.compareTo(v2)``,
``v.isGreaterThan(v2)``, ``v.isLessThan(v2)``, ``v.major()``, ``v.minor()``,
``v.patch()``. The expression must give a bool.

:func:`compile_selector` compiles an expression once (cached by its text); a syntax
error is kept in the result (:attr:`Selector.error`) and reported where it is used.
:func:`device_matches` evaluates it for one device, whose CEL value is made once per
device object; a runtime error (a missing attribute, a wrong type) raises
:class:`SelectorError` with CEL's words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, cast

import celpy
from celpy import celtypes

from ...devices import Device
from ...quantities import parse_quantity


class SelectorError(Exception):
    """A selector that failed to compile or to evaluate (CEL's message)."""


class _Quantity(celtypes.StringType):
    """A resource quantity inside CEL: its exact value beside the text it came from."""

    value: Fraction

    def __new__(cls, text: str, value: Fraction) -> _Quantity:
        made = cast(_Quantity, super().__new__(cls, text))
        made.value = value
        return made


_SEMVER: Final = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class _Version(celtypes.StringType):
    """A semantic version inside CEL (semver 2.0.0 precedence; build metadata ignored)."""

    parts: tuple[int, int, int]
    pre: tuple[str, ...]

    def __new__(cls, text: str) -> _Version:
        match = _SEMVER.match(text)
        if match is None:
            raise SelectorError(f"invalid semver {text!r}")
        made = cast(_Version, super().__new__(cls, text))
        made.parts = (int(match[1]), int(match[2]), int(match[3]))
        made.pre = tuple(match[4].split(".")) if match[4] else ()
        return made

    def precedence(self) -> tuple[Any, ...]:
        # A version without a pre-release ranks above one with (1.0.0 > 1.0.0-rc.1);
        # numeric identifiers compare numerically and below alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (*self.parts, 0 if self.pre else 1, pre)


def _compare(a: Any, b: Any) -> celtypes.IntType:
    if isinstance(a, _Quantity) and isinstance(b, _Quantity):
        return celtypes.IntType((a.value > b.value) - (a.value < b.value))
    if isinstance(a, _Version) and isinstance(b, _Version):
        x, y = a.precedence(), b.precedence()
        return celtypes.IntType((x > y) - (x < y))
    raise SelectorError(f"no such overload: compareTo({type(a).__name__}, {type(b).__name__})")


def _quantity(text: Any) -> _Quantity:
    try:
        return _Quantity(str(text), parse_quantity(str(text)))
    except ValueError as exc:
        raise SelectorError(f"quantity: {exc}") from exc


def _need(kind: type, value: Any, function: str) -> Any:
    if not isinstance(value, kind):
        raise SelectorError(f"no such overload: {function}({type(value).__name__})")
    return value


def _as_integer(q: Any) -> celtypes.IntType:
    value = _need(_Quantity, q, "asInteger").value
    if value.denominator != 1:
        raise SelectorError("cannot convert value to integer")
    return celtypes.IntType(int(value))


FUNCTIONS: Final[Mapping[str, Callable[..., Any]]] = {
    "quantity": _quantity,
    "isQuantity": lambda s: celtypes.BoolType(_is(lambda: parse_quantity(str(s)))),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) < 0),
    "add": lambda a, b: _sum(a, b, 1),
    "sub": lambda a, b: _sum(a, b, -1),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: celtypes.DoubleType(
        float(_need(_Quantity, q, "asApproximateFloat").value)
    ),
    "isInteger": lambda q: celtypes.BoolType(
        _need(_Quantity, q, "isInteger").value.denominator == 1
    ),
    "sign": lambda q: celtypes.IntType((_need(_Quantity, q, "sign").value > 0) - (q.value < 0)),
    "semver": lambda s: _Version(str(s)),
    "isSemver": lambda s: celtypes.BoolType(_SEMVER.match(str(s)) is not None),
    "major": lambda v: celtypes.IntType(_need(_Version, v, "major").parts[0]),
    "minor": lambda v: celtypes.IntType(_need(_Version, v, "minor").parts[1]),
    "patch": lambda v: celtypes.IntType(_need(_Version, v, "patch").parts[2]),
}


def _is(check: Callable[[], Any]) -> bool:
    try:
        check()
    except ValueError:
        return False
    return True


def _sum(a: Any, b: Any, sign: int) -> _Quantity:
    left = _need(_Quantity, a, "add")
    right = b if isinstance(b, _Quantity) else _Quantity(str(b), Fraction(int(b)))
    value = left.value + sign * right.value
    text = str(value.numerator) if value.denominator == 1 else str(float(value))
    return _Quantity(text, value)


class _Domains(celtypes.MapType):
    """``device.attributes`` / ``device.capacity``: a domain with nothing is an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType()


_ENV: Final = celpy.Environment()


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector, or why it does not compile."""

    expression: str
    program: Any = None
    #: Why it does not compile (CEL's words), or "".
    error: str = ""


@functools.lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Selector:
    try:
        ast = _ENV.compile(expression)
        return Selector(expression, _ENV.program(ast, functions=dict(FUNCTIONS)))
    except Exception as exc:  # celpy raises its own parse errors
        return Selector(expression, error=" ".join(str(exc).split()))


def _split(qualified: str, driver: str) -> tuple[str, str]:
    domain, _, ident = qualified.rpartition("/")
    return (domain or driver, ident)


def _attribute_value(kind: str, value: Any) -> Any:
    if kind == "int":
        return celtypes.IntType(value)
    if kind == "bool":
        return celtypes.BoolType(value)
    if kind == "version":
        try:
            return _Version(value)
        except SelectorError:
            return celtypes.StringType(value)
    return celtypes.StringType(value)


def _device_value(device: Device, driver: str) -> celtypes.MapType:
    attributes: dict[Any, Any] = {}
    for name, attribute in device.attributes.items():
        domain, ident = _split(name, driver)
        attributes.setdefault(celtypes.StringType(domain), celtypes.MapType())[
            celtypes.StringType(ident)
        ] = _attribute_value(attribute.kind, attribute.value)
    capacity: dict[Any, Any] = {}
    for name, amount in device.capacity.items():
        domain, ident = _split(name, driver)
        text = str(amount.numerator) if amount.denominator == 1 else str(float(amount))
        capacity.setdefault(celtypes.StringType(domain), celtypes.MapType())[
            celtypes.StringType(ident)
        ] = _Quantity(text, amount)
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("attributes"): _Domains(attributes),
            celtypes.StringType("capacity"): _Domains(capacity),
        }
    )


#: (driver, device) -> its CEL value; devices are frozen, their values never change.
_VALUES: dict[tuple[str, Device], celtypes.MapType] = {}
_VALUES_LIMIT: Final = 65536


#: (expression, driver, device) -> the verdict, or the error's message: a selector's
#: answer for a device never changes (both are immutable), and pods ask it again and again.
_VERDICTS: dict[tuple[str, str, Device], bool | str] = {}
_VERDICTS_LIMIT: Final = 262144


def device_matches(selector: Selector, driver: str, device: Device) -> bool:
    """Whether ``device`` (of ``driver``) passes the compiled selector; raises
    :class:`SelectorError` when it cannot tell."""
    key = (selector.expression, driver, device)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        if len(_VERDICTS) >= _VERDICTS_LIMIT:
            _VERDICTS.clear()
        try:
            verdict = _evaluate(selector, driver, device)
        except SelectorError as exc:
            verdict = str(exc)
        _VERDICTS[key] = verdict
    if isinstance(verdict, str):
        raise SelectorError(verdict)
    return verdict


def _evaluate(selector: Selector, driver: str, device: Device) -> bool:
    if selector.error:
        raise SelectorError(f"CEL compile error: {selector.error}")
    key = (driver, device)
    value = _VALUES.get(key)
    if value is None:
        if len(_VALUES) >= _VALUES_LIMIT:
            _VALUES.clear()
        value = _VALUES[key] = _device_value(device, driver)
    try:
        result = selector.program.evaluate({"device": value})
    except SelectorError:
        raise
    except Exception as exc:
        message = " ".join(str(exc.args[0] if exc.args else exc).split())
        raise SelectorError(f"CEL runtime error: {message}") from exc
    if isinstance(result, Exception):  # celpy may hand an error back as the value
        raise SelectorError(f"CEL runtime error: {result}")
    if not isinstance(result, celtypes.BoolType):
        raise SelectorError(f"CEL result is {type(result).__name__}, not a bool")
    return bool(result)
