"""NodeTable: the columnar (numpy) view of a cluster's nodes that hot paths score over.

Which physical device a whole-GPU pod holds is not visible through the Kubernetes API (the
device plugin decides), so devices are filled deterministically: whole GPUs take fully free
devices first, shares go best-fit onto the fullest device they fit. Totals are exact either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import GPU, GPU_SHARED, MILLI, GpuDemand
from kubegpu.model.pools import node_pool

_CORE = ("cpu", "memory", "pods")
_GPU_RESOURCES = (GPU, GPU_SHARED)


@dataclass(frozen=True, eq=False)
class NodeTable:
    """Per-node columns (node axis first, `state.nodes` order) built once per cluster state.

    cpu in millicores, memory in bytes, GPUs in milli-GPU per physical device (padding devices
    have total 0). `cordoned` and `not_ready` are the two facts the one readiness rule
    (`scheduling.nodeready`) combines; `pod_devices` is the one device packing (`place_on_devices`)
    every reader of "which device a pod holds" uses. Treat the arrays as read-only.
    """

    names: list[str]
    cpu_alloc: np.ndarray
    cpu_used: np.ndarray
    mem_alloc: np.ndarray
    mem_used: np.ndarray
    pods_alloc: np.ndarray
    pods_used: np.ndarray
    gpu_count: np.ndarray
    dev_total: np.ndarray
    dev_used: np.ndarray
    gpu_model: np.ndarray
    gpu_models: list[str]
    cordoned: np.ndarray         # bool[n]: spec.unschedulable
    not_ready: np.ndarray        # bool[n]: a Ready condition that is False or Unknown
    pool: list[str]
    pod_devices: dict[str, np.ndarray] = field(default_factory=dict)  # bound pod -> milli-GPU per device
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {name: i for i, name in enumerate(self.names)})

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def dev_free(self) -> np.ndarray:
        return self.dev_total - self.dev_used

    @property
    def gpu_free(self) -> np.ndarray:
        """Free milli-GPU per node."""
        return self.dev_free.sum(axis=1)

    def index(self, name: str) -> int:
        """The row of node `name` (KeyError when absent)."""
        return self._index[name]

    @classmethod
    def from_cluster(cls, state: ClusterState) -> "NodeTable":
        nodes = state.nodes
        n = len(nodes)
        physical = [state.node_gpus[node.name].physical for node in nodes]
        width = max(physical, default=0)
        dev_total = np.zeros((n, width), dtype=np.int32)
        dev_used = np.zeros((n, width), dtype=np.int32)
        gpu_models: list[str] = []
        model_idx = np.full(n, -1, dtype=np.int32)
        core = {k: (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)) for k in _CORE}
        pod_devices: dict[str, np.ndarray] = {}

        for i, node in enumerate(nodes):
            alloc = state.allocatable[node.name]
            for r, (a, _) in core.items():
                a[i] = alloc.get(r, 0)
            info = state.node_gpus[node.name]
            dev_total[i, : info.physical] = MILLI
            if info.physical:
                model = info.model or "unknown"
                if model not in gpu_models:
                    gpu_models.append(model)
                model_idx[i] = gpu_models.index(model)
            pods = state.pods_by_node.get(node.name, [])
            core["pods"][1][i] = len(pods)
            for pod in pods:
                req = state.pod_requests(pod)
                core["cpu"][1][i] += req.get("cpu", 0)
                core["memory"][1][i] += req.get("memory", 0)
                if info.physical:
                    before = dev_used[i].copy()
                    place_on_devices(dev_used[i], dev_total[i], state.gpu_demand(pod, node.name))
                    pod_devices[pod.key] = dev_used[i] - before

        return cls(
            names=[node.name for node in nodes],
            cpu_alloc=core["cpu"][0], cpu_used=core["cpu"][1],
            mem_alloc=core["memory"][0], mem_used=core["memory"][1],
            pods_alloc=core["pods"][0], pods_used=core["pods"][1],
            gpu_count=np.asarray(physical, dtype=np.int32),
            dev_total=dev_total, dev_used=dev_used,
            gpu_model=model_idx, gpu_models=gpu_models,
            cordoned=np.asarray([bool(node.spec.unschedulable) for node in nodes], dtype=bool),
            not_ready=np.asarray([node.reports_not_ready for node in nodes], dtype=bool),
            pool=[node_pool(node) for node in nodes],
            pod_devices=pod_devices,
        )


def place_on_devices(used: np.ndarray, total: np.ndarray, demand: GpuDemand) -> None:
    """Record a pod's demand on one node's device row (in place).

    Whole GPUs go to the emptiest devices; a share goes best-fit (the fullest device with room),
    as a packing device plugin or a GPU-sharing scheduler would place it.
    """
    if not demand.num_gpu:
        return
    free = total - used
    present = total > 0
    if demand.gpu_milli >= MILLI:
        order = np.lexsort((np.arange(len(free)), -free))  # most free first, stable
        order = order[present[order]]
        for d in order[: demand.num_gpu]:
            used[d] += min(MILLI, max(free[d], 0)) if free[d] > 0 else 0
        return
    for _ in range(demand.num_gpu):
        free = total - used
        fits = present & (free >= demand.gpu_milli)
        if fits.any():
            d = int(np.argmin(np.where(fits, free, np.iinfo(np.int32).max)))
        elif present.any():
            d = int(np.argmax(np.where(present, free, -1)))  # over-committed input: keep totals honest
        else:
            return
        used[d] += min(demand.gpu_milli, max(int(free[d]), 0))
