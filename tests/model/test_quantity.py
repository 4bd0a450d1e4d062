"""Quantities follow upstream's grammar (apimachinery resource/quantity.go) exactly."""

from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from kubegpu.errors import QuantityError
from kubegpu.model.quantity import ceil_milli, ceil_value, format_amount, parse_quantity, resource_amount


@pytest.mark.parametrize("text, value", [
    # upstream docs (Quantity godoc / "Resource units in Kubernetes")
    ("128974848", Fraction(128974848)),
    ("129e6", Fraction(129_000_000)),
    ("129M", Fraction(129_000_000)),
    ("123Mi", Fraction(123 * 2**20)),
    ("100m", Fraction(1, 10)),
    ("0.1", Fraction(1, 10)),
    ("1.5Gi", Fraction(3 * 2**29)),
    ("1e3", Fraction(1000)),
    ("1E3", Fraction(1000)),
    ("1.0e-3", Fraction(1, 1000)),
    (".5", Fraction(1, 2)),
    ("5.", Fraction(5)),
    ("+1k", Fraction(1000)),
    ("-2Mi", Fraction(-2 * 2**20)),
    ("1E", Fraction(10**18)),  # 'E' alone is the exa suffix, not an exponent
    ("2Ei", Fraction(2 * 2**60)),
    ("0", Fraction(0)),
    (1, Fraction(1)),
    (0.5, Fraction(1, 2)),
])
def test_upstream_documented_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "1.5.5", "Gi", "1 Gi", "1ki", "--1", "1e", "1.5e3.2", "1m2",
                                  "1KiB", "one", "+", ".", "0x10", "1_000"])
def test_rejects_what_upstream_rejects(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("value", [True, None, [1], {"a": 1}, float("inf"), float("nan")])
def test_rejects_non_quantities(value):
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_value_and_milli_round_up_like_upstream():
    # upstream: Value() and MilliValue() round up to the next integer
    assert ceil_value(parse_quantity("100m")) == 1
    assert ceil_value(parse_quantity("1.5")) == 2
    assert ceil_milli(parse_quantity("0.0001")) == 1
    assert resource_amount("cpu", "1.5") == 1500
    assert resource_amount("memory", "1.5Gi") == 1610612736
    assert resource_amount("nvidia.com/gpu", "2") == 2


def test_format_amount_is_readable():
    assert format_amount("cpu", 1500) == "1500m"
    assert format_amount("cpu", 2000) == "2"
    assert format_amount("memory", 2**30) == "1Gi"
    assert format_amount("nvidia.com/gpu", 4) == "4"


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi", "m"]))
def test_integer_with_suffix_round_trips(n, suffix):
    factor = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
              "m": Fraction(1, 1000)}[suffix]
    assert parse_quantity(f"{n}{suffix}") == n * factor


def test_absurd_exponents_are_refused_rather_than_expanded():
    # our guard: a 10^999 quantity is a typo or an attack, never a real request
    with pytest.raises(QuantityError):
        parse_quantity("1e999")
