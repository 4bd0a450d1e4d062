"""The read side of the test API server: version, discovery, list (paginated) and get."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apiserver.resources import ResourceType
from apiserver.wire import ApiRequest, ObjectKey, Reply, status_reply

if TYPE_CHECKING:
    from apiserver.server import FakeApiServer

_PREFIX = r"^/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)"
_NAME = r"[^/]+"


def install(server: "FakeApiServer") -> None:
    server.route("GET", r"^/version/?$", get_version)
    server.route("GET", r"^/api/?$", get_api_versions)
    server.route("GET", r"^/api/(?P<version>[^/]+)/?$", get_resource_list)
    server.route("GET", r"^/apis/?$", get_group_list)
    server.route("GET", r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/?$", get_resource_list)
    server.route("GET", _PREFIX + rf"/(?P<plural>{_NAME})$", list_objects)
    server.route("GET", _PREFIX + rf"/namespaces/(?P<namespace>{_NAME})/(?P<plural>{_NAME})$", list_objects)
    server.route("GET", _PREFIX + rf"/(?P<plural>{_NAME})/(?P<name>{_NAME})$", get_object)
    server.route("GET", _PREFIX + rf"/namespaces/(?P<namespace>{_NAME})/(?P<plural>{_NAME})/(?P<name>{_NAME})$",
                 get_object)


def _reply(status: int, body: Any) -> Reply:
    return Reply(status, body)


def _not_found(message: str = "the server could not find the requested resource", **details: Any) -> Reply:
    return status_reply(404, "NotFound", message, details=details or {})


def get_version(server: "FakeApiServer", request: ApiRequest) -> Reply:
    major, minor = server.git_version.lstrip("v").split(".")[:2]
    return _reply(200, {"major": major, "minor": minor, "gitVersion": server.git_version,
                        "gitCommit": "0" * 40, "gitTreeState": "clean", "buildDate": "2026-06-01T00:00:00Z",
                        "goVersion": "go1.24.4", "compiler": "gc", "platform": "linux/amd64"})


def get_api_versions(server: "FakeApiServer", request: ApiRequest) -> Reply:
    address = server.url.split("://", 1)[1]
    return _reply(200, {"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]})


def _group_versions(server: "FakeApiServer") -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for t in server.types.values():
        if t.group and t.version not in groups.setdefault(t.group, []):
            groups[t.group].append(t.version)
    return groups


def get_group_list(server: "FakeApiServer", request: ApiRequest) -> Reply:
    groups = []
    for name, versions in sorted(_group_versions(server).items()):
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return _reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


def get_resource_list(server: "FakeApiServer", request: ApiRequest, version: str,
                      group: str | None = None) -> Reply:
    types = [t for t in server.types.values() if t.group == (group or "") and t.version == version]
    if not types:
        return _not_found()
    group_version = f"{group}/{version}" if group else version
    return _reply(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                        "resources": [t.discovery() for t in types]})


def _type(server: "FakeApiServer", group: str | None, version: str, plural: str) -> ResourceType | None:
    return next((t for t in server.types.values()
                 if t.group == (group or "") and t.version == version and t.plural == plural), None)


def _refused(server: "FakeApiServer", request: ApiRequest, verb: str, rtype: ResourceType,
             namespace: str | None) -> Reply | None:
    if (verb, rtype.group, rtype.plural) not in server.forbidden:
        return None
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    details = {"kind": rtype.plural, **({"group": rtype.group} if rtype.group else {})}
    return status_reply(403, "Forbidden", f'{rtype.plural} is forbidden: User "{request.user}" cannot {verb} '
                                          f'resource "{rtype.plural}" in API group "{rtype.group}" {scope}',
                        details=details)


def _storage_key(obj: dict, rtype: ResourceType) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if rtype.namespaced else meta["name"]


def _render(obj: dict, rtype: ResourceType, *, in_list: bool) -> dict:
    """Built-in list items come without apiVersion/kind (the List carries them); CRD items keep them."""
    if in_list and not rtype.custom:
        return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return {"apiVersion": rtype.api_version, "kind": rtype.kind,
            **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}


def _field(obj: dict, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def _matches(obj: dict, label_selector: str, field_selector: str) -> bool:
    """Equality-based label and field selectors (`a=b`, `a==b`, `a!=b`, `a`, `!a`)."""
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in label_selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    for term in filter(None, (t.strip() for t in field_selector.split(","))):
        negate = "!=" in term
        k, v = term.replace("!=", "=").replace("==", "=").split("=", 1)
        if (_field(obj, k.strip()) == v.strip()) == negate:
            return False
    return True


def list_objects(server: "FakeApiServer", request: ApiRequest, version: str, plural: str,
                 group: str | None = None, namespace: str | None = None) -> Reply:
    rtype = _type(server, group, version, plural)
    if rtype is None or (namespace is not None and not rtype.namespaced):
        return _not_found()
    refused = _refused(server, request, "list", rtype, namespace)
    if refused:
        return refused
    rv, start = server.resource_version, ""
    token = request.query.get("continue")
    if token:
        parsed = server.parse_continue(token)
        if not isinstance(parsed, tuple):
            return parsed
        rv, start = parsed
    objs = [o for o in server.objects(rtype.api_version, plural, namespace)
            if _matches(o, request.query.get("labelSelector", ""), request.query.get("fieldSelector", ""))]
    keyed = sorted(((_storage_key(o, rtype), o) for o in objs), key=lambda ko: ko[0])
    rest = [(k, o) for k, o in keyed if k >= start]
    limit = int(request.query.get("limit") or 0)
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    page = rest
    if 0 < limit < len(rest):
        page = rest[:limit]
        meta["continue"] = server.continue_token(rv, page[-1][0] + "\x00")
        meta["remainingItemCount"] = len(rest) - limit
    return _reply(200, {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta,
                        "items": [_render(o, rtype, in_list=True) for _, o in page]})


def get_object(server: "FakeApiServer", request: ApiRequest, version: str, plural: str, name: str,
               group: str | None = None, namespace: str | None = None) -> Reply:
    rtype = _type(server, group, version, plural)
    if rtype is None or (namespace is not None) != rtype.namespaced:
        return _not_found()
    refused = _refused(server, request, "get", rtype, namespace)
    if refused:
        return refused
    with server.lock:
        obj = server.store.get(ObjectKey(rtype.api_version, plural, namespace or "", name))
    if obj is None:
        return _not_found(f'{plural} "{name}" not found', name=name, kind=plural,
                          **({"group": rtype.group} if rtype.group else {}))
    return _reply(200, _render(obj, rtype, in_list=False))
