"""Durations and timestamps as Kubernetes objects write them (one parser for every engine)."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


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
