"""Kubernetes resource quantities, parsed exactly.

A quantity is a decimal number with an optional suffix: binary (Ki, Mi, Gi, Ti, Pi, Ei),
decimal SI (n, u, m, "", k, M, G, T, P, E) or a decimal exponent (e3, E-2). The value is
held as a :class:`fractions.Fraction`, so "0.1" + "0.2" is exactly "0.3" and "1.5Gi" is
exactly 1610612736: there is no float anywhere.

The scheduler works in integers, as kube-scheduler does: CPU in millicores
(``MilliValue``) and everything else in units (``Value``). Both round *up* to the next
integer, as apimachinery's ``resource.Quantity`` does, so "0.1m" CPU is 1 millicore and
"1.5" bytes is 2.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

_BINARY: Final[dict[str, int]] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL: Final[dict[str, Fraction]] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY: Final = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<exp>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as a string (or a YAML int/float)."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {value!r}")
        # repr() is the shortest string that round-trips: what the user wrote in YAML.
        value = repr(value)
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    number = Fraction(match["number"])
    if match["exp"] is not None:
        number *= Fraction(10) ** int(match["exp"][1:])
    else:
        suffix = match["suffix"] or ""
        number *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    return -number if match["sign"] == "-" else number


def milli_value(value: object) -> int:
    """A quantity in thousandths, rounded up (kube's ``MilliValue``): CPU in millicores."""
    return math.ceil(parse_quantity(value) * 1000)


def int_value(value: object) -> int:
    """A quantity in units, rounded up (kube's ``Value``): bytes, pods, devices."""
    return math.ceil(parse_quantity(value))


def format_milli(milli: int) -> str:
    """Millicores for people: 1500 -> "1500m", 2000 -> "2"."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(amount: int) -> str:
    """Bytes for people, in the largest binary unit that divides them exactly."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if amount and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    return str(amount)
