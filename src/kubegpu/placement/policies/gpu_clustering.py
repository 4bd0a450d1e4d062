"""GpuClustering (after Gandiva): keep tasks of the same GPU-request class together.

upstream (authors' gpu_clustering_score.go): classes are "shared GPU" and "k whole GPUs".
Score tiers, each 25 wide, inside a tier more allocated GPU (fewer free) scores higher:
  75–100 the node hosts only this class; 50–75 it hosts this class among others;
  25–50  it hosts no GPU task yet;       0–25 it hosts only other classes.
CPU-only tasks score 0 everywhere (ties go to the tie rank).
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.policies.base import MAX_NODE_SCORE, MAX_SPEC_GPU_MILLI, ScoredPolicy
from kubegpu.placement.state import PlacementState, affinity_class
from kubegpu.placement.task import Task

QUARTER = MAX_NODE_SCORE // 4


class GpuClustering(ScoredPolicy):
    name = "gpu-clustering"

    def node_scores(self, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
        cls_ = affinity_class(task)
        if cls_ < 0:
            return np.zeros(nodes.size, dtype=np.int64)
        counts = state.affinity_counts[nodes]
        n_classes = (counts > 0).sum(axis=1)
        same = counts[:, cls_] > 0
        tier = np.where(same, np.where(n_classes == 1, 3, 2), np.where(n_classes == 0, 1, 0))
        gpu_free = state.dev_free[nodes].sum(axis=1)
        used_part = QUARTER * (MAX_SPEC_GPU_MILLI - gpu_free) // MAX_SPEC_GPU_MILLI
        return (used_part + tier * QUARTER).astype(np.int64)
