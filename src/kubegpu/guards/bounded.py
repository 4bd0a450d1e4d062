"""Reading an input with bounds: at most so many bytes, and for pipes, FIFOs and devices, at most so long.

A regular file ends; stdin, a FIFO with no writer, `/dev/zero` or `/dev/urandom` may not. Every
file-like input (snapshots, logs, CSV traces, mix files, audit config, kubeconfig) is opened through
`open_bounded`, which refuses more than `max_bytes` and, on anything but a regular file, more than
`timeout` seconds in total (default 300 s, `KUBEGPU_READ_TIMEOUT` overrides), each as one InputError
naming the input. A FIFO is opened with O_NONBLOCK (open() would wait for a writer for ever) and
then polled, so the time bound covers the wait for a writer too.
"""

from __future__ import annotations

import io
import os
import select
import stat
import sys
import time
from pathlib import Path

from kubegpu.errors import InputError

TIMEOUT_ENV = "KUBEGPU_READ_TIMEOUT"
DEFAULT_TIMEOUT = 300.0


def read_timeout() -> float:
    """Seconds one non-regular input may take in total (KUBEGPU_READ_TIMEOUT, default 300)."""
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected seconds, got {text!r}", where=f"${TIMEOUT_ENV}") from None
    if not 0 < value <= 86400:
        raise InputError(f"expected seconds between 0 and 86400, got {text!r}", where=f"${TIMEOUT_ENV}")
    return value


def path_text(path: str | os.PathLike) -> str:
    """A file name as text that can be printed and encoded: bytes that are not UTF-8 (kept by
    Python as surrogates, which no encoder accepts) become backslash escapes, as `ls -b` shows them."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no file name decoded to (e.g. from a JSON "\\ud800")
        return os.fspath(path).encode("utf-8", "backslashreplace").decode("utf-8")


def size_text(n: int) -> str:
    return f"{n / 1024**3:g} GiB" if n >= 1024**3 else f"{n / 1024**2:g} MiB" if n >= 1024**2 else f"{n} bytes"


class BoundedRaw(io.RawIOBase):
    """A raw reader over one fd that counts bytes and, for non-regular files, watches a deadline."""

    def __init__(self, fd: int, where: str, *, max_bytes: int, deadline: float | None, close_fd: bool) -> None:
        self.fd = fd
        self.where = where
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.total = 0
        self._close_fd = close_fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if self.deadline is not None:
            self._wait()
        try:
            n = os.readv(self.fd, [buffer])
        except BlockingIOError:
            return self.readinto(buffer)
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", where=self.where) from None
        self.total += n
        if self.total > self.max_bytes:
            raise InputError(f"larger than {size_text(self.max_bytes)} (an input without end?)", where=self.where)
        return n

    def _wait(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise InputError(f"no end of input after {read_timeout():g} s (a pipe or FIFO that never "
                                 f"closes? set {TIMEOUT_ENV} to wait longer)", where=self.where)
            if poller.poll(min(left, 1.0) * 1000):
                return

    def close(self) -> None:
        if not self.closed and self._close_fd:
            os.close(self.fd)
        super().close()


class _CountedStream(io.RawIOBase):
    """A byte stream without a file descriptor, counted against `max_bytes`."""

    def __init__(self, stream, where: str, max_bytes: int) -> None:
        self.stream = stream
        self.where = where
        self.max_bytes = max_bytes
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.stream.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.total += n
        if self.total > self.max_bytes:
            raise InputError(f"larger than {size_text(self.max_bytes)} (an input without end?)", where=self.where)
        return n


def open_bounded(path: str | Path, *, where: str | None = None, max_bytes: int) -> io.BufferedReader:
    """A buffered binary reader of `path` ('-' is stdin) that enforces the size and time bounds."""
    name = str(path)
    where = where or ("<stdin>" if name == "-" else path_text(name))
    if name == "-":
        if sys.stdin is None:  # fd 0 was closed before we started (`<&-`)
            raise InputError("cannot read: stdin is closed", where=where)
        try:
            fd, close_fd = sys.stdin.fileno(), False
        except (AttributeError, OSError, ValueError):  # a stdin in memory (tests, click's runner): it ends
            return io.BufferedReader(_CountedStream(sys.stdin.buffer, where, max_bytes))
    else:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without a writer
        except IsADirectoryError:
            raise InputError("is a directory", where=where) from None
        except FileNotFoundError:
            raise InputError("no such file or directory", where=where) from None
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", where=where) from None
        close_fd = True
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError("is a directory", where=where)
        regular = stat.S_ISREG(mode)
        if close_fd:
            os.set_blocking(fd, regular or not stat.S_ISFIFO(mode))  # FIFOs: poll, then read what is there
    except BaseException:
        if close_fd:
            os.close(fd)
        raise
    deadline = None if regular else time.monotonic() + read_timeout()
    return io.BufferedReader(BoundedRaw(fd, where, max_bytes=max_bytes, deadline=deadline, close_fd=close_fd),
                             buffer_size=1 << 20)


def read_bounded(path: str | Path, *, where: str | None = None, max_bytes: int) -> bytes:
    """All bytes of `path` within the bounds."""
    with open_bounded(path, where=where, max_bytes=max_bytes) as fh:
        return fh.read()
