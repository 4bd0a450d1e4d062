"""The one checked byte writer: stdout or a file, atomic for regular files, never replacing a device.

Every write is checked: a reader that went away (`| head`) raises `OutputClosed` (the CLI ends
quietly), a full disk, an I/O error or a short write raises `OutputError` (one line, exit 2).
A regular file (or a new one) is written to a temp file in the same folder, fsync'ed and renamed
over the target; a symlink's target is replaced, not the link; a character device or a FIFO
(`/dev/null`, a named pipe) is written to directly. `kubegpu.cli.render` builds on this.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
import threading
import zlib
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from kubegpu.errors import OutputError

CHUNK = 1 << 20  # the most one os.write() is asked to write (Linux caps one write near 2 GiB)
_BUFFER = 256 << 10  # bytes gathered before a write


class OutputClosed(Exception):
    """The reader of our output went away (EPIPE): stop quietly, as kubectl does.

    Deliberately not an OSError, so that no layer in between (click catches EPIPE and exits 1)
    mistakes it for something else.
    """


# Temp files being written right now: the interrupt watchdog removes them before a hard exit.
PENDING_TEMP_FILES: set[str] = set()
_PENDING_LOCK = threading.Lock()


def raise_for(err: OSError, name: str) -> None:
    if err.errno == errno.EPIPE:
        raise OutputClosed(name) from None
    raise OutputError(f"cannot write: {err.strerror or err}", where=name) from None


def write_all(fd: int, data: bytes | memoryview, name: str) -> None:
    """os.write until every byte is written; a write of 0 bytes or an OSError is an error."""
    view = memoryview(data).cast("B")
    while view:
        try:
            n = os.write(fd, view[:CHUNK])
        except InterruptedError:  # pragma: no cover - Python retries EINTR itself
            continue
        except OSError as err:
            raise_for(err, name)
        if n <= 0:
            raise OutputError("short write (0 bytes written)", where=name)
        view = view[n:]


class Writer:
    """A checked binary writer: buffered, flushed in chunks, optionally gzip-compressed."""

    def __init__(self, name: str, sink: Callable[[bytes], None], *, compress: bool = False) -> None:
        self.name = name
        self._sink = sink
        self._buf = bytearray()
        self._gzip = zlib.compressobj(6, zlib.DEFLATED, 31) if compress else None
        self.bytes_written = 0

    def write(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode()
        if self._gzip is not None:
            data = self._gzip.compress(data)
        self._buf += data
        if len(self._buf) >= _BUFFER:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            data, self._buf = bytes(self._buf), bytearray()
            self._sink(data)
            self.bytes_written += len(data)

    def finish(self) -> None:
        if self._gzip is not None:
            self._buf += self._gzip.flush()
            self._gzip = None
        self.flush()


def _stdout_sink() -> Callable[[bytes], None]:
    """Bytes to stdout, after whatever text is already buffered there."""
    stream = sys.stdout
    try:
        stream.flush()
    except OSError as err:
        raise_for(err, "stdout")
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is not None:
        return lambda data: write_all(fd, data, "stdout")
    binary = getattr(stream, "buffer", None)

    def to_stream(data: bytes) -> None:  # a captured stdout (tests, click's runner)
        try:
            if binary is not None:
                binary.write(data)
            else:
                stream.write(data.decode())
        except OSError as err:
            raise_for(err, "stdout")

    return to_stream


def is_stdout(path: str | os.PathLike | None) -> bool:
    return path is None or str(path) == "-"


@contextmanager
def open_output(path: str | os.PathLike | None, *, compress: bool | None = None) -> Iterator[Writer]:
    """A checked writer for stdout (`None` or '-') or a file, completed only if the block succeeds.

    A regular file (or a new one) is written to a temp file in the same folder, fsync'ed and
    renamed over the target; a symlink's target is the file replaced. A character device or a
    FIFO is opened and written directly (never replaced by a file). `compress` defaults to the
    name ending in `.gz`.
    """
    if is_stdout(path):
        writer = Writer("stdout", _stdout_sink(), compress=bool(compress))
        yield writer
        writer.finish()
        return
    name = os.fspath(path)
    if compress is None:
        compress = name.endswith(".gz")
    target = os.path.realpath(name)  # a symlink: replace what it points at, keep the link
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as err:
        raise OutputError(f"cannot write: {err.strerror or err}", where=name) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError("is a directory", where=name)
    if st is not None and not stat.S_ISREG(st.st_mode):
        with _direct(name, target, compress) as writer:
            yield writer
        return
    with _atomic(name, target, st, compress) as writer:
        yield writer


@contextmanager
def _direct(name: str, target: str, compress: bool) -> Iterator[Writer]:
    """A device or FIFO: write straight into it (a FIFO blocks until someone reads, as `>` does)."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as err:
        raise OutputError(f"cannot open for writing: {err.strerror or err}", where=name) from None
    try:
        writer = Writer(name, lambda data: write_all(fd, data, name), compress=compress)
        yield writer
        writer.finish()
    finally:
        os.close(fd)


@contextmanager
def _atomic(name: str, target: str, st: os.stat_result | None, compress: bool) -> Iterator[Writer]:
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise OutputError("folder does not exist", where=os.path.dirname(name) or name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except OSError as err:
        raise OutputError(f"cannot write in {folder}: {err.strerror or err}", where=name) from None
    with _PENDING_LOCK:
        PENDING_TEMP_FILES.add(tmp)
    done = False
    try:
        writer = Writer(name, lambda data: write_all(fd, data, name), compress=compress)
        yield writer
        writer.finish()
        try:
            os.fsync(fd)
            if st is not None:
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file
            os.close(fd)
            fd = -1
            os.replace(tmp, target)
        except OSError as err:
            raise_for(err, name)
        done = True
        _fsync_folder(folder)
    finally:
        if fd >= 0:
            os.close(fd)
        if not done:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        with _PENDING_LOCK:
            PENDING_TEMP_FILES.discard(tmp)


def _fsync_folder(folder: str) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass  # some file systems refuse fsync on a directory; the rename is already done
    finally:
        os.close(dfd)


def write_atomic(path: str | os.PathLike, data: bytes | Iterable[bytes], *, compress: bool = False) -> None:
    """Write a file completely or not at all (see `open_output`); `data` may be an iterable of chunks."""
    with open_output(path, compress=compress) as out:
        if isinstance(data, (bytes, bytearray, memoryview)):
            out.write(bytes(data))
        else:
            for chunk in data:
                out.write(chunk)
