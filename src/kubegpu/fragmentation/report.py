"""The `kubegpu frag` result: GPU totals, k-GPU capacity, stranded GPUs and the FGD measure.

GPU counts are physical devices (time-slicing replicas and MIG slices folded back by the
NodeTable), so the numbers describe hardware, not advertised units.
"""

from __future__ import annotations

import msgspec
import numpy as np

from kubegpu.fragmentation.capacity import SIZES, cpu_by_size, fits_by_size, stranded_by_size
from kubegpu.fragmentation.measure import state_fragmentation
from kubegpu.fragmentation.shapes import ShapeMix
from kubegpu.scheduling.placement.state import PlacementState
from kubegpu.scheduling.placement.task import MILLI


class GpuTotals(msgspec.Struct, frozen=True):
    total: int
    allocated: float
    free: float


class FragAmount(msgspec.Struct, frozen=True):
    amount_milli_gpu: int
    rate: float


class PoolRow(msgspec.Struct, frozen=True):
    pool: str
    nodes: int
    gpus: GpuTotals
    fits_by_size: dict[str, int]
    fragmentation: FragAmount


class FragReport(msgspec.Struct, frozen=True):
    """DESIGN §4 `kubegpu frag` JSON, plus per-pool rows and the mix used."""

    gpus: GpuTotals
    allocation_ratio: float
    fits_by_size: dict[str, int]
    stranded_by_size: dict[str, float]
    fragmentation: FragAmount
    pools: list[PoolRow] = []
    mix_shapes: int = 0


def _totals(state: PlacementState, rows: np.ndarray) -> GpuTotals:
    total = int(state.gpu_count[rows].sum())
    free = float(state.dev_free[rows].sum()) / MILLI
    return GpuTotals(total=total, allocated=round(total - free, 3), free=round(free, 3))


def _frag(amounts: np.ndarray, state: PlacementState, rows: np.ndarray) -> FragAmount:
    idle = int(state.dev_free[rows].sum())
    amount = float(amounts[rows].sum())
    return FragAmount(amount_milli_gpu=int(round(amount)), rate=round(amount / idle, 4) if idle else 0.0)


def frag_report(state: PlacementState, mix: ShapeMix) -> FragReport:
    """Measure a cluster (as a placement state) against a task-shape mix."""
    amounts = state_fragmentation(state, mix)
    every = np.arange(state.n_nodes)
    cpu = cpu_by_size(mix)
    gpus = _totals(state, every)
    pools = []
    pool_names = np.array(state.pool, dtype=object)
    for name in sorted(set(state.pool)):
        rows = np.flatnonzero(pool_names == name)
        sub_fits = {str(k): int(v) for k, v in fits_by_size(_subset(state, rows), cpu=cpu).items()}
        pools.append(PoolRow(pool=name, nodes=int(rows.size), gpus=_totals(state, rows),
                             fits_by_size=sub_fits, fragmentation=_frag(amounts, state, rows)))
    return FragReport(
        gpus=gpus,
        allocation_ratio=round(gpus.allocated / gpus.total, 4) if gpus.total else 0.0,
        fits_by_size={str(k): v for k, v in fits_by_size(state, sizes=SIZES, cpu=cpu).items()},
        stranded_by_size={str(k): v for k, v in stranded_by_size(state, sizes=SIZES, cpu=cpu).items()},
        fragmentation=_frag(amounts, state, every),
        pools=pools,
        mix_shapes=len(mix),
    )


def _subset(state: PlacementState, rows: np.ndarray) -> PlacementState:
    return PlacementState(names=[state.names[i] for i in rows], cpu_alloc=state.cpu_alloc[rows],
                          cpu_used=state.cpu_alloc[rows] - state.cpu_free[rows], mem_alloc=state.mem_alloc[rows],
                          mem_used=state.mem_alloc[rows] - state.mem_free[rows], dev_total=state.dev_total[rows],
                          dev_used=state.dev_total[rows] - state.dev_free[rows], gpu_model=state.gpu_model[rows],
                          gpu_models=state.gpu_models, schedulable=state.schedulable[rows])
