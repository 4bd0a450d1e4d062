"""The one way kubegpu writes results: JSON, YAML, text or a table, to stdout or a file.

Output is streamed: a list is encoded item by item and a mapping key by key, so no command builds
its whole output as one string and no single write() is huge. Every write is checked: a reader
that went away (`| head`) ends the command quietly (`OutputClosed`), a full disk or an I/O error
is one line and exit 2 (`OutputError`). Files are written atomically (temp file in the same folder,
fsync, rename), except character devices and FIFOs (`/dev/null`, a named pipe), which are written
to directly and never replaced; a symlink's target is replaced, never the link.

Public API (everything a command needs):
- `emit(data, fmt, table=None, *, file=None)`       one result as json/yaml/table
- `emit_stream(items, fmt, table=None, *, file=None)` a list, encoded and written item by item
- `emit_text(chunks, *, file=None)`                  ready text (SARIF, JUnit, HTML, PrometheusRule)
- `open_output(path)`                                a checked, atomic binary writer (context manager)
- `write_atomic(path, data)`                         bytes (or an iterable of bytes) to a file
- `literal(text)`                                    cluster text made safe inside rich markup
- `console(stderr=False)`                            the rich console tables print to
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import msgspec
import yaml
from rich.console import Console
from rich.markup import escape

from kubegpu.errors import OutputError
from kubegpu.jsontext import dump_json, json_chunks, json_list_chunks, to_plain, top_plain  # noqa: F401 (re-exported)

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


def _raise_for(err: OSError, name: str) -> None:
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
            _raise_for(err, name)
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
        _raise_for(err, "stdout")
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
            _raise_for(err, "stdout")

    return to_stream


def _is_stdout(path: str | os.PathLike | None) -> bool:
    return path is None or str(path) == "-"


@contextmanager
def open_output(path: str | os.PathLike | None, *, compress: bool | None = None) -> Iterator[Writer]:
    """A checked writer for stdout (`None` or '-') or a file, completed only if the block succeeds.

    A regular file (or a new one) is written to a temp file in the same folder, fsync'ed and
    renamed over the target; a symlink's target is the file replaced. A character device or a
    FIFO is opened and written directly (never replaced by a file). `compress` defaults to the
    name ending in `.gz`.
    """
    if _is_stdout(path):
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
            _raise_for(err, name)
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


# ---------------------------------------------------------------------------------------------
# YAML encoders, as a sequence of chunks (the JSON ones are kubegpu.jsontext, shared with serve).


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe YAML without anchors/aliases (kubectl never prints them)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def yaml_chunks(data: Any) -> Iterator[bytes]:
    """Block YAML as chunks: one per list item or top-level key."""
    if isinstance(data, (list, tuple)):
        yield from yaml_list_chunks(data)
    elif isinstance(data, dict) and data:
        for key, value in data.items():
            yield _yaml({key: to_plain(value)}).encode()
    else:
        yield _yaml(to_plain(data)).encode()


def yaml_list_chunks(items: Iterable[Any]) -> Iterator[bytes]:
    first = True
    for item in items:
        first = False
        yield _yaml([to_plain(item)]).encode()
    if first:
        yield b"[]\n"


def dump_yaml(data: Any) -> str:
    return b"".join(yaml_chunks(data)).decode()


# ---------------------------------------------------------------------------------------------
# Emitting results.


def _guard_text_stream(stream: Any, name: str) -> Callable[[], None]:
    def flush() -> None:
        try:
            stream.flush()
        except OSError as err:
            _raise_for(err, name)
    return flush


def emit(data: Any, fmt: str, table: Callable[[Console], None] | None = None, *,
         file: str | os.PathLike | None = None) -> None:
    """Print `data` as json/yaml, or call `table(console)` for table/wide; to stdout or `file`."""
    if fmt in ("table", "wide") and table is not None:
        if _is_stdout(file):
            table(console())
            _guard_text_stream(sys.stdout, "stdout")()
        else:
            emit_text([render_table_text(table)], file=file)
        return
    chunks = yaml_chunks(top_plain(data)) if fmt == "yaml" else json_chunks(top_plain(data))
    with open_output(file) as out:
        for chunk in chunks:
            out.write(chunk)


def emit_stream(items: Iterable[Any], fmt: str, table: Callable[[Console], None] | None = None, *,
                file: str | os.PathLike | None = None) -> None:
    """A list of results, encoded and written one item at a time (json: a JSON list; yaml: a YAML list)."""
    if fmt in ("table", "wide") and table is not None:
        emit(None, fmt, table, file=file)
        return
    chunks = yaml_list_chunks(items) if fmt == "yaml" else json_list_chunks(to_plain(i) if isinstance(
        i, msgspec.Struct) else i for i in items)
    with open_output(file) as out:
        for chunk in chunks:
            out.write(chunk)


def emit_text(chunks: str | bytes | Iterable[str | bytes], *, file: str | os.PathLike | None = None) -> None:
    """Ready-made text (SARIF, JUnit, HTML, a PrometheusRule) to stdout or `file`, checked."""
    if isinstance(chunks, (str, bytes)):
        chunks = [chunks]
    with open_output(file) as out:
        for chunk in chunks:
            out.write(chunk)


def render_table_text(table: Callable[[Console], None]) -> str:
    """What `table(console)` prints, as plain text without colour (for --file)."""
    import io

    buf = io.StringIO()
    con = Console(file=buf, highlight=False, soft_wrap=True, width=200, no_color=True, emoji=False,
                  force_terminal=False)
    table(con)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Text from the cluster, printed literally.

# ESC sequences (CSI ... final byte, OSC ... BEL/ST, other two-byte escapes), then any other
# C0/C1 control character except tab and newline.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Remove terminal escape sequences and control characters (keeps tab and newline)."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def literal(text: Any) -> str:
    """Cluster-provided text (names, event messages) made safe for rich markup: shown as written.

    `big-[bold red]boom[/]` stays those characters; `[/dev/nvidia0 /dev/nvidiactl]` cannot break
    a table; ESC/OSC sequences and control characters never reach the terminal.
    """
    return escape(strip_controls(str(text)))


def console(stderr: bool = False) -> Console:
    """A rich console: colour on a TTY only, wide (no wrapping) when piped."""
    stream = sys.stderr if stderr else sys.stdout
    tty = stream.isatty()
    return Console(file=stream, highlight=False, soft_wrap=not tty, width=None if tty else 200,
                   no_color=bool(os.environ.get("NO_COLOR")) or not tty, emoji=False)
