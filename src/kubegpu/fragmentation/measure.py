"""The FGD fragmentation measure F_n(M), vectorised over nodes.

For node n and task shape m (paper §3, authors' `frag.go`):
  * m cannot run on n (not enough CPU, fewer than `num_gpu` devices with `gpu_milli` free,
    or a GPU-model mismatch): every idle milli-GPU of n is fragment for m;
  * m is CPU-only: every idle milli-GPU is fragment too (no such task will ever use it);
  * m fits: only devices whose free share is below m's per-device need are fragment.
F_n(M) = Σ_m p_m F_n(m); the cluster amount is Σ_n F_n(M), the rate amount / idle GPU.
Memory does not enter the measure (as in the paper). All amounts are in milli-GPU.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from kubegpu.fragmentation.shapes import ShapeMix


def fragment_matrix(cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray,
                    mix: ShapeMix, mem_free: np.ndarray | None = None) -> np.ndarray:
    """float[n, m]: F_n(m) in milli-GPU for n node states (cpu_free[n], dev_free[n, D]).

    `access[n, m]` says whether shape m may use node n's GPU model. With `mem_free` the measure
    is memory-aware (a shape that lacks memory cannot use the node either); the paper's is not.
    """
    dev = dev_free.astype(np.int64, copy=False)
    idle = dev.sum(axis=1)
    enough = dev[:, None, :] >= mix.gpu_milli[None, :, None]          # [n, m, D]
    n_enough = enough.sum(axis=2)                                      # [n, m]
    too_small = np.where(enough, 0, dev[:, None, :]).sum(axis=2)       # [n, m]
    fits = (mix.is_gpu[None, :] & access & (cpu_free[:, None] >= mix.cpu_milli[None, :])
            & (n_enough >= mix.num_gpu[None, :]))
    if mem_free is not None:
        fits &= mem_free[:, None] >= mix.mem_bytes[None, :]
    return np.where(fits, too_small, idle[:, None]).astype(np.float64)


def node_fragmentation(cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray,
                       mix: ShapeMix, mem_free: np.ndarray | None = None) -> np.ndarray:
    """float[n]: F_n(M) = Σ_m p_m F_n(m), in milli-GPU."""
    if dev_free.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    return fragment_matrix(cpu_free, dev_free, access, mix, mem_free) @ mix.weight


class Fragmentation(msgspec.Struct, frozen=True):
    """Cluster fragmentation: amount in milli-GPU, idle milli-GPU, and rate = amount / idle."""

    amount_milli_gpu: float
    idle_milli_gpu: int
    rate: float


def cluster_fragmentation(node_amounts: np.ndarray, dev_free: np.ndarray) -> Fragmentation:
    """Sum node fragments; the rate is 0 when nothing is idle."""
    idle = int(dev_free.sum())
    amount = float(node_amounts.sum())
    return Fragmentation(amount_milli_gpu=amount, idle_milli_gpu=idle, rate=amount / idle if idle else 0.0)


def state_fragmentation(state: Any, mix: ShapeMix, *, use_memory: bool = False) -> np.ndarray:
    """F_n(M) for every node of a PlacementState-like object (cpu_free, dev_free, gpu_model, gpu_models)."""
    access = mix.access(state.gpu_model, state.gpu_models)
    return node_fragmentation(state.cpu_free, state.dev_free, access, mix,
                              state.mem_free if use_memory else None)
