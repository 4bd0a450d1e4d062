"""BestFit: the node with the least resources left after placing the task.

upstream (authors' best_fit_score.go): leftover = Σ_d 0.5 · (free_d − req_d) / maxspec_d over
CPU and total GPU (max spec 128 vCPU, 8 GPUs); score = int(100 · (1 − leftover)), then min–max
normalised over the scored nodes (integer arithmetic, as kube-scheduler's NormalizeScore).
Shared pods take the best-fit device.
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.policies.base import (MAX_NODE_SCORE, MAX_SPEC_CPU_MILLI,
                                                         MAX_SPEC_GPU_MILLI, ScoredPolicy)
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Task


def normalize_scores(scores: np.ndarray) -> np.ndarray:
    """kube-scheduler style min–max normalisation to 0..100 with integer division."""
    lo, hi = scores.min(), scores.max()
    if hi == lo:
        return np.zeros_like(scores)
    return (scores - lo) * MAX_NODE_SCORE // (hi - lo)


class BestFit(ScoredPolicy):
    name = "bestfit"

    def node_scores(self, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
        cpu_left = (state.cpu_free[nodes] - task.cpu_milli) / MAX_SPEC_CPU_MILLI * 0.5
        gpu_left = (state.dev_free[nodes].sum(axis=1) - task.total_gpu_milli) / MAX_SPEC_GPU_MILLI * 0.5
        raw = np.trunc((1.0 - (cpu_left + gpu_left)) * MAX_NODE_SCORE).astype(np.int64)
        return normalize_scores(raw)
