"""Quantities: any value parses exactly or raises QuantityError; the integer views round up.

The oracle is the plain definition (the decimal number as a Fraction, times its
suffix's multiplier); the parser under test works in integers with bounds.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.quantities import (
    MAX_INT64,
    QuantityError,
    int_value,
    milli_value,
    parse_quantity,
)
from property.strategies import examples, json_values, quantity_like, succeeds_or_raises

MULTIPLIERS: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}

numbers = st.builds(
    "{}{}".format,
    st.integers(min_value=0, max_value=10**25).map(str),
    st.one_of(st.just(""), st.integers(min_value=0, max_value=10**12).map(lambda n: f".{n}")),
)
valid = st.one_of(
    st.tuples(st.sampled_from(["", "-", "+"]), numbers, st.sampled_from(sorted(MULTIPLIERS))),
    st.tuples(
        st.sampled_from(["", "-"]),
        numbers,
        st.integers(min_value=-40, max_value=40).map(lambda e: f"e{e}"),
    ),
)


def oracle(sign: str, number: str, suffix: str) -> Fraction:
    value = Fraction(number)
    if suffix.startswith("e"):
        value *= Fraction(10) ** int(suffix[1:])
    else:
        value *= MULTIPLIERS[suffix]
    return -value if sign == "-" else value


@settings(max_examples=examples(500))
@given(parts=valid)
def test_valid_quantities_parse_exactly_and_round_up(parts: tuple[str, str, str]) -> None:
    text = "".join(parts)
    expected = oracle(*parts)
    assert parse_quantity(text) == expected
    for view, scale in ((milli_value, 1000), (int_value, 1)):
        exact = math.ceil(expected * scale)
        if abs(exact) <= MAX_INT64:
            assert view(text) == exact
        else:
            try:
                view(text)
            except QuantityError as exc:
                assert str(exc).startswith("out of range: ")
            else:
                raise AssertionError(f"{text} beyond int64 was accepted")


@settings(max_examples=examples(500))
@given(value=st.one_of(json_values, quantity_like, st.text(max_size=120)))
def test_anything_else_parses_or_raises_quantity_error(value: Any) -> None:
    for convert in (parse_quantity, milli_value, int_value):
        succeeds_or_raises(lambda convert=convert: convert(value), QuantityError)


@settings(max_examples=examples(200))
@given(value=quantity_like)
def test_the_cache_gives_what_parsing_gives(value: str) -> None:
    # Strings are cached by value; the second answer must be the first.
    first = succeeds_or_raises(lambda: milli_value(value), QuantityError)
    second = succeeds_or_raises(lambda: milli_value(value), QuantityError)
    assert first == second
