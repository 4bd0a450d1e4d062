"""Random-fit: a uniformly random feasible node (paper baseline "Random").

upstream (authors' random_score.go): PreScore draws one feasible node uniformly; a shared pod
then takes a random fitting device, whole-GPU pods the lowest-index free devices.
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.state import PlacementState, exclusive_devices
from kubegpu.placement.task import Placement, Task


class RandomFit:
    """Uniform over feasible nodes, seeded so that runs are reproducible."""

    name = "random"

    def __init__(self, seed: int | None = None, *, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(seed)

    def choose(self, state: PlacementState, task: Task, feasible: np.ndarray) -> Placement | None:
        nodes = np.flatnonzero(feasible)
        if nodes.size == 0:
            return None
        node = int(nodes[self.rng.integers(nodes.size)])
        row = state.dev_free[node]
        if task.is_shared:
            fitting = np.flatnonzero(row >= task.gpu_milli)
            return Placement(node, (int(fitting[self.rng.integers(fitting.size)]),))
        return Placement(node, exclusive_devices(row, task) if task.wants_gpu else ())
