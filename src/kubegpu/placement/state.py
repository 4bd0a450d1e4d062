"""Mutable columnar cluster state for placement: what is free where, per node and per GPU device.

Placement policies score every node for one task with numpy, so the state is a set of arrays
with the node axis first (the NodeTable layout: its allocatable columns shared, the free ones
mutable). Each node also carries a `version` counter that changes whenever something is placed
on or removed from it, so a policy can cache node-local scores and recompute only the nodes that
changed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kubegpu.model.nodetable import NodeTable, take_rows
from kubegpu.scheduling.fit import fits_amounts, fits_devices
from kubegpu.scheduling.nodeready import table_takes_new_pods
from kubegpu.placement.task import Placement, Task

# GPU-request classes for GpuClustering (Gandiva): shared, 1..8 whole GPUs, anything else.
N_AFFINITY_CLASSES = 10
SHARED_CLASS = 0
OTHER_CLASS = 9

# Identity of a state for caches (id() can be reused after garbage collection).
_STATE_IDS = itertools.count()


def affinity_class(task: Task) -> int:
    """GpuClustering's request class: 0 = shared GPU, k = k whole GPUs, 9 = other; -1 = CPU-only."""
    if not task.wants_gpu:
        return -1
    if task.is_shared:
        return SHARED_CLASS
    return task.num_gpu if 1 <= task.num_gpu <= 8 else OTHER_CLASS


class PlacementState:
    """Free resources of n nodes with up to D GPU devices each; mutated by `place` / `remove`.

    Memory is in bytes, CPU in millicores, GPU in milli-GPU per device (1000 = one device,
    padding devices have capacity 0). `tie_rank` orders nodes when scores tie (lower wins):
    node order by default, a seeded permutation in the inflation experiment (as the authors'
    simulator renames nodes with a random prefix and then breaks ties by name).
    """

    def __init__(self, *, names: Sequence[str], cpu_alloc: Any, mem_alloc: Any, dev_total: Any,
                 gpu_model: Any | None = None, gpu_models: Sequence[str] = (),
                 cpu_used: Any | None = None, mem_used: Any | None = None, dev_used: Any | None = None,
                 pods_alloc: Any | None = None, pods_used: Any | None = None,
                 schedulable: Any | None = None, pool: Sequence[str] | None = None,
                 tie_rank: Any | None = None, affinity_counts: Any | None = None) -> None:
        n = len(names)
        self.names = list(names)
        self.cpu_alloc = np.asarray(cpu_alloc, dtype=np.int64).reshape(n)
        self.mem_alloc = np.asarray(mem_alloc, dtype=np.int64).reshape(n)
        self.dev_total = np.asarray(dev_total, dtype=np.int32).reshape(n, -1) if n else np.zeros((0, 0), np.int32)
        self.pods_alloc = (np.full(n, np.iinfo(np.int64).max // 4, dtype=np.int64) if pods_alloc is None
                           else np.asarray(pods_alloc, dtype=np.int64).reshape(n))
        self.cpu_free = self.cpu_alloc - (0 if cpu_used is None else np.asarray(cpu_used, dtype=np.int64))
        self.mem_free = self.mem_alloc - (0 if mem_used is None else np.asarray(mem_used, dtype=np.int64))
        self.pods_free = self.pods_alloc - (0 if pods_used is None else np.asarray(pods_used, dtype=np.int64))
        used = np.zeros_like(self.dev_total) if dev_used is None else np.asarray(dev_used, dtype=np.int32)
        self.dev_free = (self.dev_total - used.reshape(self.dev_total.shape)).astype(np.int32)
        self.gpu_count = (self.dev_total > 0).sum(axis=1).astype(np.int32)
        self.gpu_model = (np.full(n, -1, dtype=np.int32) if gpu_model is None
                          else np.asarray(gpu_model, dtype=np.int32).reshape(n))
        self.gpu_models = list(gpu_models)
        self.schedulable = (np.ones(n, dtype=bool) if schedulable is None
                            else np.asarray(schedulable, dtype=bool).reshape(n))
        self.pool = list(pool) if pool is not None else [""] * n
        self.tie_rank = (np.arange(n, dtype=np.int64) if tie_rank is None
                         else np.asarray(tie_rank, dtype=np.int64).reshape(n))
        self.affinity_counts = (np.zeros((n, N_AFFINITY_CLASSES), dtype=np.int32) if affinity_counts is None
                                else np.asarray(affinity_counts, dtype=np.int32).reshape(n, N_AFFINITY_CLASSES))
        self.version = np.zeros(n, dtype=np.int64)
        self.uid = next(_STATE_IDS)
        self._model_masks: dict[frozenset[str] | None, np.ndarray] = {}

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def from_node_table(cls, table: NodeTable, *, placed: Iterable[tuple[int, Task]] = ()) -> PlacementState:
        """Build from a NodeTable (physical GPUs, per-device milli): the allocatable columns,
        GPU devices and models are the table's own read-only arrays, only the free amounts are new.

        `schedulable` is the one readiness rule (`scheduling.nodeready`): neither cordoned nor NotReady.

        `placed` lists (node index, task) of pods already running, so GpuClustering knows which
        request classes each node hosts; resources are taken from the table, not from `placed`.
        """
        state = cls(names=table.names, cpu_alloc=table.cpu_alloc, cpu_used=table.cpu_used,
                    mem_alloc=table.mem_alloc, mem_used=table.mem_used,
                    pods_alloc=table.pods_alloc, pods_used=table.pods_used,
                    dev_total=table.dev_total, dev_used=table.dev_used,
                    gpu_model=table.gpu_model, gpu_models=table.gpu_models,
                    schedulable=table_takes_new_pods(table), pool=table.pool)
        for node, task in placed:
            cls_ = affinity_class(task)
            if cls_ >= 0:
                state.affinity_counts[node, cls_] += 1
        return state

    def copy(self) -> PlacementState:
        """An independent copy (for what-if planning)."""
        other = object.__new__(PlacementState)
        for key, value in self.__dict__.items():
            other.__dict__[key] = value.copy() if isinstance(value, (np.ndarray, list, dict)) else value
        other._model_masks = dict(self._model_masks)
        other.uid = next(_STATE_IDS)
        return other

    def rows(self, idx: Any, *, empty: bool = False) -> PlacementState:
        """A sub-state of the rows `idx` (indices, repeats allowed), every per-node column taken along.

        Current allocation is kept (`empty=True`: nothing placed, e.g. a node group's template);
        the new state is independent of this one.
        """
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        n = self.n_nodes
        other = object.__new__(PlacementState)
        per_node = {}
        for key, value in self.__dict__.items():
            if key in ("names", "pool") or (isinstance(value, np.ndarray) and value.shape[:1] == (n,)):
                per_node[key] = value
            else:
                other.__dict__[key] = value.copy() if isinstance(value, (list, dict)) else value
        other.__dict__.update(take_rows(per_node, idx))
        other._model_masks = {}
        other.uid = next(_STATE_IDS)
        if empty:
            other.cpu_free = other.cpu_alloc.copy()
            other.mem_free = other.mem_alloc.copy()
            other.pods_free = other.pods_alloc.copy()
            other.dev_free = other.dev_total.copy()
            other.affinity_counts[:] = 0
        return other

    # ---- derived views ------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.names)

    @property
    def gpu_free(self) -> np.ndarray:
        """Free milli-GPU per node (all devices)."""
        return self.dev_free.sum(axis=1, dtype=np.int64)

    @property
    def gpu_capacity(self) -> np.ndarray:
        return self.dev_total.sum(axis=1, dtype=np.int64)

    def model_mask(self, models: frozenset[str] | None) -> np.ndarray:
        """Nodes whose GPU model is allowed (all nodes when `models` is None)."""
        mask = self._model_masks.get(models)
        if mask is None:
            if models is None:
                mask = np.ones(self.n_nodes, dtype=bool)
            else:
                allowed = np.array([m in models for m in self.gpu_models] + [False], dtype=bool)
                mask = allowed[self.gpu_model]  # index -1 hits the trailing False
            self._model_masks[models] = mask
        return mask

    def fit_mask(self, task: Task) -> np.ndarray:
        """Nodes that can host `task` now: schedulable, CPU, memory, pod slots, GPU model and devices.

        The arithmetic is the scheduling core's (`scheduling.fit`): the comparisons NodeResourcesFit
        makes, with the device half counted per GPU. A deliberately smaller model than the core's
        filters (the placement policies score simulated tasks, which carry no pod spec): it leaves
        out taints and tolerations, node selectors and node affinity other than the GPU-model pin,
        ephemeral storage, extended resources other than GPUs, host ports, volumes, inter-pod
        affinity and topology spread, and which GPU resource a pod names (nvidia.com/gpu, gpu.shared
        or a MIG profile: the device half counts physical devices whatever resource serves them).
        `schedulable` is the one readiness rule (`scheduling.nodeready`) when built from a NodeTable,
        so a NotReady node without the condition taint is refused here and admitted by the core. A
        pending pod's task is read without a node (`fragmentation.cluster.pod_task`), so a time-sliced
        share counts as whole devices until the pod is bound. Where this admits a pod the core admits
        it too, or one of these omissions is the difference (tests/scheduling/test_agreement.py).
        """
        ok = self.schedulable & fits_amounts((self.cpu_free, self.mem_free), (task.cpu_milli, task.mem_bytes))
        ok &= self.pods_free >= 1
        if task.wants_gpu:
            ok &= self.model_mask(task.models)
            ok &= fits_devices(self.dev_free, task.num_gpu, task.gpu_milli)
        return ok

    def fits_on(self, task: Task, node: int) -> bool:
        """`fit_mask` for one node (the same rule on a one-row view)."""
        one = slice(node, node + 1)
        if not (self.schedulable[node] and self.pods_free[node] >= 1
                and fits_amounts((self.cpu_free[one], self.mem_free[one]), (task.cpu_milli, task.mem_bytes))[0]):
            return False
        if not task.wants_gpu:
            return True
        return bool(self.model_mask(task.models)[node]
                    and fits_devices(self.dev_free[one], task.num_gpu, task.gpu_milli)[0])

    # ---- mutation -----------------------------------------------------------------------
    def place(self, task: Task, placement: Placement) -> None:
        """Take the task's resources on the chosen node/devices; refuses anything that over-allocates."""
        node, devices = placement.node, placement.devices
        if not self.fits_on(task, node):
            raise ValueError(f"task {task.name!r} does not fit on node {self.names[node]!r}")
        if len(devices) != task.num_gpu or len(set(devices)) != len(devices):
            raise ValueError(f"task {task.name!r} needs {task.num_gpu} distinct devices, got {devices}")
        for d in devices:
            if self.dev_free[node, d] < task.gpu_milli:
                raise ValueError(f"device {d} of {self.names[node]!r} has {self.dev_free[node, d]}m free, "
                                 f"task {task.name!r} needs {task.gpu_milli}m")
        self.cpu_free[node] -= task.cpu_milli
        self.mem_free[node] -= task.mem_bytes
        self.pods_free[node] -= 1
        for d in devices:
            self.dev_free[node, d] -= task.gpu_milli
        cls_ = affinity_class(task)
        if cls_ >= 0:
            self.affinity_counts[node, cls_] += 1
        self.version[node] += 1

    def remove(self, task: Task, placement: Placement) -> None:
        """Give back what `place` took (a pod leaving or being moved)."""
        node = placement.node
        self.cpu_free[node] += task.cpu_milli
        self.mem_free[node] += task.mem_bytes
        self.pods_free[node] += 1
        for d in placement.devices:
            self.dev_free[node, d] += task.gpu_milli
        if (self.dev_free[node] > self.dev_total[node]).any() or self.cpu_free[node] > self.cpu_alloc[node]:
            raise ValueError(f"removing task {task.name!r} from {self.names[node]!r} frees more than capacity")
        cls_ = affinity_class(task)
        if cls_ >= 0 and self.affinity_counts[node, cls_] > 0:
            self.affinity_counts[node, cls_] -= 1
        self.version[node] += 1


def exclusive_devices(dev_free_row: np.ndarray, task: Task) -> tuple[int, ...]:
    """Lowest-index devices with enough room for a multi-device (or whole-GPU) task.

    upstream (open-gpu-share AllocateExclusiveGpuId): whole-GPU pods take the lowest-index
    fully free devices.
    """
    idx = np.flatnonzero(dev_free_row >= task.gpu_milli)[: task.num_gpu]
    return tuple(int(i) for i in idx)


def tightest_device(dev_free_row: np.ndarray, task: Task) -> int:
    """The fitting device with the least free share (lowest index on ties): best-fit GPU choice."""
    fits = dev_free_row >= task.gpu_milli
    masked = np.where(fits, dev_free_row, np.iinfo(np.int32).max)
    return int(np.argmin(masked))


def default_devices(dev_free_row: np.ndarray, task: Task) -> tuple[int, ...]:
    """Device choice used by the baselines: best-fit for a shared pod, lowest free devices otherwise."""
    if not task.wants_gpu:
        return ()
    if task.is_shared:
        return (tightest_device(dev_free_row, task),)
    return exclusive_devices(dev_free_row, task)
