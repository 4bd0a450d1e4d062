"""Integers written as text in inputs (logs, CSV traces, labels, flags), read with bounds.

Python's `int()` accepts what no input of ours means: thousands of digits (and then raises
ValueError past its 4300-digit limit), non-ASCII digits such as "١٢", underscores. Upstream reads
such text with strconv.ParseInt(text, 10, 64): ASCII digits with an optional sign, within int64.
Every integer kubegpu reads from external text goes through here: `parse_int` refuses with an
InputError naming the input and field, `int_or_none` answers None where upstream ignores the text.
"""

from __future__ import annotations

import re

from kubegpu.errors import InputError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# Long enough for any int64 written with a sign and leading zeros; the digits of a longer text
# are never converted (converting them is what costs time and hits the interpreter's limit).
MAX_INT_CHARS = 32

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


def shown(text: str, limit: int = 24) -> str:
    """A text short enough to quote in a one-line error."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _why_not(text: str, lo: int, hi: int) -> tuple[int | None, str]:
    """(value, "") or (None, reason)."""
    if len(text) > MAX_INT_CHARS:
        return None, f"{shown(text)} is too long for an integer (at most {MAX_INT_CHARS} characters)"
    if not _INTEGER.fullmatch(text):
        return None, f"expected an integer, got {shown(text)}"
    value = int(text)
    if not lo <= value <= hi:
        return None, f"{value} is out of range ({lo}..{hi})"
    return value, ""


def parse_int(text: object, *, where: str | None = None, obj: str | None = None, field: str | None = None,
              lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """The integer `text` spells (surrounding blanks allowed), within lo..hi; else InputError."""
    if isinstance(text, int) and not isinstance(text, bool):
        value, reason = (text, "") if lo <= text <= hi else (None, f"{text} is out of range ({lo}..{hi})")
    elif isinstance(text, str):
        value, reason = _why_not(text.strip(), lo, hi)
    else:
        value, reason = None, f"expected an integer, got {type(text).__name__}"
    if value is None:
        raise InputError(reason, where=where, obj=obj, field=field)
    return value


def int_or_none(text: object, *, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int | None:
    """The integer `text` spells exactly (upstream ParseInt), within lo..hi; None for anything else."""
    if not isinstance(text, str):
        return None
    return _why_not(text, lo, hi)[0]
