"""A real HTTP model source on 127.0.0.1 for the tests: Range requests and the faults of real ones.

Faults are per path and counted down per request: `resets[path] = (after_bytes, times)` closes the
socket mid-body, `wrong[path] = times` serves bytes with one flipped, `missing` answers 404,
`redirects[path] = url` answers 302, `ignore_range` answers 200 to ranged requests, `extra[path]`
appends bytes (a lying size), `rate` throttles every response (bytes/s).
"""

from __future__ import annotations

import hashlib
import re
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml


class SourceServer:
    def __init__(self, files: dict[str, bytes], prefix: str = "/models/", certs: Any = None) -> None:
        self.files = dict(files)
        self.prefix = prefix
        self.rate: float | None = None
        self.resets: dict[str, tuple[int, int]] = {}
        self.wrong: dict[str, int] = {}
        self.missing: set[str] = set()
        self.redirects: dict[str, str] = {}
        self.extra: dict[str, bytes] = {}
        self.ignore_range = False
        self.log: list[tuple[str, str | None, int]] = []  # (path, Range header, status)
        self.lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self.scheme = "http"
        if certs is not None:  # apiserver.certs.ServerCerts: a 127.0.0.1 certificate from a throwaway CA
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certs.cert_file, certs.key_file)
            self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"

    def __enter__(self) -> "SourceServer":
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._httpd.server_address[1]}{self.prefix}"

    def take(self, table: dict, path: str) -> Any:
        with self.lock:
            value = table.get(path)
            if value is None:
                return None
            times = value[1] if isinstance(value, tuple) else value
            if times <= 0:
                return None
            table[path] = (value[0], times - 1) if isinstance(value, tuple) else times - 1
            return value

    def ranges(self, path: str) -> list[str | None]:
        return [r for p, r, _ in self.log if p == path]


def _handler(src: SourceServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            rng = self.headers.get("Range")
            path = self.path[len(src.prefix):] if self.path.startswith(src.prefix) else None
            if path in src.redirects:
                src.log.append((path, rng, 302))
                return self._answer(302, {"Location": src.redirects[path], "Content-Length": "0"})
            if path is None or path not in src.files or path in src.missing:
                src.log.append((path or self.path, rng, 404))
                return self._answer(404, {"Content-Length": "9"}, b"not found")
            data = src.files[path] + src.extra.get(path, b"")
            if src.take(src.wrong, path):
                data = bytes([data[0] ^ 0xFF]) + data[1:] if data else data
            start, status = 0, 200
            m = re.match(r"^bytes=(\d+)-$", rng or "")
            if m and not src.ignore_range:
                start = int(m.group(1))
                if start >= len(data):
                    src.log.append((path, rng, 416))
                    return self._answer(416, {"Content-Range": f"bytes */{len(data)}", "Content-Length": "0"})
                status = 206
            src.log.append((path, rng, status))
            body = data[start:]
            headers = {"Content-Length": str(len(body)), "Accept-Ranges": "bytes"}
            if status == 206:
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            self._answer(status, headers)
            reset = src.take(src.resets, path)
            limit = reset[0] if reset else None
            sent = 0
            step = 64 * 1024
            while sent < len(body):
                piece = body[sent:sent + step]
                if limit is not None and sent + len(piece) > limit:
                    self.wfile.write(piece[:max(0, limit - sent)])
                    self.wfile.flush()
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.connection.close()
                    self.close_connection = True
                    return
                try:
                    self.wfile.write(piece)
                except OSError:
                    return
                sent += len(piece)
                if src.rate:
                    time.sleep(len(piece) / src.rate)

    return Handler


def manifest(files: dict[str, bytes]) -> list[dict]:
    return [{"path": p, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()} for p, b in files.items()]


def cache_object(name: str, version: str, files: dict[str, bytes], source: dict, **spec: Any) -> dict:
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "ModelCache", "metadata": {"name": name},
            "spec": {"version": version, "files": manifest(files), "source": source, **spec}}


def write_cache(path, obj: dict):
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return path
