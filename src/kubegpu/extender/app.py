"""The `kubegpu extender` ASGI application: POST <prefix>/filter|prioritize|preempt, probes, /metrics.

Same stack as `kubegpu serve` (Starlette under uvicorn, msgspec on the wire, the dashboard's
security headers). The edge reads each body itself, bounded by `max_body` (a larger body is a
413 before it is read), so a hostile caller costs at most that much memory. Verbs run in the
event loop: each is about a millisecond of numpy, and kube-scheduler calls one at a time per pod.
A request that cannot be read gets a 4xx with one JSON line, never a traceback.
"""

from __future__ import annotations

import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kubegpu.extender.service import BadRequest, Extender
from kubegpu.web.guard import SECURITY_HEADERS

JSON = "application/json"
DEFAULT_MAX_BODY = 40 << 20   # a full NodeList of 5,000 GPU nodes is ~34 MB (nodeCacheCapable: ~0.1 MB)
VERBS = ("filter", "prioritize", "preempt")
BODY_KEY = "kubegpu.body"
PROBES = ("/healthz", "/readyz", "/metrics")


def _error(code: int, message: str) -> Response:
    return Response(json.dumps({"error": message, "code": code}) + "\n", status_code=code, media_type=JSON)


async def _reject(send, code: int, message: str, extra=()) -> None:
    body = (json.dumps({"error": message, "code": code}) + "\n").encode()
    await send({"type": "http.response.start", "status": code,
                "headers": [(b"content-type", JSON.encode()), (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS, *extra]})
    await send({"type": "http.response.body", "body": body})


class BodyGuard:
    """POST only to the verbs, GET/HEAD elsewhere; the body read here, at most `max_body` bytes."""

    def __init__(self, app, *, prefix: str, max_body: int, verbs: bool = True) -> None:
        self.app = app
        self.verb_paths = {f"{prefix}/{v}" for v in VERBS} if verbs else set()
        self.max_body = max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        if path in self.verb_paths:
            if method != "POST":
                await _reject(send, 405, f"{method} not allowed: extender verbs take POST", [(b"allow", b"POST")])
                return
            headers = dict(scope.get("headers") or [])
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                await _reject(send, 413, f"request body larger than {self.max_body} bytes")
                return
            chunks, size = [], 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    await _reject(send, 413, f"request body larger than {self.max_body} bytes")
                    return
                chunks.append(chunk)
                if not message.get("more_body"):
                    break
            scope[BODY_KEY] = b"".join(chunks)
        elif method not in ("GET", "HEAD"):
            if path in PROBES:
                await _reject(send, 405, f"{method} not allowed here", [(b"allow", b"GET, HEAD")])
            else:
                await _reject(send, 404, f"no such path: {path}")
            return

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(extender: Extender, *, prefix: str = "", max_body: int = DEFAULT_MAX_BODY,
               verbs: bool = True) -> BodyGuard:
    """The whole extender server as one ASGI callable (`verbs=False`: probes and /metrics only, for shadow)."""
    prefix = ("/" + prefix.strip("/")) if prefix.strip("/") else ""
    store, metrics = extender.store, extender.metrics

    def verb(call):
        async def handler(request: Request) -> Response:
            body = request.scope.get(BODY_KEY, b"")
            try:
                return Response(call(body), media_type=JSON)
            except BadRequest as err:
                return _error(400, str(err))
            except Exception as err:  # a bug of ours: one line, no traceback, the server keeps serving
                return _error(500, f"internal error: {type(err).__name__}: {err}")
        return handler

    async def healthz(request: Request) -> Response:
        return Response("ok\n", media_type="text/plain")

    async def readyz(request: Request) -> Response:
        if store.ready():
            return Response("ready\n", media_type="text/plain")
        return Response("not ready: " + (store.health.last_error or "no cluster data yet") + "\n",
                        status_code=503, media_type="text/plain")

    async def metrics_route(request: Request) -> Response:
        body, content_type = metrics.render(request.headers.get("accept", ""))
        return Response(body, headers={"Content-Type": content_type})

    async def not_found(request: Request, exc) -> Response:
        return _error(404, f"no such path: {request.url.path}")

    routes = [Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics_route)]
    if verbs:
        routes += [Route(f"{prefix}/filter", verb(extender.filter), methods=["POST"]),
                   Route(f"{prefix}/prioritize", verb(extender.prioritize), methods=["POST"]),
                   Route(f"{prefix}/preempt", verb(extender.preempt), methods=["POST"])]
    app = Starlette(routes=routes, debug=False, exception_handlers={404: not_found, 405: not_found})
    return BodyGuard(app, prefix=prefix, max_body=max_body, verbs=verbs)
