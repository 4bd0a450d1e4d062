"""The server's current model: the latest ClusterViews, how old they are, and what went wrong.

A source (the static load in `kubegpu serve`, or the live watcher) calls `install(state)`, which
builds new views and swaps them in atomically, so a request always sees one consistent state.
Failures are reported with `record_error`: the previous views stay, the error is counted and
remembered; the page and /metrics say when the data is stale, and /readyz turns not-ready once
the data is older than the staleness bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from kubegpu.model.cluster import ClusterState
from kubegpu.money.prices import LIST_PRICES_BOOK, PriceBook
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


class ModelStore:
    """Holds the current views; thread-safe swaps, lock-free reads."""

    def __init__(self, *, k8s_version: str | None = None, namespace: str | None = None, stale_after: float = 300.0,
                 live: bool = False, prices: PriceBook | None = None) -> None:
        self.k8s_version = k8s_version
        self.prices = prices if prices is not None else LIST_PRICES_BOOK   # as the CLI without --prices
        self.namespace = namespace
        self.stale_after = stale_after
        self.health = Health(live=live)
        self.views: ClusterViews | None = None
        self.warmers: list[Callable[[ClusterViews], None]] = []   # run on new views before they go live
        self.generation = 0

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
        views = ClusterViews(state, k8s_version=self.k8s_version, namespace=self.namespace, prices=self.prices)
        for warm in self.warmers:
            warm(views)
        self.health.last_build_seconds = time.perf_counter() - start
        self.views = views
        self.generation += 1
        self.health.loaded_at = self.health.synced_at = time.time()
        self.health.refreshes += 1
        self.health.last_error = ""

    def record_error(self, err: BaseException | str) -> None:
        self.health.refresh_errors += 1
        self.health.last_error = str(err) if isinstance(err, str) else f"{type(err).__name__}: {err}"
