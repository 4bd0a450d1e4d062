"""The FGD fragmentation measure F_n(M), vectorised over nodes.

For node n and task shape m (paper §3, authors' `frag.go`):
  * m cannot run on n (not enough CPU, fewer than `num_gpu` devices with `gpu_milli` free,
    or a GPU-model mismatch): every idle milli-GPU of n is fragment for m;
  * m is CPU-only: every idle milli-GPU is fragment too (no such task will ever use it);
  * m fits: only devices whose free share is below m's per-device need are fragment.
F_n(M) = Σ_m p_m F_n(m); the cluster amount is Σ_n F_n(M), the rate amount / idle GPU.
Memory does not enter the measure (as in the paper). All amounts are in milli-GPU.

It lives in the scheduling layer because placement policies (fgd, kubegpu) score with it and
the fragmentation reports measure with it: both import it from here, neither imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np


class TaskShape(msgspec.Struct, frozen=True, kw_only=True):
    """One task class m of the mix, with its popularity p_m."""

    cpu_milli: int
    num_gpu: int = 0
    gpu_milli: int = 0
    models: frozenset[str] | None = None
    weight: float = 1.0
    mem_bytes: int = 0   # typical memory of the class (median); used only by memory-aware measures


class ShapeMix:
    """A normalised task-shape mix as arrays, ready for vectorised fragmentation."""

    def __init__(self, shapes: Sequence[TaskShape]) -> None:
        if not shapes:
            raise ValueError("a task-shape mix needs at least one shape")
        total = float(sum(s.weight for s in shapes))
        if not total > 0:
            raise ValueError("task-shape weights must sum to a positive number")
        self.shapes = [msgspec.structs.replace(s, weight=s.weight / total) for s in shapes]
        self.cpu_milli = np.array([s.cpu_milli for s in self.shapes], dtype=np.int64)
        self.num_gpu = np.array([s.num_gpu for s in self.shapes], dtype=np.int32)
        self.gpu_milli = np.array([s.gpu_milli for s in self.shapes], dtype=np.int32)
        self.weight = np.array([s.weight for s in self.shapes], dtype=np.float64)
        self.mem_bytes = np.array([s.mem_bytes for s in self.shapes], dtype=np.int64)
        self.is_gpu = self.num_gpu > 0
        self._access: dict[tuple[str, ...], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.shapes)

    def access_table(self, gpu_models: Sequence[str]) -> np.ndarray:
        """bool[M+1, m]: may shape m run on a node of model index i (row M = node without a model)."""
        key = tuple(gpu_models)
        table = self._access.get(key)
        if table is None:
            rows = [[s.models is None or model in s.models for s in self.shapes] for model in key]
            rows.append([s.models is None for s in self.shapes])
            table = np.array(rows, dtype=bool).reshape(len(key) + 1, len(self.shapes))
            self._access[key] = table
        return table

    def access(self, gpu_model: np.ndarray, gpu_models: Sequence[str]) -> np.ndarray:
        """bool[n, m] for nodes with model indices `gpu_model` (-1 = no model)."""
        return self.access_table(gpu_models)[gpu_model]


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
