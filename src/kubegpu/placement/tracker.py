"""Keep F_n(M) for every node up to date while a placement state changes.

Recomputing the measure for all nodes after each placement is wasteful: only the node that
received (or lost) a pod changed. The tracker remembers each node's `version` at the time its
fragment was computed and refreshes just the stale rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubegpu.placement.measure import ShapeMix, node_fragmentation


class FragmentTracker:
    """Per-node fragment amounts (milli-GPU) of one placement state, refreshed incrementally."""

    def __init__(self, mix: ShapeMix, *, use_memory: bool = False) -> None:
        self.mix = mix
        self.use_memory = use_memory
        self._state_id: int | None = None
        self._amount = np.zeros(0)
        self._seen = np.zeros(0, dtype=np.int64)

    def node_amounts(self, state: Any) -> np.ndarray:
        """F_n(M) of every node of `state`, now (a view: do not modify)."""
        if self._state_id != state.uid or self._amount.shape[0] != state.n_nodes:
            self._state_id = state.uid
            self._amount = np.zeros(state.n_nodes)
            self._seen = np.full(state.n_nodes, -1, dtype=np.int64)
        stale = np.flatnonzero(self._seen != state.version)
        if stale.size:
            access = self.mix.access(state.gpu_model[stale], state.gpu_models)
            mem = state.mem_free[stale] if self.use_memory else None
            self._amount[stale] = node_fragmentation(state.cpu_free[stale], state.dev_free[stale], access,
                                                     self.mix, mem)
            self._seen[stale] = state.version[stale]
        return self._amount
