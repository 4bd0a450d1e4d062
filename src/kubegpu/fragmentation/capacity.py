"""Operator-facing capacity numbers: how many k-GPU pods fit now, and which free GPUs they cannot use.

A k-GPU pod needs k devices that are *entirely* free on one node (plus CPU and a pod slot).
Counted greedily per node that takes new pods: floor(entirely free devices / k), capped by
floor(free CPU / cpu_k) when a typical CPU request for k-GPU pods is known (from the workload
mix), and by the node's free pod slots (a node at "Too many pods" counts 0). Stranded GPUs for
size k are the free milli-GPU left on every node after packing those k-GPU pods (partial
devices, remainders, nodes that take no new pods), in GPUs.

A deliberately smaller model than the scheduling core (`scheduling.cycle.run_filters`), so the
numbers answer "how many of size k" for the whole cluster at once. It leaves out: memory (the
mix has no per-size memory we would trust for every cluster), ephemeral storage and extended
resources other than GPUs, taints and tolerations, node selectors and affinity (the GPU-model
pin included: a size is not a model), host ports, volumes, inter-pod affinity and topology
spread. So it may count a node the scheduling core refuses, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kubegpu.fragmentation.shapes import ShapeMix
from kubegpu.scheduling.fit import copies_that_fit
from kubegpu.placement.state import PlacementState
from kubegpu.model.gpu import MILLI

SIZES: tuple[int, ...] = (1, 2, 4, 8)


def pods_that_fit(state: PlacementState, k: int, cpu_milli: int | None = None) -> np.ndarray:
    """int[n]: how many k-whole-GPU pods each node could take at once (0 where no new pod lands)."""
    count = copies_that_fit(state.dev_free, k, MILLI, (state.cpu_free, state.pods_free), (cpu_milli or 0, 1))
    return np.where(state.schedulable, count, 0)


def cpu_by_size(mix: ShapeMix, sizes: Sequence[int] = SIZES) -> dict[int, int]:
    """The smallest CPU request among whole-GPU shapes of each size in the mix (a lenient cap)."""
    out: dict[int, int] = {}
    for shape in mix.shapes:
        if shape.gpu_milli == MILLI and shape.num_gpu in sizes:
            out[shape.num_gpu] = min(out.get(shape.num_gpu, shape.cpu_milli), shape.cpu_milli)
    return out


def fits_by_size(state: PlacementState, *, sizes: Sequence[int] = SIZES,
                 cpu: Mapping[int, int] | None = None) -> dict[int, int]:
    """k -> number of k-GPU pods that could be placed simultaneously now."""
    cpu = cpu or {}
    return {k: int(pods_that_fit(state, k, cpu.get(k)).sum()) for k in sizes}


def stranded_by_size(state: PlacementState, *, sizes: Sequence[int] = SIZES,
                     cpu: Mapping[int, int] | None = None) -> dict[int, float]:
    """k -> free GPUs (in GPUs) that k-GPU pods cannot use once as many of them as fit are placed."""
    cpu = cpu or {}
    free = state.dev_free.sum(axis=1, dtype=np.int64)
    out: dict[int, float] = {}
    for k in sizes:
        used = pods_that_fit(state, k, cpu.get(k)) * k * MILLI
        out[k] = round(float((free - used).sum()) / MILLI, 3)
    return out
