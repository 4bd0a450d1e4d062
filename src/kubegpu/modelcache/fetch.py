"""Reading one manifest file from the source, from a byte offset on: HTTP(S) ranges or a mounted folder.

HTTP uses the standard library (`http.client`) so every redirect is seen: a redirect to another
host is refused (the manifest names one source; a CDN hop elsewhere is not silently trusted).
Answers: 206 with a Content-Range that starts at our offset resumes; 200 to a ranged request
means the server ignored the range, so the file restarts from 0; 416 at offset == size means the
partial file is already complete. 4xx other than 408/429 are permanent; 5xx, 408, 429, timeouts
and resets are transient and retried by the caller.
"""

from __future__ import annotations

import http.client
import os
import re
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator
from urllib.parse import quote, urljoin, urlsplit

from kubegpu.errors import InputError
from kubegpu.modelcache.spec import ModelCache, ModelFile, base_url

CHUNK = 1 << 20
MAX_REDIRECTS = 5
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class TransientError(Exception):
    """A failure worth retrying (reset, timeout, 5xx)."""


class PermanentError(Exception):
    """A failure retrying will not fix (404, 403, a missing file)."""


@dataclass
class Body:
    """Bytes of one file from `start` on (start is 0 when the source ignored our range)."""

    start: int
    chunks: Iterator[bytes]
    close: Callable[[], None]


class Throttle:
    """A token bucket: at most `rate` bytes/s on average, bursts up to one second's worth."""

    def __init__(self, rate: float | None, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate = rate
        self.clock, self.sleep = clock, sleep
        self.tokens = rate or 0.0
        self.last = clock()

    def consume(self, n: int) -> None:
        if not self.rate:
            return
        now = self.clock()
        self.tokens = min(self.rate, self.tokens + (now - self.last) * self.rate) - n
        self.last = now
        if self.tokens < 0:
            self.sleep(-self.tokens / self.rate)


def _one_line(err: BaseException) -> str:
    """An error as one short line: a source's garbage (an HTTP/0.9 body as a "status line") never floods stderr."""
    if isinstance(err, http.client.BadStatusLine) and not isinstance(err, http.client.RemoteDisconnected):
        return "the answer is not HTTP/1.x (no status line: an HTTP/0.9 or non-HTTP server)"
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _size_lie(cache: ModelCache, index: int, f: ModelFile, actual: int) -> InputError:
    return InputError(f"the source has {actual} bytes for {f.path!r}, the manifest says {f.size}",
                      obj=cache.ref, field=f"spec.files[{index}].size")


def open_file(cache: ModelCache, index: int, offset: int, *, timeout: float = 30.0) -> Body:
    """The file's bytes from `offset` (or from 0 when the source cannot resume)."""
    f = cache.spec.files[index]
    if cache.spec.source.path:
        return _open_path(cache, index, f, offset)
    url = urljoin(base_url(cache) or "", quote(f.path))
    return _open_http(cache, index, f, url, offset, timeout)


def _open_path(cache: ModelCache, index: int, f: ModelFile, offset: int) -> Body:
    path = Path(cache.spec.source.path or "") / f.path
    try:
        fh: BinaryIO = open(path, "rb")
    except FileNotFoundError:
        raise PermanentError(f"{path} does not exist") from None
    except OSError as err:
        raise TransientError(f"{path}: {err.strerror or err}") from None
    actual = os.fstat(fh.fileno()).st_size
    if actual != f.size:
        fh.close()
        raise _size_lie(cache, index, f, actual)
    fh.seek(offset)

    def chunks() -> Iterator[bytes]:
        while True:
            try:
                data = fh.read(CHUNK)
            except OSError as err:
                raise TransientError(f"{path}: {err.strerror or err}") from None
            if not data:
                return
            yield data

    return Body(offset, chunks(), fh.close)


def _connect(url: str, offset: int, timeout: float) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname or "", parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"User-Agent": "kubegpu-models", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        conn.request("GET", target, headers=headers)
        return conn, conn.getresponse()
    except ssl.SSLCertVerificationError as err:  # retrying will not make an untrusted certificate trusted
        conn.close()
        raise PermanentError(f"{url}: {err.verify_message or err}") from None
    except (OSError, http.client.HTTPException) as err:
        conn.close()
        raise TransientError(f"{url}: {_one_line(err)}") from None


def _open_http(cache: ModelCache, index: int, f: ModelFile, url: str, offset: int, timeout: float) -> Body:
    origin = urlsplit(url)[:2]
    for _ in range(MAX_REDIRECTS + 1):
        conn, resp = _connect(url, offset, timeout)
        if resp.status in (301, 302, 303, 307, 308):
            target = urljoin(url, resp.getheader("Location") or "")
            conn.close()
            if urlsplit(target)[:2] != origin:
                raise InputError(f"{url} redirects to another host ({urlsplit(target).netloc or target})",
                                 obj=cache.ref, field="spec.source")
            url = target
            continue
        break
    else:
        conn.close()
        raise PermanentError(f"{url}: more than {MAX_REDIRECTS} redirects")
    start = _start_of(cache, index, f, url, offset, resp, conn)
    if resp.status == 416:  # the partial file already holds every byte
        return Body(start, iter(()), conn.close)

    def chunks() -> Iterator[bytes]:
        try:
            while True:
                data = resp.read1(CHUNK)  # what arrived: a reset must not discard received bytes
                if not data:
                    return
                yield data
        except (OSError, http.client.HTTPException) as err:
            raise TransientError(f"{url}: {_one_line(err)}") from None

    return Body(start, chunks(), conn.close)


def _start_of(cache: ModelCache, index: int, f: ModelFile, url: str, offset: int,
              resp: http.client.HTTPResponse, conn: http.client.HTTPConnection) -> int:
    status = resp.status
    if status == 206:
        m = _CONTENT_RANGE.match(resp.getheader("Content-Range") or "")
        if not m or int(m.group(1)) != offset:
            conn.close()
            raise TransientError(f"{url}: 206 with Content-Range {resp.getheader('Content-Range')!r}, "
                                 f"expected bytes {offset}-")
        if m.group(3) != "*" and int(m.group(3)) != f.size:
            conn.close()
            raise _size_lie(cache, index, f, int(m.group(3)))
        return offset
    if status == 200:
        length = resp.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) != f.size:
            conn.close()
            raise _size_lie(cache, index, f, int(length))
        return 0
    conn.close()
    if status == 416 and offset >= f.size:
        m = re.match(r"^bytes \*/(\d+)$", resp.getheader("Content-Range") or "")
        if m and int(m.group(1)) != f.size:
            raise _size_lie(cache, index, f, int(m.group(1)))
        if offset == f.size:
            return offset
    if status in (408, 429) or status >= 500 or status == 416:
        raise TransientError(f"{url}: HTTP {status}")
    raise PermanentError(f"{url}: HTTP {status} {resp.reason}")
