"""kubegpu — our recommended placement: FGD made memory-aware, with exact device choice.

What we measured (docs/policies.md, docs/fgd-reproduction.md) before settling on this design:
on the Alibaba openb traces almost every GPU pod that FGD fails to place before the cluster is
full fails for *memory*: a node still has the GPU share and the CPU, but not the RAM (G2 nodes
carry 48 GiB per GPU, a median 1-GPU task asks 47 GiB). The paper's measure ignores memory, so
FGD happily strands GPUs behind exhausted RAM. So:

  * memory-aware fragmentation: every task shape of the mix carries its typical (median) memory,
    and a shape that lacks memory on a node counts that node's idle GPU as fragment, exactly
    like a shape that lacks CPU (multi-resource fragmentation);
  * exact device choice for fractional pods: among a node's devices take the one with the
    smallest exact Δ (ties: the fullest device), instead of the first device inside a
    ~40 milli-GPU score bucket;
  * node choice keeps FGD's quantised score int(100·sigmoid(−Δ/1000)) and its tie order. We
    tried exact Δ for node choice and deterministic tie-breaks (best-fit, worst-fit, packing,
    node size): all were worse — the coarse buckets with a fixed node order act as first-fit
    among near-equal nodes, which packs well (see docs/policies.md for the numbers).
"""

from __future__ import annotations

import numpy as np

from kubegpu.scheduling.placement.policies.base import MAX_NODE_SCORE
from kubegpu.scheduling.placement.policies.fgd import FragmentationDelta
from kubegpu.scheduling.placement.state import PlacementState
from kubegpu.scheduling.placement.task import Task

# Device tie-break weight: far below any real Δ difference (milli-GPU), only orders exact ties.
_FULLEST_DEVICE_BONUS = 1e-9


class KubegpuPolicy(FragmentationDelta):
    name = "kubegpu"
    use_memory = True

    def device_scores(self, delta: np.ndarray, state: PlacementState, nodes: np.ndarray,
                      devices: np.ndarray, task: Task) -> np.ndarray:
        score = -delta
        if task.is_shared:
            score = score - state.dev_free[nodes, devices] * _FULLEST_DEVICE_BONUS
        return score

    def node_score(self, best_device_score: np.ndarray) -> np.ndarray:
        return np.floor(1.0 / (1.0 + np.exp(-best_device_score / 1000.0)) * MAX_NODE_SCORE)
