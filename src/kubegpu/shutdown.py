"""Cleanup that must finish even when the user interrupts (uncordoning nodes, closing a journal).

A command ends within about a second of Ctrl-C or SIGTERM (`kubegpu.cli.interrupts`); work done
inside `finishing()` is waited for instead, up to its own bound, so that an interrupted
`defrag --apply` still leaves the nodes as it found them.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_until: list[float] = []


@contextmanager
def finishing(max_seconds: float = 60.0) -> Iterator[None]:
    """Ask the interrupt watchdog to wait (at most `max_seconds`) while this block runs."""
    deadline = time.monotonic() + max_seconds
    with _lock:
        _until.append(deadline)
    try:
        yield
    finally:
        with _lock:
            _until.remove(deadline)


def held_until() -> float | None:
    """The monotonic time until which cleanup in progress asks to be waited for (None: nothing held)."""
    with _lock:
        return max(_until) if _until else None
