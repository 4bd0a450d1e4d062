"""The request-head cap for `kubegpu serve`, applied by the HTTP parser uvicorn actually runs.

uvicorn's `h11_max_incomplete_event_size` bounds only the h11 parser; with httptools installed
(uvicorn's choice when it is) a request line plus headers of any size were buffered and
answered. `HeadCappedHttpTools` counts the bytes of each request's head as they arrive and,
past MAX_HEAD_BYTES, answers 431 Request Header Fields Too Large (RFC 6585 section 5) and
closes the connection without parsing further, so memory does not grow with the header.
"""

from __future__ import annotations

from kubegpu.jsontext import error_body
from kubegpu.web.guard import SECURITY_HEADERS

MAX_HEAD_BYTES = 16 * 1024
HEAD_TOO_LARGE = f"request line and headers larger than {MAX_HEAD_BYTES // 1024} KiB"

try:  # a third-party extra: uvicorn falls back to h11 without it, and so do we
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - the image installs httptools
    HttpToolsProtocol = None


def response_431() -> bytes:
    body = error_body(431, HEAD_TOO_LARGE)
    head = [b"HTTP/1.1 431 Request Header Fields Too Large", b"content-type: application/json",
            b"content-length: " + str(len(body)).encode(), b"connection: close",
            *(name + b": " + value for name, value in SECURITY_HEADERS)]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


if HttpToolsProtocol is not None:
    class HeadCappedHttpTools(HttpToolsProtocol):
        """uvicorn's httptools protocol with the head of every request bounded by MAX_HEAD_BYTES."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self._head_bytes = 0
            self._in_head = True
            self._tail = b""

        def data_received(self, data: bytes) -> None:
            if self._in_head:
                # only the bytes up to the blank line are head: a keep-alive request's body often
                # arrives in the same read as its head and must not count against the cap
                end = (self._tail + data).find(b"\r\n\r\n")
                self._head_bytes += len(data) if end < 0 else max(0, end + 4 - len(self._tail))
                self._tail = data[-3:]
                if self._head_bytes > MAX_HEAD_BYTES:
                    self._in_head = False
                    self.transport.write(response_431())
                    self.transport.close()
                    return
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._in_head, self._head_bytes, self._tail = True, 0, b""


def http_protocol():
    """What to pass as uvicorn.Config(http=...): the capped httptools protocol, else h11 (capped by
    h11_max_incomplete_event_size, which answers 400)."""
    return HeadCappedHttpTools if HttpToolsProtocol is not None else "h11"
