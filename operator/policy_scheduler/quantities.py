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
import reprlib
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


#: Longest quantity string read; the longest sane one ("9223372036854775807m",
#: "0.000000001", "123456789.123456789Mi") is a few dozen characters. Beyond it a string
#: is refused before any arithmetic, so an absurd value costs nothing.
MAX_LENGTH: Final = 100
#: Largest decimal exponent accepted ("1e999999999" would take minutes to compute).
MAX_EXPONENT: Final = 1000
#: kube-scheduler counts in int64 (``MilliValue``/``Value``): nothing counts beyond it.
MAX_INT64: Final = 2**63 - 1


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity, or one beyond what can be counted."""


_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxother = _REPR.maxlong = 40


def _short(value: object) -> str:
    """A value quoted in an error, at most a few dozen characters whatever its size."""
    if isinstance(value, str) and len(value) > 32:
        return f"{value[:32]!r}..."
    return _REPR.repr(value)


def _exact(value: object) -> tuple[int, int]:
    """(numerator, denominator > 0) of a quantity, in integers: no Fraction, no float."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return value, 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {value!r}")
        # repr() is the shortest string that round-trips: what the user wrote in YAML.
        value = repr(value)
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {_short(value)}")
    if len(value) > MAX_LENGTH:
        raise QuantityError(
            f"not a quantity: {_short(value)} is {len(value)} characters long "
            f"(at most {MAX_LENGTH})"
        )
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    whole, _, fraction = match["number"].partition(".")
    numerator = int(whole + fraction or "0")
    denominator = 10 ** len(fraction)
    if match["exp"] is not None:
        exponent = int(match["exp"][1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(
                f"not a quantity: {value!r}: exponent out of range (at most {MAX_EXPONENT})"
            )
        if exponent >= 0:
            numerator *= 10**exponent
        else:
            denominator *= 10**-exponent
    else:
        suffix = match["suffix"] or ""
        if suffix in _BINARY:
            numerator *= _BINARY[suffix]
        else:
            scale = _DECIMAL[suffix]
            numerator *= scale.numerator
            denominator *= scale.denominator
    return (-numerator if match["sign"] == "-" else numerator), denominator


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as a string (or a YAML int/float)."""
    numerator, denominator = _exact(value)
    return Fraction(numerator, denominator)


#: Quantity string -> its milli / unit value. A cluster repeats a few dozen distinct
#: strings ("100m", "256Mi") thousands of times; bounded, cleared when full.
_MILLI: dict[str, int] = {}
_UNITS: dict[str, int] = {}
_CACHE_LIMIT: Final = 4096


def _rounded_up(value: object, scale: int, unit: str, cache: dict[str, int]) -> int:
    # Only str keys: 1, 1.0 and True hash alike but are not the same quantity.
    key = value if type(value) is str else None
    if key is not None:
        known = cache.get(key)
        if known is not None:
            return known
    numerator, denominator = _exact(value)
    amount = -(-numerator * scale // denominator)  # ceiling division
    if not -MAX_INT64 <= amount <= MAX_INT64:
        raise QuantityError(
            f"out of range: {_short(value)} is more than the 2^63-1 {unit} a scheduler can count"
        )
    if key is not None:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = amount
    return amount


def milli_value(value: object) -> int:
    """A quantity in thousandths, rounded up (kube's ``MilliValue``): CPU in millicores."""
    return _rounded_up(value, 1000, "thousandths", _MILLI)


def int_value(value: object) -> int:
    """A quantity in units, rounded up (kube's ``Value``): bytes, pods, devices."""
    return _rounded_up(value, 1, "units", _UNITS)


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
