"""Resource quantities in every Kubernetes form, exact, rounded up like apimachinery."""

from __future__ import annotations

from fractions import Fraction

import pytest

from policy_scheduler.quantities import QuantityError, int_value, milli_value, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("100m", Fraction(1, 10), id="milli"),
        pytest.param("1.5", Fraction(3, 2), id="decimal"),
        pytest.param("2Gi", 2 * 2**30, id="binary Gi"),
        pytest.param("500Ki", 500 * 1024, id="binary Ki"),
        pytest.param("1e3", 1000, id="exponent"),
        pytest.param("1E", 10**18, id="exa, not an exponent"),
        pytest.param("1Ei", 2**60, id="binary Ei"),
        pytest.param("2E3", 2000, id="upper-case exponent"),
        pytest.param("1.5Gi", 1610612736, id="fractional binary"),
        pytest.param("0.1", Fraction(1, 10), id="no float drift"),
        pytest.param(".5", Fraction(1, 2), id="leading dot"),
        pytest.param("5.", 5, id="trailing dot"),
        pytest.param("250u", Fraction(250, 10**6), id="micro"),
        pytest.param("3n", Fraction(3, 10**9), id="nano"),
        pytest.param("+4k", 4000, id="explicit sign"),
        pytest.param("-1", -1, id="negative"),
        pytest.param(2, 2, id="YAML int"),
        pytest.param(0.25, Fraction(1, 4), id="YAML float"),
        pytest.param("1e-3", Fraction(1, 1000), id="negative exponent"),
    ],
)
def test_forms(text: object, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


def test_sums_are_exact() -> None:
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("0.3")


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        ("100m", 100, 1),
        ("0.1m", 1, 1),  # MilliValue rounds up
        ("1.5", 1500, 2),  # Value rounds up
        ("2", 2000, 2),
        ("1Mi", 1048576000, 1048576),
    ],
)
def test_integer_views_round_up(text: str, milli: int, units: int) -> None:
    assert milli_value(text) == milli
    assert int_value(text) == units


@pytest.mark.parametrize(
    "text",
    ["", "abc", "1.2.3", "1Kb", "Gi", "1 Gi", "1ee3", "1e", "--1", True, None, [1], float("nan")],
)
def test_malformed(text: object) -> None:
    with pytest.raises(QuantityError, match="not a quantity"):
        parse_quantity(text)
