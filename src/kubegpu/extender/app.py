"""The `kubegpu extender` ASGI application: POST <prefix>/filter|prioritize|preempt, probes, /metrics.

Runs under the same uvicorn setup as `kubegpu serve` (web.serving: httptools with the 16 KiB
head cap, no access log), msgspec on the wire, the dashboard's security headers. It is one raw
ASGI callable, not a Starlette app: a verb call is about a millisecond of numpy, and routing,
middleware and Request/Response objects would add a third to that. The body is read here,
bounded by `max_body` (a larger body is a 413 before it is read), so a hostile caller costs at
most that much memory. Verbs run in the event loop: kube-scheduler calls one at a time per pod.
A request that cannot be read gets a 4xx with one JSON line, never a traceback.
"""

from __future__ import annotations

from kubegpu.extender.service import BadRequest, Extender
from kubegpu.jsontext import error_body
from kubegpu.web.guard import SECURITY_HEADERS

JSON = b"application/json"
TEXT = b"text/plain; charset=utf-8"
DEFAULT_MAX_BODY = 40 << 20   # a full NodeList of 5,000 GPU nodes is ~34 MB (nodeCacheCapable: ~0.1 MB)
VERBS = ("filter", "prioritize", "preempt")
PROBES = ("/healthz", "/readyz", "/metrics")


async def _answer(send, status: int, content_type: bytes, body: bytes, extra=()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", b"%d" % len(body)),
                            *SECURITY_HEADERS, *extra]})
    await send({"type": "http.response.body", "body": body})


async def _reject(send, code: int, message: str, extra=()) -> None:
    await _answer(send, code, JSON, error_body(code, message), extra)


async def _lifespan(receive, send) -> None:
    """Nothing to start or stop; answering keeps uvicorn from logging 'lifespan unsupported'."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class ExtenderApp:
    """POST only to the verbs (body read here, at most `max_body` bytes), GET/HEAD to the probes."""

    def __init__(self, extender: Extender, *, prefix: str, max_body: int, verbs: bool = True) -> None:
        self.calls = {f"{prefix}/{v}": getattr(extender, v) for v in VERBS} if verbs else {}
        self.store, self.metrics = extender.store, extender.metrics
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        call = self.calls.get(path)
        if call is not None:
            if method != "POST":
                await _reject(send, 405, f"{method} not allowed: extender verbs take POST", [(b"allow", b"POST")])
                return
            body = await self._body(scope, receive, send)
            if body is not None:
                await self._verb(send, call, body)
            return
        if path not in PROBES:
            await _reject(send, 404, f"no such path: {path}")
        elif method not in ("GET", "HEAD"):
            await _reject(send, 405, f"{method} not allowed here", [(b"allow", b"GET, HEAD")])
        elif path == "/healthz":
            await _answer(send, 200, TEXT, b"ok\n")
        elif path == "/readyz":
            if self.store.ready():
                await _answer(send, 200, TEXT, b"ready\n")
            else:
                why = self.store.health.last_error or "no cluster data yet"
                await _answer(send, 503, TEXT, ("not ready: " + why + "\n").encode())
        else:
            accept = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"accept"), "")
            body, content_type = self.metrics.render(accept)
            await _answer(send, 200, content_type.encode("latin-1"), body)

    async def _body(self, scope, receive, send) -> bytes | None:
        """The request body, or None when it was refused (413) or the client left."""
        for name, value in scope["headers"]:
            if name == b"content-length" and (not value.isdigit() or int(value) > self.max_body):
                await _reject(send, 413, f"request body larger than {self.max_body} bytes")
                return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _reject(send, 413, f"request body larger than {self.max_body} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @staticmethod
    async def _verb(send, call, body: bytes) -> None:
        try:
            out = call(body)
        except BadRequest as err:
            await _reject(send, 400, str(err))
            return
        except Exception as err:  # a bug of ours: one line, no traceback, the server keeps serving
            await _reject(send, 500, f"internal error: {type(err).__name__}: {err}")
            return
        await _answer(send, 200, JSON, out)


def create_app(extender: Extender, *, prefix: str = "", max_body: int = DEFAULT_MAX_BODY,
               verbs: bool = True) -> ExtenderApp:
    """The whole extender server as one ASGI callable (`verbs=False`: probes and /metrics only, for shadow)."""
    prefix = ("/" + prefix.strip("/")) if prefix.strip("/") else ""
    return ExtenderApp(extender, prefix=prefix, max_body=max_body, verbs=verbs)
