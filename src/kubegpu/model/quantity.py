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

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"m": Fraction(1, 1000), "": Fraction(1), "k": Fraction(10**3), "M": Fraction(10**6),
            "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18)}

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+\.?\d*|\.\d+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<decimal>[mkMGTPE]?))$"
)

# upstream caps exponents well below this; anything larger is a typo or an attack.
_MAX_EXPONENT = 100


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


def resource_amount(resource: str, value: object) -> int:
    """The integer scheduler units of one resource: milli-CPU for cpu, Value() for the rest.

    upstream: NodeResourcesFit compares MilliCPU, memory and ephemeral-storage bytes, and
    scalar (extended, hugepages) resources by Value().
    """
    if isinstance(value, str):
        return _amount_of_text(resource == "cpu", value)
    q = parse_quantity(value)
    return ceil_milli(q) if resource == "cpu" else ceil_value(q)


@functools.lru_cache(maxsize=8192)
def _amount_of_text(milli: bool, text: str) -> int:
    # memoised: a 50k-pod dump repeats a few hundred distinct quantity strings
    q = parse_quantity(text)
    return ceil_milli(q) if milli else ceil_value(q)


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
