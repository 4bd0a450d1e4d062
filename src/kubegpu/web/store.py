"""The server's current model: the latest ClusterViews, how old they are, and what went wrong.

A loader (a function returning a ClusterState) feeds it; `refresh()` builds new views and swaps
them in atomically, so a request always sees one consistent state. Failures keep the previous
views, count an error and remember the message: the page and /metrics say the data is stale,
/readyz turns not-ready once the data is older than the staleness bound.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from kubegpu.model.cluster import ClusterState
from kubegpu.web.views import ClusterViews


@dataclass
class Health:
    """What /readyz, /metrics and the page header report about the data."""

    loaded_at: float | None = None        # wall clock (time.time) of the last successful build
    synced_at: float | None = None        # last time the data was known current (a build, or a watch answer)
    refresh_errors: int = 0
    refreshes: int = 0
    last_error: str = ""
    last_build_seconds: float = 0.0
    live: bool = False
    started_at: float = field(default_factory=time.time)


class ModelStore:
    """Holds the current views; thread-safe swaps, lock-free reads."""

    def __init__(self, loader: Callable[[], ClusterState], *, k8s_version: str | None = None,
                 stale_after: float = 300.0, live: bool = False) -> None:
        self.loader = loader
        self.k8s_version = k8s_version
        self.stale_after = stale_after
        self.health = Health(live=live)
        self.views: ClusterViews | None = None
        self.generation = 0
        self._refresh_lock = threading.Lock()

    def age(self, now: float | None = None) -> float | None:
        """Seconds since the data was last known to match the cluster (None before any data)."""
        if self.health.synced_at is None or self.views is None:
            return None
        return max(0.0, (now or time.time()) - self.health.synced_at)

    def mark_synced(self) -> None:
        """The source answered and nothing changed (a watch round ended cleanly): the data is current."""
        self.health.synced_at = time.time()

    def stale(self, now: float | None = None) -> bool:
        """No data yet, or (live sources only) data older than the staleness bound."""
        age = self.age(now)
        if age is None:
            return True
        return self.health.live and age > self.stale_after

    def ready(self) -> bool:
        return self.views is not None and not self.stale()

    def install(self, state: ClusterState) -> None:
        """Build views of `state` and make them current."""
        start = time.perf_counter()
        views = ClusterViews(state, k8s_version=self.k8s_version)
        self.health.last_build_seconds = time.perf_counter() - start
        self.views = views
        self.generation += 1
        self.health.loaded_at = self.health.synced_at = time.time()
        self.health.refreshes += 1
        self.health.last_error = ""

    def refresh(self) -> bool:
        """Load and install; on failure keep the old views and record the error. True on success."""
        with self._refresh_lock:
            try:
                state = self.loader()
                self.install(state)
                return True
            except Exception as err:  # any loader failure: the server keeps serving the old data
                self.record_error(err)
                return False

    def record_error(self, err: BaseException | str) -> None:
        self.health.refresh_errors += 1
        self.health.last_error = str(err) if isinstance(err, str) else f"{type(err).__name__}: {err}"
