"""The target workload M of the FGD measure: the task shapes a cluster expects, with popularity.

FGD (Weng et al., USENIX ATC '23) judges free GPU capacity against the shapes of tasks that
will arrive. Following the authors' simulator (`GetTypicalPods`): count pods by distinct
(CPU milli, GPU milli per device, GPU count, GPU model constraint), CPU-only pods included,
take the most popular shapes until they cover 95 % of pods, and renormalise.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import msgspec
import numpy as np

from kubegpu.errors import InputError
from kubegpu.fragmentation.podlist import MAX_MEMORY_MIB, load_pod_list
from kubegpu.model.gpu import MAX_GPUS_PER_POD
from kubegpu.placement.measure import ShapeMix, TaskShape
from kubegpu.placement.task import MILLI, Task
from kubegpu.guards.bounded import read_bounded  # bounded in size and, for FIFOs, in time

DEFAULT_COVERAGE = 0.95


def mix_from_tasks(tasks: Iterable[Task], *, coverage: float = DEFAULT_COVERAGE) -> ShapeMix:
    """The most popular task shapes covering `coverage` of the tasks (by count), renormalised.

    Ties in popularity are ordered by the shape itself (larger first), so the result does not
    depend on task order.
    """
    counts: Counter[tuple[int, int, int, frozenset[str] | None]] = Counter()
    memory: dict[tuple[int, int, int, frozenset[str] | None], list[int]] = {}
    for t in tasks:
        counts[t.shape_key] += 1
        memory.setdefault(t.shape_key, []).append(t.mem_bytes)
    if not counts:
        raise ValueError("cannot build a task-shape mix from zero tasks")
    total = sum(counts.values())

    def order(item: tuple[tuple[int, int, int, frozenset[str] | None], int]) -> tuple:
        (cpu, num, milli, models), count = item
        model_key = "|".join(sorted(models)) if models else ""
        return (-count, -cpu, -milli, -num, tuple(-ord(c) for c in model_key))

    ranked = sorted(counts.items(), key=order)
    chosen: list[TaskShape] = []
    covered = 0
    for (cpu, num, milli, models), count in ranked:
        if covered >= coverage * total:
            break
        chosen.append(TaskShape(cpu_milli=cpu, num_gpu=num, gpu_milli=milli, models=models, weight=count,
                                mem_bytes=int(np.median(memory[(cpu, num, milli, models)]))))
        covered += count
    return ShapeMix(chosen)


_Count = Annotated[int, msgspec.Meta(ge=0)]


class _MixEntry(msgspec.Struct, forbid_unknown_fields=True):
    cpu_milli: _Count
    num_gpu: Annotated[int, msgspec.Meta(ge=0, le=MAX_GPUS_PER_POD)] = 0  # milli-GPU fit the int32 columns
    gpu_milli: _Count = 0
    gpu_model: str | list[str] | None = None
    weight: float = 1.0
    memory_mib: Annotated[int, msgspec.Meta(ge=0, le=MAX_MEMORY_MIB)] = 0  # bytes stay within int64


def load_mix(path: str | Path, *, coverage: float = DEFAULT_COVERAGE) -> ShapeMix:
    """Read a mix from a file: a pod list CSV in the Alibaba openb format, or JSON shapes.

    JSON: a list of {"cpu_milli", "num_gpu", "gpu_milli", "gpu_model"?, "weight"} objects;
    weights are used as given (renormalised), no coverage cut. CSV: one row per pod, shapes
    counted and cut at `coverage` like the cluster's own pods.
    """
    p = Path(path)
    if p.suffix.lower() == ".json":
        try:
            entries = msgspec.json.decode(read_bounded(p, max_bytes=1 << 30), type=list[_MixEntry])
        except (OSError, RecursionError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise InputError(f"not a task-shape mix: {exc}", where=str(p)) from exc
        shapes = []
        for i, e in enumerate(entries):
            _check_shape(e.num_gpu, e.gpu_milli, e.weight, where=str(p), obj=f"entry {i}")
            models = e.gpu_model if isinstance(e.gpu_model, list) else (
                e.gpu_model.split("|") if e.gpu_model else None)
            shapes.append(TaskShape(cpu_milli=e.cpu_milli, num_gpu=e.num_gpu, gpu_milli=e.gpu_milli,
                                    models=frozenset(models) if models else None, weight=e.weight,
                                    mem_bytes=e.memory_mib << 20))
        if not shapes or sum(s.weight for s in shapes) <= 0:
            raise InputError("the mix has no shape with a positive weight", where=str(p))
        return ShapeMix(shapes)
    pods = load_pod_list(p)
    if not pods:
        raise InputError("the pod list is empty", where=str(p))
    return mix_from_tasks(pods, coverage=coverage)


def _check_shape(num_gpu: int, gpu_milli: int, weight: float, *, where: str, obj: str) -> None:
    if num_gpu < 0 or not 0 <= gpu_milli <= MILLI or (num_gpu == 0) != (gpu_milli == 0):
        raise InputError(f"num_gpu={num_gpu}, gpu_milli={gpu_milli}: need both 0, or num_gpu>0 and "
                         f"gpu_milli in 1..{MILLI}", where=where, obj=obj)
    if weight < 0:
        raise InputError(f"negative weight {weight}", where=where, obj=obj, field="weight")


def mix_to_json(mix: ShapeMix) -> str:
    """The mix in the JSON format `load_mix` reads (for `--mix` round trips)."""
    return json.dumps([{"cpu_milli": s.cpu_milli, "num_gpu": s.num_gpu, "gpu_milli": s.gpu_milli,
                        "gpu_model": "|".join(sorted(s.models)) if s.models else None,
                        "weight": round(s.weight, 6), "memory_mib": s.mem_bytes >> 20} for s in mix.shapes],
                      indent=2)
