"""Which nodes may be considered for removal (upstream scaledown/eligibility/eligibility.go).

Utilization (simulator/utilization/info.go): on a GPU node only GPU requests / GPU allocatable
count, against scale-down-gpu-utilization-threshold (0 when nothing is allocatable); on other
nodes max(cpu, memory) requests / allocatable against scale-down-utilization-threshold. The test
is `utilization > threshold => not underutilized`, so a node exactly at the threshold IS a candidate.
"""

from __future__ import annotations

import numpy as np

from kubegpu.placement.state import PlacementState
from kubegpu.simulate.autoscaler.config import AutoscalerConfig


def utilization(state: PlacementState, slots: np.ndarray) -> np.ndarray:
    gpu_total = state.gpu_capacity[slots]
    gpu_used = gpu_total - state.gpu_free[slots]
    gpu_util = np.where(gpu_total > 0, gpu_used / np.maximum(gpu_total, 1), 0.0)
    cpu = (state.cpu_alloc[slots] - state.cpu_free[slots]) / np.maximum(state.cpu_alloc[slots], 1)
    mem = (state.mem_alloc[slots] - state.mem_free[slots]) / np.maximum(state.mem_alloc[slots], 1)
    return np.where(gpu_total > 0, gpu_util, np.maximum(cpu, mem))


def underutilized(state: PlacementState, slots: np.ndarray, config: AutoscalerConfig) -> np.ndarray:
    """Bool per slot: utilization <= its threshold (GPU threshold on GPU nodes)."""
    threshold = np.where(state.gpu_capacity[slots] > 0, config.scale_down_gpu_utilization_threshold,
                         config.scale_down_utilization_threshold)
    return ~(utilization(state, slots) > threshold)
