"""Alibaba GPU trace v2023 ("openb") CSV loading: node lists and pod lists.

Node list columns: sn, cpu_milli, memory_mib, gpu, model. Pod list columns: name, cpu_milli,
memory_mib, num_gpu, gpu_milli, and optionally gpu_spec ('|'-separated allowed models, empty =
any). Other columns (qos, phase, timestamps) are ignored, as in the FGD experiments. Every
value is validated; a bad file raises InputError naming the file, the row and the column.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np

from kubegpu.errors import InputError
from kubegpu.scheduling.placement.state import PlacementState
from kubegpu.scheduling.placement.task import MILLI, Task

MIB = 1 << 20
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


class TraceNodes(msgspec.Struct, frozen=True):
    """The nodes of a trace cluster, as columns."""

    names: list[str]
    cpu_milli: list[int]
    memory_mib: list[int]
    gpus: list[int]
    models: list[str]

    @property
    def total_gpus(self) -> int:
        return sum(self.gpus)


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a CSV file after checking that the header has every required column."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", where=str(path)) from exc
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)} (header: {','.join(header) or 'empty'})",
                             where=str(path), field=missing[0])
        for row in reader:
            yield reader.line_num, row


def _int(row: dict[str, str], column: str, *, path: Path, line: int, lo: int = 0, hi: int | None = None) -> int:
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


def load_nodes(path: str | Path) -> TraceNodes:
    """Read an openb node list (e.g. openb_node_list_gpu_node.csv)."""
    p = Path(path)
    names: list[str] = []
    cpu: list[int] = []
    mem: list[int] = []
    gpus: list[int] = []
    models: list[str] = []
    for line, row in _rows(p, NODE_COLUMNS):
        name = (row.get("sn") or "").strip()
        if not name:
            raise InputError("empty node name", where=f"{p}:{line}", field="sn")
        names.append(name)
        cpu.append(_int(row, "cpu_milli", path=p, line=line))
        mem.append(_int(row, "memory_mib", path=p, line=line))
        gpus.append(_int(row, "gpu", path=p, line=line, hi=64))
        models.append((row.get("model") or "").strip())
    if not names:
        raise InputError("the node list has no rows", where=str(p))
    return TraceNodes(names=names, cpu_milli=cpu, memory_mib=mem, gpus=gpus, models=models)


def load_pods(path: str | Path) -> list[Task]:
    """Read an openb pod list into tasks (memory in bytes, gpu_spec as allowed models)."""
    p = Path(path)
    tasks: list[Task] = []
    for line, row in _rows(p, POD_COLUMNS):
        where = f"{p}:{line}"
        num_gpu = _int(row, "num_gpu", path=p, line=line, hi=64)
        gpu_milli = _int(row, "gpu_milli", path=p, line=line, hi=MILLI)
        if (num_gpu == 0) != (gpu_milli == 0):
            raise InputError(f"num_gpu={num_gpu} with gpu_milli={gpu_milli}: both must be 0 or both set",
                             where=where, field="gpu_milli")
        if num_gpu > 1 and gpu_milli < MILLI:
            raise InputError(f"a {num_gpu}-GPU pod must take whole GPUs (gpu_milli=1000), got {gpu_milli}",
                             where=where, field="gpu_milli")
        spec = (row.get("gpu_spec") or "").strip()
        models = frozenset(m for m in spec.split("|") if m) or None
        tasks.append(Task(name=(row.get("name") or "").strip(),
                          cpu_milli=_int(row, "cpu_milli", path=p, line=line),
                          mem_bytes=_int(row, "memory_mib", path=p, line=line) * MIB,
                          num_gpu=num_gpu, gpu_milli=gpu_milli, models=models))
    return tasks


def trace_state(nodes: TraceNodes, *, tie_rank: np.ndarray | None = None) -> PlacementState:
    """An empty placement state for a trace cluster: whole devices of 1000 milli-GPU each."""
    gpus = np.asarray(nodes.gpus, dtype=np.int32)
    width = max(int(gpus.max()), 1)
    dev_total = np.where(np.arange(width)[None, :] < gpus[:, None], MILLI, 0).astype(np.int32)
    gpu_models = sorted({m for m, g in zip(nodes.models, nodes.gpus) if m and g > 0})
    index = {m: i for i, m in enumerate(gpu_models)}
    gpu_model = np.array([index.get(m, -1) if g > 0 else -1 for m, g in zip(nodes.models, nodes.gpus)],
                         dtype=np.int32)
    return PlacementState(names=nodes.names, cpu_alloc=nodes.cpu_milli,
                          mem_alloc=np.asarray(nodes.memory_mib, dtype=np.int64) * MIB,
                          dev_total=dev_total, gpu_model=gpu_model, gpu_models=gpu_models, tie_rank=tie_rank)
