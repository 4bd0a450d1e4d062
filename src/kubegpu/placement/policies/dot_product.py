"""DotProd (Tetris-style alignment): the node whose free vector aligns least with the demand.

Paper baseline "DotProd": pick the node with the *smallest* dot product of the node's free
resources and the task's demand. upstream (authors' dot_product_score.go with `-dimext merge
-norm max`): vectors are (CPU milli, total GPU milli), each normalised by the largest node
spec (128 vCPU, 8 GPUs); score = int(100 · (1 − dot/2)). Shared pods take the best-fit device.
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.policies.base import (MAX_NODE_SCORE, MAX_SPEC_CPU_MILLI,
                                                         MAX_SPEC_GPU_MILLI, ScoredPolicy)
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Task


class DotProduct(ScoredPolicy):
    name = "dotprod"

    def node_scores(self, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
        cpu = state.cpu_free[nodes] / MAX_SPEC_CPU_MILLI
        gpu = state.dev_free[nodes].sum(axis=1) / MAX_SPEC_GPU_MILLI
        dot = (cpu * (task.cpu_milli / MAX_SPEC_CPU_MILLI)
               + gpu * (task.total_gpu_milli / MAX_SPEC_GPU_MILLI)) / 2
        return np.trunc(MAX_NODE_SCORE * (1 - dot)).astype(np.int64)
