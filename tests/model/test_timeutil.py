"""Go durations (time.ParseDuration) and RFC 3339 timestamps, parsed once for every engine."""

from datetime import timezone

import pytest

from kubegpu.model.timeutil import parse_duration, parse_time


@pytest.mark.parametrize("text, seconds", [("10m", 600), ("1h30m", 5400), ("600s", 600), ("0", 0),
                                           ("1.5h", 5400), ("250ms", 0.25), ("2h0m0s", 7200)])
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "m", "10 m", "1d", "-5m", "5m3"])
def test_not_go_durations(text):
    # upstream: time.ParseDuration wants a unit on every number except a bare "0"
    assert parse_duration(text) is None


def test_bare_seconds_only_when_asked():
    assert parse_duration("1800", bare_seconds=True) == 1800
    assert parse_duration("-1", bare_seconds=True) is None


def test_rfc3339():
    t = parse_time("2026-11-30T12:00:00Z")
    assert t is not None and t.tzinfo is not None and t.hour == 12
    assert parse_time("2026-11-30T12:00:00").tzinfo == timezone.utc
    assert parse_time("yesterday") is None and parse_time(None) is None
