"""Read an Alibaba openb pod list (CSV) into tasks — the one reader for trace pods and `--mix FILE`.

Columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and optionally gpu_spec ('|'-separated
allowed GPU models, empty = any). Other columns (qos, phase, timestamps) are ignored, as in the
FGD experiments. A bad file raises InputError naming the file, the row (line) and the column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from kubegpu.errors import InputError
from kubegpu.scheduling.placement.task import MILLI, Task
from kubegpu.sources.bounded import open_bounded  # bounded in size, and in time for FIFOs/pipes

MIB = 1 << 20
MAX_CSV_BYTES = 4 * 1024**3  # the whole Alibaba trace is a few MB
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


def csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file after checking that the header has every required column."""
    handle = io.TextIOWrapper(open_bounded(path, max_bytes=MAX_CSV_BYTES), newline="", encoding="utf-8",
                              errors="strict")
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = reader.fieldnames or []
        except (UnicodeDecodeError, csv.Error) as exc:
            raise InputError(f"not a UTF-8 CSV file: {exc}", where=str(path)) from None
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


def int_field(row: dict[str, str], column: str, *, path: Path, line: int, lo: int = 0, hi: int | None = None) -> int:
    raw = (row.get(column) or "").strip()
    try:
        value = int(raw)
    except ValueError:
        try:
            as_float = float(raw)
        except ValueError:
            as_float = float("nan")
        if not as_float.is_integer():
            raise InputError(f"expected an integer, got {raw!r}", where=f"{path}:{line}", field=column) from None
        value = int(as_float)
    if value < lo or (hi is not None and value > hi):
        bounds = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise InputError(f"value {value} out of range ({bounds})", where=f"{path}:{line}", field=column)
    return value


def load_pod_list(path: str | Path) -> list[Task]:
    """Read an openb pod list into tasks (memory in bytes, gpu_spec as allowed models)."""
    p = Path(path)
    tasks: list[Task] = []
    for line, row in csv_rows(p, POD_COLUMNS):
        where = f"{p}:{line}"
        num_gpu = int_field(row, "num_gpu", path=p, line=line, hi=64)
        gpu_milli = int_field(row, "gpu_milli", path=p, line=line, hi=MILLI)
        if (num_gpu == 0) != (gpu_milli == 0):
            raise InputError(f"num_gpu={num_gpu} with gpu_milli={gpu_milli}: both must be 0 or both set",
                             where=where, field="gpu_milli")
        if num_gpu > 1 and gpu_milli < MILLI:
            raise InputError(f"a {num_gpu}-GPU pod must take whole GPUs (gpu_milli=1000), got {gpu_milli}",
                             where=where, field="gpu_milli")
        spec = (row.get("gpu_spec") or "").strip()
        models = frozenset(m for m in spec.split("|") if m) or None
        tasks.append(Task(name=(row.get("name") or "").strip(),
                          cpu_milli=int_field(row, "cpu_milli", path=p, line=line),
                          mem_bytes=int_field(row, "memory_mib", path=p, line=line) * MIB,
                          num_gpu=num_gpu, gpu_milli=gpu_milli, models=models))
    return tasks
