"""Writes for `kubegpu models` on the test API server: the ModelCache CRD with its status
subresource, LeaderWorkerSet, and JSON merge patches (RFC 7386) of objects and their status.

    from apiserver import models_routes
    models_routes.install(server)      # serves kubegpu.io/v1alpha1 modelcaches (+ /status), LWS, PATCH

As the real API server: PATCH needs `Content-Type: application/merge-patch+json` (else 415); a
`metadata.resourceVersion` in the patch that is not the stored one answers 409 Conflict; on a
resource with a status subresource, a patch of the main resource ignores `.status` and a patch
of `/status` changes only `.status`; `metadata.generation` grows when `.spec` changes. Every
accepted patch is kept in `server.patches` as (plural, namespace, name, subresource, body).
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from apiserver.resources import ResourceType
from apiserver.wire import ApiRequest, ObjectKey, Reply, status_reply

if TYPE_CHECKING:
    from apiserver.server import FakeApiServer

MODELCACHE = ResourceType("kubegpu.io", "v1alpha1", "modelcaches", "ModelCache", False, ("mc",), custom=True)
LEADERWORKERSET = ResourceType("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", True,
                               ("lws",), custom=True)
WITH_STATUS = {"modelcaches", "deployments", "statefulsets", "leaderworkersets", "nodes", "pods"}
_PREFIX = r"^/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)"
_NAME = r"[^/]+"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def install(server: "FakeApiServer") -> None:
    server.register(MODELCACHE)
    server.register(LEADERWORKERSET)
    server.patches = []
    for scope in ("", rf"/namespaces/(?P<namespace>{_NAME})"):
        base = _PREFIX + scope + rf"/(?P<plural>{_NAME})/(?P<name>{_NAME})"
        server.route("PATCH", base + r"$", patch_object)
        server.route("PATCH", base + r"/(?P<sub>status)$", patch_object)
        server.route("GET", base + r"/(?P<sub>status)$", get_status)


def _find(server: "FakeApiServer", group: str | None, version: str, plural: str) -> ResourceType | None:
    return next((t for t in server.types.values()
                 if t.group == (group or "") and t.version == version and t.plural == plural), None)


def _not_found(rtype: ResourceType, name: str) -> Reply:
    return status_reply(404, "NotFound", f'{rtype.plural}{"." + rtype.group if rtype.group else ""} "{name}" '
                                         "not found", details={"name": name, "kind": rtype.plural})


def get_status(server: "FakeApiServer", request: ApiRequest, version: str, plural: str, name: str, sub: str,
               group: str | None = None, namespace: str | None = None) -> Reply:
    rtype = _find(server, group, version, plural)
    if rtype is None:
        return status_reply(404, "NotFound", "the server could not find the requested resource")
    with server.lock:
        obj = server.store.get(ObjectKey(rtype.api_version, plural, namespace or "", name))
    if obj is None:
        return _not_found(rtype, name)
    return Reply(200, {"apiVersion": rtype.api_version, "kind": rtype.kind, **obj})


def patch_object(server: "FakeApiServer", request: ApiRequest, version: str, plural: str, name: str,
                 group: str | None = None, namespace: str | None = None, sub: str | None = None) -> Reply:
    rtype = _find(server, group, version, plural)
    if rtype is None or (namespace is not None) != rtype.namespaced:
        return status_reply(404, "NotFound", "the server could not find the requested resource")
    if (request.headers.get("content-type") or "").split(";")[0].strip() != "application/merge-patch+json":
        return status_reply(415, "UnsupportedMediaType",
                            f"the body of the request was in an unknown format - accepted media types include: "
                            f"application/merge-patch+json (got {request.headers.get('content-type')})")
    try:
        patch = json.loads(request.body or b"{}")
    except ValueError as err:
        return status_reply(400, "BadRequest", f"error decoding patch: {err}")
    key = ObjectKey(rtype.api_version, plural, namespace or "", name)
    with server.lock:
        stored = server.store.get(key)
        if stored is None:
            return _not_found(rtype, name)
        want_rv = (patch.get("metadata") or {}).get("resourceVersion")
        if want_rv and want_rv != stored["metadata"].get("resourceVersion"):
            return status_reply(409, "Conflict", f'Operation cannot be fulfilled on {plural} "{name}": the object '
                                                 "has been modified; please apply your changes to the latest "
                                                 "version and try again", details={"name": name, "kind": plural})
        if sub == "status":
            patch = {"status": patch.get("status")} if "status" in patch else {}
        elif plural in WITH_STATUS:
            patch = {k: v for k, v in patch.items() if k != "status"}
        patch.get("metadata", {}).pop("resourceVersion", None) if isinstance(patch.get("metadata"), dict) else None
        updated = merge_patch(stored, patch)
        meta = updated.setdefault("metadata", {})
        if updated.get("spec") != stored.get("spec"):
            meta["generation"] = int(stored["metadata"].get("generation", 1)) + 1
        server._rv += 1
        meta["resourceVersion"] = str(server._rv)
        server.store[key] = updated
        server.patches.append((plural, namespace or "", name, sub, patch))
    return Reply(200, {"apiVersion": rtype.api_version, "kind": rtype.kind,
                       **{k: v for k, v in updated.items() if k not in ("apiVersion", "kind")}})
