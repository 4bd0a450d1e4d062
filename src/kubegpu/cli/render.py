"""The one way kubegpu writes results: JSON, YAML, text or a table, to stdout or a file.

Output is streamed: a list is encoded item by item and a mapping key by key, so no command builds
its whole output as one string and no single write() is huge. Every write is checked: a reader
that went away (`| head`) ends the command quietly (`OutputClosed`), a full disk or an I/O error
is one line and exit 2 (`OutputError`). Files are written atomically (temp file in the same folder,
fsync, rename), except character devices and FIFOs (`/dev/null`, a named pipe), which are written
to directly and never replaced; a symlink's target is replaced, never the link.

The checked byte writer itself (atomic files, devices, EPIPE/ENOSPC) is `kubegpu.cli.writer`;
its API is re-exported here. Public API (everything a command needs):
- `emit(data, fmt, table=None, *, file=None)`       one result as json/yaml/table
- `emit_stream(items, fmt, table=None, *, file=None)` a list, encoded and written item by item
- `emit_text(chunks, *, file=None)`                  ready text (SARIF, JUnit, HTML, PrometheusRule)
- `open_output(path)`                                a checked, atomic binary writer (context manager)
- `write_atomic(path, data)`                         bytes (or an iterable of bytes) to a file
- `literal(text)`                                    cluster text made safe inside rich markup
- `console(stderr=False)`                            the rich console tables print to
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, Iterable, Iterator

import yaml
from rich.console import Console
from rich.markup import escape

from kubegpu.cli.writer import is_stdout, open_output, raise_for
from kubegpu.jsontext import json_chunks, json_list_chunks, to_plain, top_plain

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


# ---------------------------------------------------------------------------------------------
# Emitting results.


def _guard_text_stream(stream: Any, name: str) -> Callable[[], None]:
    def flush() -> None:
        try:
            stream.flush()
        except OSError as err:
            raise_for(err, name)
    return flush


def emit(data: Any, fmt: str, table: Callable[[Console], None] | None = None, *,
         file: str | os.PathLike | None = None) -> None:
    """Print `data` as json/yaml, or call `table(console)` for table/wide; to stdout or `file`."""
    if fmt in ("table", "wide") and table is not None:
        if is_stdout(file):
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
    # JSON encodes each struct as it is (msgspec writes the same text as for its plain form)
    chunks = yaml_list_chunks(items) if fmt == "yaml" else json_list_chunks(items)
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
