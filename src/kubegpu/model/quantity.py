"""Kubernetes resource quantities, parsed exactly.

The grammar is upstream's (k8s.io/apimachinery/pkg/api/resource/quantity.go):

    quantity  ::= signedNumber suffix
    number    ::= digits | digits.digits | digits. | .digits
    suffix    ::= binarySI (Ki Mi Gi Ti Pi Ei) | decimalSI (m "" k M G T P E) | (e|E) signedInt

Values are kept as `Fraction`s so "1.5Gi" or "0.1" never suffer float rounding; the
integer views round up as upstream's `Value()` and `MilliValue()` do.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from kubegpu.errors import QuantityError
from kubegpu.model.integers import INT64_MAX

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"m": Fraction(1, 1000), "": Fraction(1), "k": Fraction(10**3), "M": Fraction(10**6),
            "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18)}

# ASCII digits only: Python's \d would also accept "١٢" (Arabic-Indic digits), upstream does not.
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+\.?[0-9]*|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<decimal>[mkMGTPE]?))$",
    re.ASCII,
)

# upstream caps exponents well below this; anything larger is a typo or an attack.
_MAX_EXPONENT = 100
# No real quantity needs more: int64 has 19 digits and upstream keeps 3 decimals (milli).
MAX_QUANTITY_LENGTH = 64
# upstream (resource.Quantity docs): "no quantity may represent a number greater than 2^63-1 in
# magnitude" (it caps them); a request or allocatable beyond it (INT64_MAX) is a mistake, so kubegpu
# refuses it.
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity string (or a bare JSON/YAML number) into an exact Fraction.

    Raises QuantityError naming the offending text.
    """
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity {value!r} is not finite")
        # YAML "0.5" arrives as a float; its shortest repr is what the user wrote.
        value = repr(value)
    if not isinstance(value, str):
        raise QuantityError(f"quantity must be a string or number, got {type(value).__name__}")
    text = value  # upstream does not trim white space
    if len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityError(f"quantity {text[:20]!r}... is {len(text)} characters long (at most "
                            f"{MAX_QUANTITY_LENGTH})")
    match = _QUANTITY.match(text)
    if not match or not text:
        raise QuantityError(f"quantity {value!r} does not match the Kubernetes quantity grammar "
                            "(e.g. 500m, 2, 1.5Gi, 1e3)")
    number = Fraction(match["number"] if not match["number"].endswith(".") else match["number"][:-1])
    if match["sign"] == "-":
        number = -number
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"quantity {value!r} has an exponent out of range")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["decimal"] or ""]


def ceil_value(q: Fraction) -> int:
    """Whole units, rounded up (upstream Quantity.Value())."""
    return math.ceil(q)


def ceil_milli(q: Fraction) -> int:
    """Thousandths, rounded up (upstream Quantity.MilliValue())."""
    return math.ceil(q * 1000)


def is_extended_resource(name: str) -> bool:
    """upstream IsExtendedResourceName: a domain-prefixed name outside kubernetes.io (nvidia.com/gpu)."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def resource_amount(resource: str, value: object) -> int:
    """The integer scheduler units of one resource: milli-CPU for cpu, Value() for the rest.

    upstream: NodeResourcesFit compares MilliCPU, memory and ephemeral-storage bytes, and
    scalar (extended, hugepages) resources by Value(). Like the API server's validation of
    requests, limits, capacity and allocatable, a negative amount is refused ("must be greater
    than or equal to 0"), so is a fractional extended resource ("must be an integer") and an
    amount beyond int64.
    """
    if isinstance(value, str):
        return _amount_of_text(resource, value)
    return _checked_amount(resource, parse_quantity(value), value)


@functools.lru_cache(maxsize=8192)
def _amount_of_text(resource: str, text: str) -> int:
    # memoised: a 50k-pod dump repeats a few hundred distinct quantity strings
    return _checked_amount(resource, parse_quantity(text), text)


def _checked_amount(resource: str, q: Fraction, written: object) -> int:
    if q < 0:
        raise QuantityError(f"quantity {written!r} must be greater than or equal to 0")
    if is_extended_resource(resource) and q.denominator != 1:
        raise QuantityError(f"quantity {written!r} must be an integer (extended resource {resource})")
    amount = ceil_milli(q) if resource == "cpu" else ceil_value(q)
    if amount > INT64_MAX:
        unit = "milli-units" if resource == "cpu" else "units"
        raise QuantityError(f"quantity {written!r} is beyond the largest value Kubernetes can hold "
                            f"(2^63-1 {unit})")
    return amount


def format_amount(resource: str, amount: int) -> str:
    """A short human form of a scheduler amount (cpu in cores, memory in Gi)."""
    if resource == "cpu":
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= factor:
                value = amount / factor
                return f"{value:.1f}{suffix}".replace(".0" + suffix, suffix)
        return str(amount)
    return str(amount)
