"""The one placement interface: given a state, a task and the nodes it fits on, pick node + devices.

Every consumer (today the inflation experiment; the event simulator builds on it) calls
`policy.choose(state, task, feasible)`; feasibility itself comes from `PlacementState.fit_mask`
so that no policy re-implements "does it fit".
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from kubegpu.placement.state import PlacementState, default_devices
from kubegpu.placement.task import Placement, Task


@runtime_checkable
class PlacementPolicy(Protocol):
    """Chooses where a task goes among the nodes it fits on."""

    name: str

    def choose(self, state: PlacementState, task: Task, feasible: np.ndarray) -> Placement | None:
        """A placement on one of the `feasible` nodes (bool[n]), or None when there is none."""
        ...


def best_node(nodes: np.ndarray, scores: np.ndarray, tie_rank: np.ndarray) -> int:
    """The node with the highest score; among equal scores the one with the lowest tie rank."""
    top = scores.max()
    tied = nodes[scores == top]
    if tied.size == 1:
        return int(tied[0])
    return int(tied[np.argmin(tie_rank[tied])])


class ScoredPolicy:
    """A policy that scores each feasible node (higher is better) and breaks ties by tie rank.

    Subclasses implement `node_scores`; device choice defaults to best-fit for shared pods and
    lowest-index free devices for whole-GPU pods (the authors' `gpusel best`).
    """

    name = "scored"

    def node_scores(self, state: PlacementState, task: Task, nodes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def devices(self, state: PlacementState, task: Task, node: int) -> tuple[int, ...]:
        return default_devices(state.dev_free[node], task)

    def choose(self, state: PlacementState, task: Task, feasible: np.ndarray) -> Placement | None:
        nodes = np.flatnonzero(feasible)
        if nodes.size == 0:
            return None
        scores = self.node_scores(state, task, nodes)
        node = best_node(nodes, scores, state.tie_rank)
        return Placement(node, self.devices(state, task, node))


# The authors' simulator normalises resource vectors by the largest node spec of cluster H.
MAX_SPEC_CPU_MILLI = 128_000
MAX_SPEC_GPU_MILLI = 8_000
MAX_NODE_SCORE = 100
