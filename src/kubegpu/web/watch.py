"""Keeping a live model current: the live list/watch (sources/watch.py) feeding a ModelStore.

Changes mark the model dirty; one builder thread waits `debounce` seconds so a burst of events
becomes one recomputation. API failures (5xx, hangs past the client timeout, refused
connections) are counted and retried with doubling back-off; the old views keep being served,
and the data age — the time since the API server last answered — tells when it went stale.
"""

from __future__ import annotations

import threading
from typing import Callable

from kubegpu.sources.documents import load_cluster
from kubegpu.sources.live import ListedKind
from kubegpu.sources.watch import WATCHED, Expired, LiveCache
from kubegpu.web.store import ModelStore

MAX_BACKOFF = 60.0          # seconds between retries at most, once the API server keeps failing


class LiveRefresher:
    """The threads that keep a ModelStore current from a LiveCache."""

    def __init__(self, store: ModelStore, cache_factory: Callable[..., LiveCache], *, relist_every: float = 300.0,
                 debounce: float = 1.0, max_backoff: float = MAX_BACKOFF) -> None:
        self.store = store
        self.max_backoff = max_backoff
        self.relist_every = relist_every
        self.debounce = debounce
        self.dirty = threading.Event()
        self.stop = threading.Event()
        self.cache = cache_factory(on_change=self.dirty.set, on_sync=store.mark_synced)
        self.threads: list[threading.Thread] = []

    def start(self) -> "LiveRefresher":
        self._spawn(self._initial_then_relist, "relist")
        self._spawn(self._build_loop, "build")
        return self

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)
        self.cache.close()

    def _spawn(self, target, name: str) -> None:
        t = threading.Thread(target=target, name=f"kubegpu-{name}", daemon=True)
        t.start()
        self.threads.append(t)

    def _retrying(self, action: Callable[[], object]) -> bool:
        """Run `action` until it succeeds or we stop, backing off (doubling, capped) after failures."""
        delay = 0.5
        while not self.stop.is_set():
            try:
                action()
                return True
            except Exception as err:  # every API failure: count it, keep serving the old views, retry
                self.store.record_error(err)
                self.stop.wait(delay)
                delay = min(delay * 2, self.max_backoff)
        return False

    def _initial_then_relist(self) -> None:
        def first():
            self.cache.discover()
            self.cache.relist_all()
        if not self._retrying(first):
            return
        for kind in self.cache.kinds:
            if kind.plural in WATCHED and kind.label in self.cache.versions:
                self._spawn(lambda k=kind: self._watch_loop(k), f"watch-{kind.plural}")
        while not self.stop.wait(self.relist_every):
            self._retrying(lambda: self.cache.relist_all(only=lambda k: k.plural not in WATCHED))

    def _watch_loop(self, kind: ListedKind) -> None:
        def once():
            try:
                self.cache.watch_once(kind)
            except Expired:
                self.cache.relist(kind)        # 410 Gone: the history is compacted, start over
        while not self.stop.is_set():
            self._retrying(once)

    def _build_loop(self) -> None:
        while not self.stop.is_set():
            if not self.dirty.wait(0.5):
                continue
            self.stop.wait(self.debounce)     # let a burst of events land: one rebuild per batch
            self.dirty.clear()
            try:
                self.store.install(load_cluster(self.cache.documents()))
            except Exception as err:  # a bad object from the cluster: keep the old views, say so
                self.store.record_error(err)
