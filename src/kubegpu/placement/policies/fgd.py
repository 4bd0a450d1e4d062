"""FGD — Fragmentation Gradient Descent (Weng et al., USENIX ATC '23).

Place each task where the expected fragmentation F_n(M) of the target workload M grows least
(Δ = F_after − F_before, possibly negative). For a shared pod every fitting device of a node is
tried and the best one kept; whole-GPU pods take the lowest-index free devices.

upstream (authors' fgd_score.go): score = int(100 · sigmoid(−Δ / 1000)) with Δ in milli-GPU,
so Δs within ~40 milli-GPU of each other tie; node ties go to the tie rank, device ties to the
lowest index.

Speed: a node's score depends only on that node's state and the task shape, so scores are
cached per (shape, node) and recomputed only for nodes whose `version` changed; candidate
devices with the same free share as a lower-index device are skipped (they score the same).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubegpu.placement.measure import node_fragmentation
from kubegpu.placement.measure import ShapeMix
from kubegpu.placement.tracker import FragmentTracker
from kubegpu.placement.policies.base import MAX_NODE_SCORE, best_node
from kubegpu.placement.state import PlacementState, exclusive_devices
from kubegpu.placement.task import Placement, Task


class _ShapeCache:
    """Scores and chosen device of one task shape on every node, with the node version they used."""

    def __init__(self, n: int) -> None:
        self.seen = np.full(n, -1, dtype=np.int64)
        self.score = np.zeros(n, dtype=np.float64)
        self.device = np.full(n, -1, dtype=np.int64)


class FragmentationDelta:
    """Scores nodes by the change of F_n(M) a task causes; the engine behind `fgd` and `kubegpu`.

    `scored` returns, per candidate node, the score of its best device and that device;
    subclasses turn Δ into a score (`device_scores`). The base class scores −Δ exactly.
    """

    name = "fragmentation-delta"

    def __init__(self, mix: ShapeMix) -> None:
        self.mix = mix
        self.tracker = FragmentTracker(mix)
        self._caches: dict[Any, _ShapeCache] = {}
        self._state_id: int | None = None

    # -- scoring hook ----------------------------------------------------------------------
    def device_scores(self, delta: np.ndarray, state: PlacementState, nodes: np.ndarray,
                      devices: np.ndarray, task: Task) -> np.ndarray:
        """Score of each (node, device) candidate from its Δ; higher is better."""
        return -delta

    # -- cached per-node evaluation --------------------------------------------------------
    def scored(self, state: PlacementState, task: Task, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(score, device) for each node in `nodes` (all must fit the task); device −1 = not a shared pod."""
        if self._state_id != state.uid:
            self._caches.clear()
            self._state_id = state.uid
        cache = self._caches.get(task.shape_key)
        if cache is None:
            cache = self._caches[task.shape_key] = _ShapeCache(state.n_nodes)
        stale = nodes[cache.seen[nodes] != state.version[nodes]]
        if stale.size:
            score, device = self._evaluate(state, task, stale)
            cache.score[stale] = score
            cache.device[stale] = device
            cache.seen[stale] = state.version[stale]
        return cache.score[nodes], cache.device[nodes]

    def _evaluate(self, state: PlacementState, task: Task, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        before = self.tracker.node_amounts(state)[nodes]
        access = self.mix.access(state.gpu_model[nodes], state.gpu_models)
        cpu_after = state.cpu_free[nodes] - task.cpu_milli
        dev = state.dev_free[nodes]
        if task.is_shared:
            n_dev = dev.shape[1]
            fits = dev >= task.gpu_milli
            earlier = np.tril(np.ones((n_dev, n_dev), dtype=bool), k=-1)
            duplicate = ((dev[:, :, None] == dev[:, None, :]) & earlier).any(axis=2)
            rows, cols = np.nonzero(fits & ~duplicate)
            hypo = dev[rows].copy()
            hypo[np.arange(rows.size), cols] -= task.gpu_milli
            after = node_fragmentation(cpu_after[rows], hypo, access[rows], self.mix)
            pair_score = self.device_scores(after - before[rows], state, nodes[rows], cols, task)
            table = np.full(dev.shape, -np.inf)
            table[rows, cols] = pair_score
            device = np.argmax(table, axis=1)               # first maximum = lowest device index
            return table[np.arange(nodes.size), device], device
        hypo = dev
        if task.wants_gpu:
            fitting = dev >= task.gpu_milli
            take = fitting & (np.cumsum(fitting, axis=1) <= task.num_gpu)
            hypo = dev - take * task.gpu_milli
        after = node_fragmentation(cpu_after, hypo, access, self.mix)
        device = np.full(nodes.size, -1, dtype=np.int64)
        return self.device_scores(after - before, state, nodes, device, task), device

    def choose(self, state: PlacementState, task: Task, feasible: np.ndarray) -> Placement | None:
        nodes = np.flatnonzero(feasible)
        if nodes.size == 0:
            return None
        score, device = self.scored(state, task, nodes)
        node = best_node(nodes, score, state.tie_rank)
        return Placement(node, self._devices(state, task, node, int(device[nodes == node][0])))

    @staticmethod
    def _devices(state: PlacementState, task: Task, node: int, device: int) -> tuple[int, ...]:
        if task.is_shared:
            return (device,)
        return exclusive_devices(state.dev_free[node], task) if task.wants_gpu else ()


class FGD(FragmentationDelta):
    """The paper's policy, scored exactly as the authors' simulator does (integer sigmoid score)."""

    name = "fgd"

    def device_scores(self, delta: np.ndarray, state: PlacementState, nodes: np.ndarray,
                      devices: np.ndarray, task: Task) -> np.ndarray:
        return np.floor(1.0 / (1.0 + np.exp(delta / 1000.0)) * MAX_NODE_SCORE)
