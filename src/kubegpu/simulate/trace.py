"""Alibaba GPU trace v2023 ("openb") CSV loading: node lists and pod lists.

Node list columns: sn, cpu_milli, memory_mib, gpu, model. Pod list columns: name, cpu_milli,
memory_mib, num_gpu, gpu_milli, and optionally gpu_spec ('|'-separated allowed models, empty =
any). Other columns (qos, phase, timestamps) are ignored, as in the FGD experiments. Every
value is validated; a bad file raises InputError naming the file, the row and the column.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np

from kubegpu.errors import InputError
from kubegpu.fragmentation.podlist import MAX_MEMORY_MIB, MIB, csv_rows, int_field
from kubegpu.fragmentation.podlist import load_pod_list as load_pods
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import MILLI

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
__all__ = ["TraceNodes", "load_nodes", "load_pods", "trace_state"]


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


def load_nodes(path: str | Path) -> TraceNodes:
    """Read an openb node list (e.g. openb_node_list_gpu_node.csv)."""
    p = Path(path)
    names: list[str] = []
    cpu: list[int] = []
    mem: list[int] = []
    gpus: list[int] = []
    models: list[str] = []
    for line, row in csv_rows(p, NODE_COLUMNS):
        name = (row.get("sn") or "").strip()
        if not name:
            raise InputError("empty node name", where=f"{p}:{line}", field="sn")
        names.append(name)
        cpu.append(int_field(row, "cpu_milli", path=p, line=line))
        mem.append(int_field(row, "memory_mib", path=p, line=line, hi=MAX_MEMORY_MIB))
        gpus.append(int_field(row, "gpu", path=p, line=line, hi=64))
        models.append((row.get("model") or "").strip())
    if not names:
        raise InputError("the node list has no rows", where=str(p))
    return TraceNodes(names=names, cpu_milli=cpu, memory_mib=mem, gpus=gpus, models=models)


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
