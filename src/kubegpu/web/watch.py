"""Keeping a live model current: list once, then watch (resuming from resourceVersion).

Nodes, pods and events change all the time and are watched; every other kind the engines read
is relisted every `relist_every` seconds. A watch that ends is resumed from the last
resourceVersion it saw (bookmarks included); a 410 Expired relists that kind and watches on.
Changes mark the model dirty; one builder thread waits `debounce` seconds so a burst of events
becomes one recomputation. API failures (5xx, hangs past the client timeout, refused
connections) are counted and retried with doubling back-off; the old views keep being served,
and the data age — the time since the API server last answered — tells when it went stale.

Transport: the live source's client (lightkube's kubeconfig, TLS and auth); GET requests only.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

import httpx2
import msgspec

from kubegpu.sources.documents import Documents, load_cluster
from kubegpu.sources.kubeconfig import request_timeouts, resolve_cluster
from kubegpu.sources.live import (DEFAULT_KINDS, DEFAULT_PAGE_SIZE, ApiStatus, ListedKind, _Api, _pages,
                                  _served_versions, _server_version, pick_version, with_type_meta)
from kubegpu.web.store import ModelStore

WATCHED = ("nodes", "pods", "events")
MAX_BACKOFF = 60.0          # seconds between retries at most, once the API server keeps failing
WATCH_TIMEOUT = 60          # seconds a watch request asks the server to hold it open


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    resourceVersion: str = ""


class _Head(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _StatusBody(msgspec.Struct):
    code: int = 0
    message: str = ""


_HEAD = msgspec.json.Decoder(_Head)
_EVENT = msgspec.json.Decoder(_Event)


class Expired(Exception):
    """The resourceVersion is too old (410): relist."""


class LiveCache:
    """Raw objects per kind and key, with the resourceVersion each kind is current at."""

    def __init__(self, kubeconfig: str | None, context: str | None, kinds: tuple[ListedKind, ...] = DEFAULT_KINDS,
                 on_change: Callable[[], None] = lambda: None, on_sync: Callable[[], None] = lambda: None) -> None:
        self.cluster = resolve_cluster(kubeconfig, context)
        self.timeouts = request_timeouts(os.environ.get("KUBEGPU_TIMEOUT"))
        self.api = _Api(self.cluster, self.timeouts)
        self.kinds = kinds
        self.on_change = on_change
        self.on_sync = on_sync
        self.lock = threading.Lock()
        self.items: dict[str, dict[str, msgspec.Raw]] = {}
        self.rv: dict[str, str] = {}
        self.versions: dict[str, str] = {}      # kind label -> API version served
        self.server_version: str | None = None

    # ---- list ---------------------------------------------------------------------------------
    def discover(self) -> None:
        self.server_version = _server_version(self.api)
        served = _served_versions(self.api)
        self.versions = {k.label: v for k in self.kinds if (v := pick_version(k, served)) is not None}

    def relist(self, kind: ListedKind) -> None:
        version = self.versions.get(kind.label)
        if version is None:
            return
        api_version = version if not kind.group else f"{kind.group}/{version}"
        items: dict[str, msgspec.Raw] = {}
        rv = ""
        try:
            for page in _pages(self.api, kind.path(version), DEFAULT_PAGE_SIZE):
                item_kind = page.kind[:-4] if page.kind and page.kind.endswith("List") else kind.kind
                for raw in page.items or []:
                    raw = with_type_meta(raw, page.apiVersion or api_version, item_kind)
                    items[_key(raw)] = raw
                rv = (page.metadata.resourceVersion if page.metadata else None) or rv
        except ApiStatus as status:
            if status.code == 404 and (kind.optional or kind.group):
                items, rv = {}, ""
            else:
                raise
        with self.lock:
            self.items[kind.label] = items
            self.rv[kind.label] = rv
        self.on_change()

    def relist_all(self, only: Callable[[ListedKind], bool] = lambda k: True) -> None:
        for kind in self.kinds:
            if only(kind):
                self.relist(kind)
        self.on_sync()

    # ---- watch --------------------------------------------------------------------------------
    def watch_once(self, kind: ListedKind) -> int:
        """One watch request from the kind's resourceVersion; applies its events; returns how many."""
        version = self.versions[kind.label]
        params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_TIMEOUT),
                  "resourceVersion": self.rv.get(kind.label, "")}
        applied = 0
        try:
            with self.api.http.stream("GET", kind.path(version), params=params,
                                      timeout=httpx2.Timeout(WATCH_TIMEOUT + 10, connect=self.timeouts.connect)
                                      ) as resp:
                if resp.status_code == 410:
                    raise Expired(kind.label)
                if resp.status_code != 200:
                    raise ApiStatus.from_response(resp.status_code, resp.read(), resp.headers.get("Content-Type", ""))
                for line in resp.iter_lines():
                    if line.strip():
                        applied += self._apply(kind, line.encode() if isinstance(line, str) else line)
        except httpx2.HTTPError as err:
            raise ConnectionError(f"watch {kind.label}: {type(err).__name__}: {err}") from None
        self.on_sync()
        return applied

    def _apply(self, kind: ListedKind, line: bytes) -> int:
        event = _EVENT.decode(line)
        if event.type == "ERROR":
            status = msgspec.json.decode(event.object, type=_StatusBody)
            if status.code == 410:
                raise Expired(kind.label)
            raise ConnectionError(f"watch {kind.label}: {status.code} {status.message}")
        rv = _HEAD.decode(event.object).metadata.resourceVersion
        with self.lock:
            if event.type != "BOOKMARK":
                bucket = self.items.setdefault(kind.label, {})
                key = _key(event.object)
                if event.type == "DELETED":
                    bucket.pop(key, None)
                else:
                    bucket[key] = msgspec.Raw(bytes(event.object))
            if rv:
                self.rv[kind.label] = rv
        if event.type == "BOOKMARK":
            return 0
        self.on_change()
        return 1

    # ---- the model ----------------------------------------------------------------------------
    def documents(self) -> Documents:
        docs = Documents(source=f"live:{self.cluster.context}", server_version=self.server_version,
                         captured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with self.lock:
            for label, bucket in self.items.items():
                for raw in bucket.values():
                    docs.add(raw, f"{self.cluster.server.rstrip('/')} {label}")
        return docs

    def close(self) -> None:
        self.api.close()


def _key(raw) -> str:
    meta = _HEAD.decode(raw).metadata
    return f"{meta.namespace}/{meta.name}"


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
