"""The one way kubegpu writes results: JSON, YAML, or a table on the terminal.

Machine formats are plain data (dicts, lists, numbers, strings) with stable keys. Colour is used
only on a TTY (and never with NO_COLOR). Files are written atomically: all or nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import msgspec
import yaml
from rich.console import Console

from kubegpu.errors import InputError


def to_plain(data: Any) -> Any:
    """Structs, tuples and sets to plain JSON-able data."""
    return msgspec.to_builtins(data)  # keeps field and key order as the engines built them


def dump_json(data: Any) -> str:
    return msgspec.json.format(msgspec.json.encode(to_plain(data)), indent=2).decode() + "\n"


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(to_plain(data), sort_keys=False, default_flow_style=False, allow_unicode=True)


def console(stderr: bool = False) -> Console:
    """A rich console: colour on a TTY only, wide (no wrapping) when piped."""
    stream = sys.stderr if stderr else sys.stdout
    tty = stream.isatty()
    return Console(file=stream, highlight=False, soft_wrap=not tty, width=None if tty else 200,
                   no_color=bool(os.environ.get("NO_COLOR")) or not tty, emoji=False)


def emit(data: Any, fmt: str, table: Callable[[Console], None] | None = None) -> None:
    """Print `data` as json/yaml, or call `table(console)` for table/wide."""
    if fmt == "json":
        sys.stdout.write(dump_json(data))
    elif fmt == "yaml":
        sys.stdout.write(dump_yaml(data))
    elif table is not None:
        table(console())
    else:
        sys.stdout.write(dump_json(data))
    sys.stdout.flush()


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write a file completely or not at all (temp file in the same folder, then rename)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("folder does not exist", where=str(folder))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file
        os.replace(tmp, target)
    except OSError as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise InputError(f"cannot write: {err.strerror or err}", where=str(target)) from None
