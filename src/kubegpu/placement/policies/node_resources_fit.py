"""kube-scheduler's NodeResourcesFit scoring strategies: LeastAllocated and MostAllocated.

upstream (least_allocated.go / most_allocated.go): per resource with capacity > 0,
LeastAllocated = (cap − requested) · 100 / cap and MostAllocated = min(requested, cap) · 100 / cap,
where requested includes the incoming pod; the node score is the weighted mean (integer
division), resources with zero capacity are skipped. Stock kube-scheduler scores only CPU and
memory; here GPU (milli, summed over devices) is scored too with weight 1, as an operator would
configure it (`scoringStrategy.resources: [cpu, memory, nvidia.com/gpu]`). Device choice: best-fit.
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.policies.base import MAX_NODE_SCORE, ScoredPolicy
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Task


class _NodeResourcesFit(ScoredPolicy):
    most = False
    weights = (1, 1, 1)  # cpu, memory, gpu

    def node_scores(self, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
        caps = (state.cpu_alloc[nodes], state.mem_alloc[nodes], state.gpu_capacity[nodes])
        frees = (state.cpu_free[nodes], state.mem_free[nodes], state.gpu_free[nodes])
        asks = (task.cpu_milli, task.mem_bytes, task.total_gpu_milli)
        total = np.zeros(nodes.size, dtype=np.int64)
        weight_sum = np.zeros(nodes.size, dtype=np.int64)
        for cap, free, ask, weight in zip(caps, frees, asks, self.weights):
            has = cap > 0
            safe_cap = np.where(has, cap, 1)
            requested = cap - free + ask
            if self.most:
                part = np.minimum(requested, cap) * MAX_NODE_SCORE // safe_cap
            else:
                part = np.maximum(cap - requested, 0) * MAX_NODE_SCORE // safe_cap
            total += np.where(has, part * weight, 0)
            weight_sum += np.where(has, weight, 0)
        return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)


class LeastAllocated(_NodeResourcesFit):
    """Spread: prefer the emptiest node (kube-scheduler's default strategy)."""

    name = "least-allocated"
    most = False


class MostAllocated(_NodeResourcesFit):
    """Bin-pack: prefer the fullest node."""

    name = "most-allocated"
    most = True
