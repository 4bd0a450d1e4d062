"""Durations and timestamps as Kubernetes objects write them (one parser for every engine)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


_PROM_UNITS_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000,
                  "s": 1000, "ms": 1}  # largest first: each unit may follow only a larger one
_INT64_MAX_NS = 2**63 - 1


def prometheus_duration_ms(text: str) -> int:
    """Milliseconds of a Prometheus duration ("1h30m", "90d", "0"), read as prometheus/common
    model.ParseDuration reads it: ASCII digits then one of y w d h m s ms, units strictly from
    largest to smallest, integers only, at most 2^63-1 ns; ValueError with Prometheus's reason."""
    if text == "0":
        return 0
    if text == "":
        raise ValueError("empty duration string")
    invalid = ValueError(f"not a valid duration string: {text!r}")
    ns, last, i = 0, -1, 0
    order = list(_PROM_UNITS_MS)
    while i < len(text):
        j = i
        while j < len(text) and "0" <= text[j] <= "9":
            j += 1
        if j == i or j - i > 20 or int(text[i:j]) >= 2**64:  # Go: ParseUint(s, 10, 0) fails past uint64
            raise invalid
        value = int(text[i:j])
        k = j
        while k < len(text) and not "0" <= text[k] <= "9":
            k += 1
        unit = text[j:k]
        if unit not in _PROM_UNITS_MS:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        if order.index(unit) <= last:
            raise invalid
        last = order.index(unit)
        mult = _PROM_UNITS_MS[unit] * 1_000_000
        if value > 2**63 // mult:
            raise ValueError("duration out of range")
        ns += value * mult
        if ns > _INT64_MAX_NS:
            raise ValueError("duration out of range")
        i = k
    return ns // 1_000_000


def parse_duration(text: str, *, bare_seconds: bool = False) -> float | None:
    """Seconds in a Go duration ("10m", "1h30m", "600s", "0"); None when it is not one.

    upstream (time.ParseDuration): a unit is required except for "0". `bare_seconds` also
    accepts a plain number of seconds, as annotations written by people often are.
    """
    t = text.strip()
    if not t:
        return None
    if t == "0":
        return 0.0
    if bare_seconds:
        try:
            value = float(t)
        except ValueError:
            pass
        else:
            return value if value >= 0 else None
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(t):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    return total if pos == len(t) and pos > 0 else None


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (UTC when no zone is given); None if unreadable."""
    if not text or not isinstance(text, str):
        return None
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
