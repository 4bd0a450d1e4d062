"""A small Kubernetes API server for tests: real HTTP on 127.0.0.1, the real wire format.

No kube-apiserver binary can be installed here, so this speaks just enough of the API for
kubegpu (through lightkube) and the real kubectl binary: /version, legacy discovery (/api,
/api/v1, /apis, /apis/{group}/{version}), GET of lists and objects at cluster scope, across
namespaces and in one namespace, `limit`/`continue` pagination with tokens that expire (410),
bearer-token authentication (401), RBAC refusals (403) and v1 Status bodies for every error.

Extending it (e.g. evictions, cordon patches): `server.route("POST", r"^/api/v1/namespaces/
(?P<namespace>[^/]+)/pods/(?P<name>[^/]+)/eviction$", handler)`, where `handler(server,
request, **groups) -> Reply`; handlers read and write `server.store` under `server.lock`.
Fault injection: `server.faults.append(hook)`, hooks see every authenticated request first
and may return a Reply to answer it instead.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

from apiserver import read_routes, watch
from apiserver.certs import ServerCerts
from apiserver.resources import BUILTIN_TYPES, CRD_TYPES, ResourceType
from apiserver.wire import ANONYMOUS, ApiRequest, LoggedRequest, ObjectKey, Reply, status_reply

EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list.")
_PUBLIC_PATHS = ("/version", "/healthz", "/livez", "/readyz")  # system:public-info-viewer


Handler = Callable[..., Reply]
Hook = Callable[[ApiRequest], "Reply | None"]


class FakeApiServer:
    """An in-memory API server. Use as a context manager; `url` is where it listens."""

    def __init__(self, *, tokens: dict[str, str] | None = None, git_version: str = "v1.33.2",
                 certs: ServerCerts | None = None) -> None:
        self.tokens = dict(tokens if tokens is not None else {"test-token": "kubegpu-test"})
        self.git_version = git_version
        self.types: dict[tuple[str, str], ResourceType] = {}
        self.store: dict[ObjectKey, dict] = {}
        self.requests: list[LoggedRequest] = []
        self.faults: list[Hook] = []
        self.errors: list[Exception] = []  # exceptions raised by route handlers
        self.forbidden: set[tuple[str, str, str]] = set()  # (verb, group, plural) refused to everyone
        self.lock = threading.RLock()
        self._routes: list[tuple[str, re.Pattern, Handler]] = []
        self._rv = 1000
        self._compacted_rv = 0
        self.certs = certs
        self._httpd: ThreadingHTTPServer | None = None
        for t in BUILTIN_TYPES:
            self.register(t)
        read_routes.install(self)
        watch.install(self)  # ?watch=1 on list paths

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "FakeApiServer":
        httpd = _QuietHTTPServer(("127.0.0.1", 0), _make_handler(self))
        if self.certs:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.certs.cert_file, self.certs.key_file)
            httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-apiserver",
                         daemon=True).start()
        self._httpd = httpd
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeApiServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        scheme = "https" if self.certs else "http"
        return f"{scheme}://127.0.0.1:{self._httpd.server_address[1]}"

    # -- objects --------------------------------------------------------------------------------
    def register(self, rtype: ResourceType) -> None:
        """Serve a resource type (built-ins are served from the start; CRDs on request)."""
        self.types[(rtype.api_version, rtype.kind)] = rtype

    def type_of(self, api_version: str, kind: str) -> ResourceType:
        rtype = self.types.get((api_version, kind))
        if rtype is None:
            known = CRD_TYPES.get((api_version, kind))
            if known is None:
                raise KeyError(f"no resource type for {api_version} {kind}; register() it first")
            self.register(known)
            rtype = known
        return rtype

    def add(self, obj: dict) -> ObjectKey:
        """Store one object (a deep copy) the way the server would: with a resourceVersion."""
        rtype = self.type_of(obj["apiVersion"], obj["kind"])
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        with self.lock:
            self._rv += 1
            meta.setdefault("resourceVersion", str(self._rv))
            ns = meta.get("namespace", "default") if rtype.namespaced else ""
            if rtype.namespaced:
                meta["namespace"] = ns
            key = ObjectKey(rtype.api_version, rtype.plural, ns, meta["name"])
            self.store[key] = body
        return key

    def add_all(self, objects: list[dict]) -> None:
        for obj in objects:
            self.add(obj)

    def objects(self, api_version: str, plural: str, namespace: str | None = None) -> list[dict]:
        """Stored objects of one type, in the API server's order (namespace, name)."""
        with self.lock:
            keys = sorted(k for k in self.store if k.api_version == api_version and k.plural == plural
                          and (namespace is None or k.namespace == namespace))
            return [self.store[k] for k in keys]

    def expire_continue_tokens(self) -> None:
        """Compact history: every continue token handed out so far now answers 410 Gone."""
        with self.lock:
            self._rv += 1
            self._compacted_rv = self._rv

    def forbid(self, verb: str, plural: str, group: str = "") -> None:
        self.forbidden.add((verb, group, plural))

    def kubeconfig(self, path: str | Path, *, token: str | None = "test-token", context: str = "fake",
                   ca_data: str | None = None) -> Path:
        """Write a kubeconfig that points at this server (and return its path).

        Over https it trusts the server's CA (`ca_data` overrides, e.g. with a wrong CA).
        """
        cluster: dict[str, Any] = {"server": self.url}
        ca_data = ca_data or (self.certs.ca_data if self.certs else None)
        if ca_data:
            cluster["certificate-authority-data"] = ca_data
        user: dict[str, Any] = {"token": token} if token else {}
        conf = {"apiVersion": "v1", "kind": "Config", "current-context": context,
                "clusters": [{"name": context, "cluster": cluster}],
                "users": [{"name": f"{context}-user", "user": user}],
                "contexts": [{"name": context, "context": {"cluster": context, "user": f"{context}-user"}}]}
        target = Path(path)
        target.write_text(json.dumps(conf, indent=2))
        return target

    # -- requests -------------------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Answer `method` on paths matching `pattern` with handler(server, request, **groups).

        Routes added later win, so a test can override a built-in route.
        """
        self._routes.insert(0, (method.upper(), re.compile(pattern), handler))

    def paths(self, path: str | None = None) -> list[LoggedRequest]:
        """The logged requests, optionally only those to one path."""
        with self.lock:
            return [r for r in self.requests if path is None or r.path == path]

    def handle(self, request: ApiRequest) -> Reply:
        reply = self._authenticate(request)
        if reply is None:
            for hook in list(self.faults):
                reply = hook(request)
                if reply is not None:
                    break
        if reply is None:
            try:
                reply = self._dispatch(request)
            except Exception as err:  # a bug in a route: answer 500 and keep it for the test to see
                self.errors.append(err)
                reply = status_reply(500, "InternalError", f"test API server: {type(err).__name__}: {err}")
        with self.lock:
            self.requests.append(LoggedRequest(request.method, request.path, dict(request.query),
                                               request.user, reply.status))
        return reply

    def _authenticate(self, request: ApiRequest) -> Reply | None:
        auth = request.headers.get("authorization", "")
        if auth:
            token = auth[7:] if auth.lower().startswith("bearer ") else None
            user = self.tokens.get(token) if token else None
            if user is None:
                return status_reply(401, "Unauthorized", "Unauthorized")
            request.user = user
            return None
        if request.path in _PUBLIC_PATHS:
            return None
        return status_reply(403, "Forbidden", f'forbidden: User "{ANONYMOUS}" cannot get path "{request.path}"',
                            details={})

    def _dispatch(self, request: ApiRequest) -> Reply:
        for method, pattern, handler in self._routes:
            m = pattern.match(request.path)
            if m and method == request.method:
                return handler(self, request, **m.groupdict())
        if any(p.match(request.path) for _, p, _ in self._routes):
            return status_reply(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                                                         "resource")
        return status_reply(404, "NotFound", "the server could not find the requested resource", details={})

    # -- pagination tokens (the real server's format: base64 of {"v","rv","start"}) -------------
    def continue_token(self, rv: int, start: str) -> str:
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).encode()
        return base64.urlsafe_b64encode(raw).decode()

    def parse_continue(self, token: str) -> tuple[int, str] | Reply:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            rv, start = int(data["rv"]), str(data["start"])
        except (ValueError, KeyError, TypeError):
            return status_reply(400, "BadRequest", "continue key is not valid: incorrect encoded start "
                                                   "resourceVersion (version meta.k8s.io/v1)")
        with self.lock:
            if rv < self._compacted_rv:
                return status_reply(410, "Expired", EXPIRED_CONTINUE, metadata={"continue": ""})
        return rv, start

    @property
    def resource_version(self) -> int:
        return self._rv


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up or reject our certificate are part of the tests, not failures."""
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _make_handler(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall each

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
            pass

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = ApiRequest(method=self.command, path=parts.path, query=dict(parse_qsl(parts.query)),
                                 headers={k.lower(): v for k, v in self.headers.items()}, body=body)
            reply = server.handle(request)
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json", **reply.headers}
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    return _Handler
