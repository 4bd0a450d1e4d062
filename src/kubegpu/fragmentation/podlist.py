"""Read an Alibaba openb pod list (CSV) into tasks — the one reader for trace pods and `--mix FILE`.

Columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and optionally gpu_spec ('|'-separated
allowed GPU models, empty = any). Other columns (qos, phase, timestamps) are ignored, as in the
FGD experiments. A bad file raises InputError naming the file, the row (line) and the column.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from kubegpu.errors import InputError
from kubegpu.model.integers import INT64_MAX, MAX_INT_CHARS, parse_int
from kubegpu.placement.task import MILLI, Task
from kubegpu.guards.bounded import open_bounded  # bounded in size, and in time for FIFOs/pipes

MIB = 1 << 20
MAX_CSV_BYTES = 4 * 1024**3  # the whole Alibaba trace is a few MB
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
_WHOLE_FLOAT = re.compile(r"[0-9]+\.0*", re.ASCII)  # pandas writes integer columns with NaNs as "8.0"
MAX_MEMORY_MIB = INT64_MAX // MIB  # bytes stay within int64


def csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file after checking that the header has every required column."""
    handle = io.TextIOWrapper(open_bounded(path, max_bytes=MAX_CSV_BYTES), newline="", encoding="utf-8",
                              errors="strict")
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = reader.fieldnames or []
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start} of a block)", where=str(path)) from None
        except csv.Error as exc:
            raise InputError(f"malformed CSV at line {reader.line_num}: {exc}", where=str(path)) from None
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)} (header: {','.join(header) or 'empty'})",
                             where=str(path), field=missing[0])
        try:
            for row in reader:
                yield reader.line_num, row
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start} of a block)", where=str(path)) from None
        except csv.Error as exc:
            raise InputError(f"malformed CSV at line {reader.line_num}: {exc}", where=str(path)) from None


def cell_int(raw: object, *, where: str, field: str, lo: int = 0, hi: int = INT64_MAX) -> int:
    """One integer cell: "8", a whole number written as "8.0" (pandas), or a JSON number, within lo..hi."""
    text = "" if raw is None else str(raw).strip()
    if _WHOLE_FLOAT.fullmatch(text) and len(text) <= MAX_INT_CHARS:
        text = text.split(".", 1)[0]
    return parse_int(text, where=where, field=field, lo=lo, hi=hi)


def int_field(row: dict[str, str], column: str, *, path: Path, line: int, lo: int = 0, hi: int = INT64_MAX) -> int:
    """One integer cell of a CSV row, named by file and line."""
    return cell_int(row.get(column), where=f"{path}:{line}", field=column, lo=lo, hi=hi)


def pod_task(row: Mapping[str, object], *, where: str) -> Task:
    """One openb pod row as a task (memory in bytes, gpu_spec as allowed models); `where` names the row.

    The one reading of the pod columns, for pod lists (`--mix FILE`, trace pods) and for the
    simulator's openb traces (`simulate/trace_format.py`).
    """
    def cell(column: str, hi: int = INT64_MAX) -> int:
        return cell_int(row.get(column), where=where, field=column, hi=hi)

    num_gpu, gpu_milli = cell("num_gpu", hi=64), cell("gpu_milli", hi=MILLI)
    if (num_gpu == 0) != (gpu_milli == 0):
        raise InputError(f"num_gpu={num_gpu} with gpu_milli={gpu_milli}: both must be 0 or both set",
                         where=where, field="gpu_milli")
    if num_gpu > 1 and gpu_milli < MILLI:
        raise InputError(f"a {num_gpu}-GPU pod must take whole GPUs (gpu_milli=1000), got {gpu_milli}",
                         where=where, field="gpu_milli")
    spec = str(row.get("gpu_spec") or "").strip()
    models = frozenset(m for m in spec.split("|") if m) or None
    return Task(name=str(row.get("name") or "").strip(), cpu_milli=cell("cpu_milli"),
                mem_bytes=cell("memory_mib", hi=MAX_MEMORY_MIB) * MIB, num_gpu=num_gpu, gpu_milli=gpu_milli,
                models=models)


def load_pod_list(path: str | Path) -> list[Task]:
    """Read an openb pod list into tasks (memory in bytes, gpu_spec as allowed models)."""
    p = Path(path)
    return [pod_task(row, where=f"{p}:{line}") for line, row in csv_rows(p, POD_COLUMNS)]
