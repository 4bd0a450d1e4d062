"""`?watch=1` for the test API server: watch events in the real wire format.

A watch answers newline-delimited `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}`
for every change after `resourceVersion`, as kube-apiserver does. The connection is held until
an event arrives or `hold` seconds pass, then closed (a real server closes at `timeoutSeconds`
too; clients re-watch from the last resourceVersion they saw). A resourceVersion older than the
last `compact()` gets an ERROR event with a 410 Expired Status, as upstream sends it.

Tests change objects through `put(server, obj)` and `delete(server, ...)`, which record events.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import TYPE_CHECKING

from apiserver import read_routes
from apiserver.wire import ApiRequest, ObjectKey, Reply

if TYPE_CHECKING:
    from apiserver.server import FakeApiServer

_PREFIX = r"^/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)"
_NAME = r"[^/]+"


class WatchLog:
    def __init__(self) -> None:
        self.events: list[tuple[int, str, ObjectKey, dict]] = []   # (rv, type, key, object)
        self.compacted_rv = 0
        self.changed = threading.Condition()
        self.hold = 1.0


def install(server: "FakeApiServer") -> None:
    server.watch_log = WatchLog()
    server.route("GET", _PREFIX + rf"/(?P<plural>{_NAME})$", list_or_watch)
    server.route("GET", _PREFIX + rf"/namespaces/(?P<namespace>{_NAME})/(?P<plural>{_NAME})$", list_or_watch)


def _record(server: "FakeApiServer", kind: str, key: ObjectKey, obj: dict) -> None:
    log: WatchLog = server.watch_log
    with log.changed:
        log.events.append((int(obj["metadata"]["resourceVersion"]), kind, key, copy.deepcopy(obj)))
        log.changed.notify_all()


def put(server: "FakeApiServer", obj: dict) -> ObjectKey:
    """Create or replace an object (new resourceVersion) and record ADDED or MODIFIED."""
    body = copy.deepcopy(obj)
    body.setdefault("metadata", {}).pop("resourceVersion", None)
    rtype = server.type_of(body["apiVersion"], body["kind"])
    ns = body["metadata"].get("namespace", "default") if rtype.namespaced else ""
    existed = ObjectKey(rtype.api_version, rtype.plural, ns, body["metadata"]["name"]) in server.store
    key = server.add(body)
    _record(server, "MODIFIED" if existed else "ADDED", key, server.store[key])
    return key


def delete(server: "FakeApiServer", api_version: str, kind: str, name: str, namespace: str = "") -> None:
    rtype = server.type_of(api_version, kind)
    key = ObjectKey(rtype.api_version, rtype.plural, namespace if rtype.namespaced else "", name)
    with server.lock:
        obj = server.store.pop(key)
        server._rv += 1
        obj["metadata"]["resourceVersion"] = str(server._rv)
    _record(server, "DELETED", key, obj)


def compact(server: "FakeApiServer") -> None:
    """Forget history: watches from any resourceVersion seen so far get 410 Expired."""
    with server.lock:
        server._rv += 1
        server.watch_log.compacted_rv = server._rv


def list_or_watch(server: "FakeApiServer", request: ApiRequest, version: str, plural: str,
                  group: str | None = None, namespace: str | None = None) -> Reply:
    if request.query.get("watch") not in ("1", "true"):
        return read_routes.list_objects(server, request, version=version, plural=plural, group=group,
                                        namespace=namespace)
    rtype = read_routes._type(server, group, version, plural)
    if rtype is None:
        return read_routes._not_found()
    log: WatchLog = server.watch_log
    since = int(request.query.get("resourceVersion") or server.resource_version)
    if since < log.compacted_rv:
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": f"too old resource version: {since} ({log.compacted_rv})", "reason": "Expired",
                  "code": 410}
        return Reply(200, (json.dumps({"type": "ERROR", "object": status}) + "\n").encode())
    hold = min(float(request.query.get("timeoutSeconds") or log.hold), log.hold)
    deadline = time.monotonic() + hold
    with log.changed:
        while True:
            events = [(rv, t, o) for rv, t, k, o in log.events
                      if rv > since and k.api_version == rtype.api_version and k.plural == plural
                      and (namespace is None or k.namespace == namespace)]
            left = deadline - time.monotonic()
            if events or left <= 0:
                break
            log.changed.wait(left)
    lines = [{"type": t, "object": read_routes._render(o, rtype, in_list=False)} for _, t, o in events]
    if not events and request.query.get("allowWatchBookmarks") in ("1", "true"):
        # like the watch cache: a bookmark carries the newest event's resourceVersion (a compaction is no event)
        newest = max([since] + [rv for rv, *_ in log.events])
        lines.append({"type": "BOOKMARK", "object": {"kind": rtype.kind, "apiVersion": rtype.api_version,
                                                     "metadata": {"resourceVersion": str(newest)}}})
    return Reply(200, "".join(json.dumps(line) + "\n" for line in lines).encode())
