"""The resume journal of a sweep (`runs.ndjson`): one finished run per line, appended as each run ends.

Reading checks every line before anything runs: a line that is not a run of a sweep
(`{"params", "seed", "result"}`) is "line N of FILE is damaged", exit 2, so a file that is not a
journal is never extended. The one exception is a last line without its newline: a run cut short
by an interruption. It is dropped (that run is redone) and cut off before the next run is appended,
so the journal stays one run per line. Writing is the CLI's job (the one checked writer).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import msgspec

from kubegpu.errors import InputError
from kubegpu.guards.bounded import read_bounded

JOURNAL = "runs.ndjson"
MAX_JOURNAL_BYTES = 1 << 30  # 10,000 runs of a few KB each, with room to spare


class JournalState(msgspec.Struct, frozen=True):
    """Runs already done, by `sweep.point_key`, and the bytes of complete lines (the rest is cut)."""

    rows: list[dict[str, Any]]
    complete_bytes: int


def is_run(row: Any) -> bool:
    return (isinstance(row, dict) and isinstance(row.get("params"), dict) and isinstance(row.get("result"), dict)
            and isinstance(row.get("seed"), int) and not isinstance(row.get("seed"), bool))


def read_journal(path: Path) -> JournalState:
    """The runs in the journal at `path` (none if it does not exist); InputError if it is not one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return JournalState([], 0)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", where=str(path)) from None
    if not stat.S_ISREG(mode):
        raise InputError("is not a regular file (a sweep journal is one run per line)", where=str(path))
    data = read_bounded(path, where=str(path), max_bytes=MAX_JOURNAL_BYTES)
    complete = data.rfind(b"\n") + 1
    rows = []
    for number, line in enumerate(data[:complete].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            row = msgspec.json.decode(line)
        except msgspec.DecodeError:
            row = None
        if not is_run(row):
            raise InputError(f"line {number} of {path} is damaged (not a run of a sweep); move the file away "
                             "to start the sweep again")
        rows.append(row)
    return JournalState(rows, complete)


def journal_line(row: dict[str, Any]) -> bytes:
    return msgspec.json.encode(row) + b"\n"
