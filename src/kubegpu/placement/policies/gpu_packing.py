"""GpuPacking (after the MLaaS study, NSDI '22): fill partly used GPUs, then used nodes, then idle ones.

upstream (authors' gpu_packing_score.go), highest first:
  1. the task fits on partially used devices: 100 − Σ(free % of the devices used)/10, ≥ 50;
  2. it needs fully free devices of an already used node: 50 − (fully free devices taken), ≥ 33;
  3. the node is completely idle: max(33 − free devices, free devices).
Devices are tried from the least free upwards. CPU-only tasks score 0 everywhere.
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.policies.base import MAX_NODE_SCORE, ScoredPolicy
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import MILLI, Task


class GpuPacking(ScoredPolicy):
    name = "gpu-packing"

    def node_scores(self, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
        if not task.wants_gpu:
            return np.zeros(nodes.size, dtype=np.int64)
        dev = state.dev_free[nodes]
        fully_free = (dev == MILLI).sum(axis=1)
        idle_node = fully_free == state.gpu_count[nodes]
        ordered = np.sort(dev, axis=1)                     # least free first (values only matter)
        fitting = ordered >= task.gpu_milli
        chosen = fitting & (np.cumsum(fitting, axis=1) <= task.num_gpu)
        fully_taken = (chosen & (ordered == MILLI)).sum(axis=1)
        free_pct = np.where(chosen, ordered * 100 // MILLI, 0).sum(axis=1)
        shared = np.maximum(MAX_NODE_SCORE - free_pct // 10, MAX_NODE_SCORE // 2)
        needs_free = np.maximum(MAX_NODE_SCORE // 2 - fully_taken, MAX_NODE_SCORE // 3)
        idle = np.maximum(MAX_NODE_SCORE // 3 - fully_free, fully_free)
        return np.where(idle_node, idle, np.where(fully_taken > 0, needs_free, shared)).astype(np.int64)
