"""The ASGI edge every request passes: read-only methods, no bodies, known query parameters,
security headers, and the exporter's own request metrics.

Pure ASGI (no BaseHTTPMiddleware) so /metrics and /api stay cheap under load.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qsl

from kubegpu.jsontext import error_body
from kubegpu.web.metrics import RequestMetrics

MAX_BODY = 1024            # bytes; nothing here takes a body
MAX_QUERY = 2048           # bytes of query string
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


async def _reject(send, code: int, message: str, extra: list[tuple[bytes, bytes]] = ()) -> None:
    body = error_body(code, message)
    await send({"type": "http.response.start", "status": code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS, *extra]})
    await send({"type": "http.response.body", "body": body})


def query_error(query: bytes, allowed: frozenset[str]) -> str | None:
    """Why this query string is refused, or None."""
    if len(query) > MAX_QUERY:
        return "query string too long"
    try:
        pairs = parse_qsl(query.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(query))
    except (UnicodeDecodeError, ValueError):
        return "malformed query string"
    names = [k for k, _ in pairs]
    unknown = sorted(set(names) - allowed)
    if unknown:
        return (f"unknown query parameter(s): {', '.join(unknown)}; allowed: "
                f"{', '.join(sorted(allowed)) or 'none'}")
    if len(names) != len(set(names)):
        return "a query parameter is repeated"
    return None


class Guard:
    """Wraps the Starlette app. `allowed` maps a path prefix to its query parameters."""

    def __init__(self, app, metrics: RequestMetrics, allowed: dict[str, frozenset[str]]) -> None:
        self.app = app
        self.metrics = metrics
        self.allowed = allowed

    def _allowed_for(self, path: str) -> frozenset[str]:
        return self.allowed.get(path, frozenset())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        try:
            await self._handle(scope, receive, send_with_headers, status)
        finally:
            route = scope.get("route")
            label = getattr(route, "path", None) or "unmatched"
            self.metrics.observe(label, scope["method"] if scope["method"] in ("GET", "HEAD") else "other",
                                 status["code"], time.perf_counter() - start)

    async def _handle(self, scope, receive, send, status):
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            status["code"] = 405
            await _reject(send, 405, f"{method} not allowed: kubegpu serve is read-only", [(b"allow", b"GET, HEAD")])
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > MAX_BODY or b"chunked" in headers.get(b"transfer-encoding", b""):
            status["code"] = 413
            await _reject(send, 413, "request body too large (nothing here takes a body)")
            return
        if not scope["path"].startswith("/static/"):
            problem = query_error(scope.get("query_string", b""), self._allowed_for(scope["path"]))
            if problem:
                status["code"] = 400
                await _reject(send, 400, problem)
                return
        await self.app(scope, receive, send)
