"""The `kubegpu frag` result: GPU totals, k-GPU capacity, stranded GPUs and the FGD measure.

GPU counts are physical devices (time-slicing replicas and MIG slices folded back by the
NodeTable), so the numbers describe hardware, not advertised units.

The headline is `stranded_for_demand`: the free GPUs that the cluster's own GPU demand cannot use,
i.e. stranded_by_size[k] averaged over the pod sizes k of the demand, each weighted by its share of
the GPUs the demand requests (a device share counts as 1-GPU demand). It falls when a defrag opens
a k-GPU slot or a whole node is free, which the FGD rate (kept in `fragmentation`) does not always do:
the FGD mix includes CPU-only shapes, for which every idle GPU counts as fragment.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
import numpy as np

from kubegpu.fragmentation.capacity import SIZES, cpu_by_size, fits_by_size, pods_that_fit, stranded_by_size
from kubegpu.fragmentation.measure import state_fragmentation
from kubegpu.fragmentation.shapes import ShapeMix
from kubegpu.placement.state import PlacementState
from kubegpu.model.gpu import MILLI, gpu_number


class GpuTotals(msgspec.Struct, frozen=True):
    total: int
    allocated: int | float
    free: int | float


class FragAmount(msgspec.Struct, frozen=True):
    amount_milli_gpu: int
    rate: float


class Demand(msgspec.Struct, frozen=True):
    """The GPU demand the headline numbers are measured against."""

    source: str  # "pods" (non-terminal pods of the scope), "file:PATH", "mix", or "default" (no GPU pods:
    #              1, 2, 4 and 8-GPU pods alike)
    namespace: str | None            # the -n scope of the pods (None: all namespaces)
    shapes: int                      # task shapes of the FGD mix (CPU-only included)
    gpu_share_by_size: dict[str, float]  # k -> share of requested GPUs that come in k-GPU pods


class Stranded(msgspec.Struct, frozen=True):
    """Free GPUs the demand cannot use (demand-weighted stranded_by_size), and the largest pod that fits."""

    gpus: float
    rate: float                      # gpus / free GPUs (0 when nothing is free)
    largest_fit: int                 # the largest k-GPU pod (k in 1..8) that fits now, 0 if none


class PoolRow(msgspec.Struct, frozen=True):
    pool: str
    nodes: int
    gpus: GpuTotals
    fits_by_size: dict[str, int]
    stranded_for_demand: Stranded
    fragmentation: FragAmount


class FragReport(msgspec.Struct, frozen=True):
    """DESIGN §4 `kubegpu frag` JSON, plus the demand-weighted headline, per-pool rows and the mix used."""

    gpus: GpuTotals
    allocation_ratio: float
    fits_by_size: dict[str, int]
    stranded_by_size: dict[str, int | float]
    fragmentation: FragAmount
    stranded_for_demand: Stranded
    demand: Demand
    pools: list[PoolRow] = []
    mix_shapes: int = 0


def stranded_of(frag: Any) -> float | None:
    """`stranded_for_demand.gpus` of a frag report in its JSON form (a defrag plan's before/after), or None."""
    return (frag.get("stranded_for_demand") or {}).get("gpus") if isinstance(frag, dict) else None


def demand_sizes(shapes: Iterable[Any]) -> dict[int, float]:
    """k -> share of the requested GPUs in k-GPU pods, over tasks or weighted task shapes (anything
    with num_gpu, gpu_milli and an optional weight); whole sizes 1, 2, 4, 8 alike when none asks a GPU."""
    gpus: dict[int, float] = {}
    for s in shapes:
        if s.num_gpu > 0:
            k = s.num_gpu if s.gpu_milli >= MILLI else 1
            gpus[k] = gpus.get(k, 0.0) + getattr(s, "weight", 1.0) * s.num_gpu * s.gpu_milli / MILLI
    total = sum(gpus.values())
    if not total:
        return {k: 1 / len(SIZES) for k in SIZES}
    return {k: v / total for k, v in sorted(gpus.items())}


def _totals(state: PlacementState, rows: np.ndarray) -> GpuTotals:
    total = int(state.gpu_count[rows].sum())
    free = int(state.dev_free[rows].sum())
    return GpuTotals(total=total, allocated=gpu_number(total * MILLI - free), free=gpu_number(free))


def _frag(amounts: np.ndarray, state: PlacementState, rows: np.ndarray) -> FragAmount:
    idle = int(state.dev_free[rows].sum())
    amount = float(amounts[rows].sum())
    return FragAmount(amount_milli_gpu=int(round(amount)), rate=round(amount / idle, 4) if idle else 0.0)


def stranded_for(state: PlacementState, sizes: dict[int, float], cpu: dict[int, int]) -> Stranded:
    """Demand-weighted stranded GPUs of a placement state."""
    free = float(state.dev_free.sum()) / MILLI
    stranded = stranded_by_size(state, sizes=list(sizes), cpu=cpu)
    expected = sum(share * stranded[k] for k, share in sizes.items())
    largest = max((k for k in range(1, 9) if int(pods_that_fit(state, k, cpu.get(k)).sum()) > 0), default=0)
    return Stranded(gpus=round(expected, 2), rate=round(expected / free, 4) if free else 0.0, largest_fit=largest)


def frag_report(state: PlacementState, mix: ShapeMix, *, source: str = "pods",
                namespace: str | None = None, demand: dict[int, float] | None = None) -> FragReport:
    """Measure a cluster (as a placement state) against a task-shape mix.

    `demand` (k -> share of requested GPUs) defaults to the mix's GPU shapes; callers that have the
    pods pass `demand_sizes(tasks)`, which keeps sizes the mix's 95 % coverage cut dropped."""
    amounts = state_fragmentation(state, mix)
    every = np.arange(state.n_nodes)
    sizes = demand if demand is not None else demand_sizes(mix.shapes)
    cpu = cpu_by_size(mix, sizes=sorted(set(SIZES) | set(sizes)))
    gpus = _totals(state, every)
    pools = []
    pool_names = np.array(state.pool, dtype=object)
    for name in sorted(set(state.pool)):
        rows = np.flatnonzero(pool_names == name)
        sub = state.rows(rows)
        sub_fits = {str(k): int(v) for k, v in fits_by_size(sub, cpu=cpu).items()}
        pools.append(PoolRow(pool=name, nodes=int(rows.size), gpus=_totals(state, rows), fits_by_size=sub_fits,
                             stranded_for_demand=stranded_for(sub, sizes, cpu),
                             fragmentation=_frag(amounts, state, rows)))
    return FragReport(
        gpus=gpus,
        allocation_ratio=round((gpus.total - gpus.free) / gpus.total, 4) if gpus.total else 0.0,
        fits_by_size={str(k): v for k, v in fits_by_size(state, sizes=SIZES, cpu=cpu).items()},
        stranded_by_size={str(k): gpu_number(v * MILLI)
                          for k, v in stranded_by_size(state, sizes=SIZES, cpu=cpu).items()},
        fragmentation=_frag(amounts, state, every),
        stranded_for_demand=stranded_for(state, sizes, cpu),
        demand=Demand(source=source, namespace=namespace, shapes=len(mix),
                      gpu_share_by_size={str(k): round(v, 4) for k, v in sizes.items()}),
        pools=pools,
        mix_shapes=len(mix),
    )


