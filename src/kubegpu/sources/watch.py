"""The live list/watch of a cluster: list once, then watch (resuming from resourceVersion).

Nodes, pods and events change all the time and are watched (`WATCHED`); every other kind is
relisted. Lists go through `sources.live.list_kind` (paginated, a 410 on a continue token restarts
the list once); a watch that ends is resumed from the last resourceVersion it saw (bookmarks
included); a watch's 410 Expired means: relist that kind. Used by `serve`, the extender and the
shadow scheduler (through `web.watch.LiveRefresher`). GET requests only; $KUBEGPU_TIMEOUT bounds
every list request as for the CLI.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

import httpx2
import msgspec

from kubegpu.sources.documents import Documents
from kubegpu.sources.kubeconfig import request_timeouts, resolve_cluster
from kubegpu.sources.live import (DEFAULT_KINDS, DEFAULT_PAGE_SIZE, ApiClient, ApiStatus, ListedKind, list_kind, pick_version,
                                  served_versions, server_version)

WATCHED = ("nodes", "pods", "events")
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
                 on_change: Callable[[], None] = lambda: None, on_sync: Callable[[], None] = lambda: None,
                 page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.cluster = resolve_cluster(kubeconfig, context)
        self.timeouts = request_timeouts(os.environ.get("KUBEGPU_TIMEOUT"))
        self.api = ApiClient(self.cluster, self.timeouts)
        self.kinds = kinds
        self.page_size = page_size
        self.on_change = on_change
        self.on_sync = on_sync
        self.lock = threading.Lock()
        self.items: dict[str, dict[str, msgspec.Raw]] = {}
        self.rv: dict[str, str] = {}
        self.versions: dict[str, str] = {}      # kind label -> API version served
        self.server_version: str | None = None

    # ---- list ---------------------------------------------------------------------------------
    def discover(self) -> None:
        self.server_version = server_version(self.api)
        served = served_versions(self.api)
        self.versions = {k.label: v for k in self.kinds if (v := pick_version(k, served)) is not None}

    def relist(self, kind: ListedKind) -> None:
        """List one kind afresh (the one paginated LIST of sources/live.py, with its 410 restart)."""
        version = self.versions.get(kind.label)
        if version is None:
            return
        listed = list_kind(self.api, kind, version, page_size=self.page_size)
        items = {_key(raw): raw for raw in listed.items} if listed is not None else {}
        with self.lock:
            self.items[kind.label] = items
            self.rv[kind.label] = listed.resource_version if listed is not None else ""
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
