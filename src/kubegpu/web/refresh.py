"""Keeping a live model current: relist in a background thread, with back-off on failure.

Each successful read rebuilds the views once (one batch = one recomputation). When the API
server fails, hangs (the client's timeouts apply) or disappears, the old views stay, the error
is counted, and the next attempt waits longer (doubling up to a cap), so a dead API server is
not hammered; the first success resets the delay.
"""

from __future__ import annotations

import threading

from kubegpu.web.store import ModelStore

MAX_BACKOFF = 60.0


def next_delay(previous: float, ok: bool, base: float) -> float:
    """The wait before the next attempt: `base` after success, doubling (capped) after failures."""
    if ok:
        return base
    return min(max(previous * 2, 1.0), MAX_BACKOFF)


def refresh_loop(store: ModelStore, relist_every: float, stop: threading.Event) -> None:
    delay = relist_every
    while not stop.is_set():
        ok = store.refresh()
        delay = next_delay(delay if not ok else 0.5, ok, relist_every)
        stop.wait(delay)


def start_refresher(store: ModelStore, source, *, relist_every: float = 30.0) -> threading.Event:
    """Start the background refresher; set the returned event to stop it."""
    stop = threading.Event()
    thread = threading.Thread(target=refresh_loop, args=(store, relist_every, stop), name="kubegpu-refresh",
                              daemon=True)
    thread.start()
    return stop
