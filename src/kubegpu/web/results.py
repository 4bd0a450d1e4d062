"""Simulation results for the dashboard: JSON files written by `kubegpu simulate run -o json`
(an object with a "scenario" key) or `simulate sweep -o json` (a list of {params, seed, result}).

Read on request (the folder changes as runs finish), in a worker thread (never on the event
loop), bounded: regular files only (a FIFO or a link to /dev/zero is listed, not read), at most
MAX_BYTES each and MAX_TOTAL_BYTES in all; every shown value is a scalar (a run whose field is a
list, an object or a 5,000-deep nest shows nothing there). Unreadable files are listed, not fatal.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import msgspec

MAX_FILES = 200
MAX_BYTES = 20 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
_SCALARS = (str, int, float, bool)


class _Skipped(Exception):
    """A file the page lists as not shown, with the reason."""


def _scalar(value: Any) -> Any:
    """The value if it is a string, a number or a boolean (short), else None: the page shows cells, not trees."""
    if isinstance(value, str):
        return value if len(value) <= 200 else value[:200] + "..."
    return value if isinstance(value, _SCALARS) else None


def _params(value: Any) -> dict:
    """A sweep's params as name -> scalar (anything else is not a params object: nothing to show)."""
    if not isinstance(value, dict):
        return {}
    return {str(k)[:100]: _scalar(v) for k, v in list(value.items())[:50]}


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return _scalar(data)


def summary_row(name: str, result: dict, params: Any = None) -> dict:
    """The columns the results page shows (None where a run did not report a field or it is not a scalar)."""
    return {
        "file": name, "scenario": _get(result, "scenario"), "seed": _get(result, "seed"), "params": _params(params),
        "duration_s": _get(result, "duration_s"),
        "scale_ups": _get(result, "autoscaler", "scale_ups"), "scale_downs": _get(result, "autoscaler", "scale_downs"),
        "cycles_per_day": _get(result, "autoscaler", "cycles_per_day"),
        "billed_node_hours": _get(result, "autoscaler", "billed_node_hours"),
        "cost": _get(result, "cost", "total"), "currency": _get(result, "cost", "currency"),
        "wait_p95": _get(result, "pods", "wait_seconds", "p95"),
        "preemptions": _get(result, "preemption", "count"),
        "gpu_hours_lost": _get(result, "preemption", "gpu_hours_lost"),
        "allocation_mean": _get(result, "utilization", "allocation_mean"),
    }


def _read_regular(path: Path, budget: int) -> bytes:
    """The bytes of a regular file of at most min(MAX_BYTES, budget) bytes; _Skipped otherwise.

    Opened non-blocking, so a FIFO without a writer does not hang the open; checked on the open
    descriptor, so a link to a device or a FIFO is refused before any byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise _Skipped(err.strerror or str(err)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Skipped("not a regular file, not read")
        limit = min(MAX_BYTES, budget)
        if st.st_size > limit:
            raise _Skipped(f"larger than {limit // 1024 // 1024} MiB, skipped" if limit == MAX_BYTES else
                           f"over the {MAX_TOTAL_BYTES // 1024 // 1024} MiB read per page, skipped")
        chunks, size = [], 0
        while size <= limit:
            data = os.read(fd, min(1 << 20, limit + 1 - size))
            if not data:
                break
            chunks.append(data)
            size += len(data)
        if size > limit:  # it grew while we read
            raise _Skipped(f"larger than {limit // 1024 // 1024} MiB, skipped")
        return b"".join(chunks)
    except OSError as err:
        raise _Skipped(err.strerror or str(err)) from None
    finally:
        os.close(fd)


def _rows_of(name: str, data: Any) -> list[dict]:
    if isinstance(data, dict) and "scenario" in data:
        return [summary_row(name, data)]
    if isinstance(data, list):
        rows = [summary_row(name, item["result"], item.get("params")) for item in data
                if isinstance(item, dict) and isinstance(item.get("result"), dict) and "scenario" in item["result"]]
        if not rows:
            raise _Skipped("no simulate results in it")
        return rows
    raise _Skipped("no \"scenario\" key (not a simulate run result)")


def read_results(folder: str) -> tuple[list[dict], list[str]]:
    """(rows, problems): one row per run found in the folder's *.json files. Blocking: call it off the loop."""
    root = Path(folder)
    if not root.is_dir():
        return [], [f"{folder}: not a folder"]
    rows: list[dict] = []
    problems: list[str] = []
    budget = MAX_TOTAL_BYTES
    for path in sorted(root.glob("*.json"))[:MAX_FILES]:
        try:
            raw = _read_regular(path, budget)
            budget -= len(raw)
            try:
                data = msgspec.json.decode(raw)
            except msgspec.DecodeError as err:
                raise _Skipped(str(err)) from None
            except RecursionError:
                raise _Skipped("nested too deeply to be a simulate result") from None
            rows.extend(_rows_of(path.name, data))
        except _Skipped as why:
            problems.append(f"{path.name}: {why}")
    return rows, problems
