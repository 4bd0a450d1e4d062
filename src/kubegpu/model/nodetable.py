"""NodeTable: the one columnar (numpy) view of a cluster's nodes, built once per ClusterState.

The scheduling snapshot (`scheduling.snapshot`) and the placement state (`placement`)
are both built from it, so every engine reads the same rows in the same order: allocatable and
requested per resource column, the bound pods' request vectors, GPU devices, readiness facts,
pools, labels and taint groups. `NodeTable.from_cluster(state)` is the state's table (cached on
`ClusterState.derived`); `take(rows)` is the one way to a table of some of its rows.

Which physical device a whole-GPU pod holds is not visible through the Kubernetes API (the
device plugin decides), so devices are filled deterministically: whole GPUs take fully free
devices first, shares go best-fit onto the fullest device they fit. Totals are exact either way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import MILLI, GpuDemand
from kubegpu.model.kinds import Node, Pod
from kubegpu.model.objects import Taint
from kubegpu.model.labelindex import LabelIndex
from kubegpu.model.pools import node_pool
from kubegpu.model.resources import CORE_RESOURCES, is_scalar_resource

CPU, MEMORY = CORE_RESOURCES.index("cpu"), CORE_RESOURCES.index("memory")
# the per-node fields `take` carries along (node axis first)
PER_NODE = ("nodes", "names", "alloc", "requested", "pods_alloc", "pods_used", "gpu_count", "dev_total",
            "gpu_model", "cordoned", "not_ready", "pool")


def take_rows(columns: dict[str, Any], rows: np.ndarray) -> dict[str, Any]:
    """Every per-node column at `rows` (in that order, repeats allowed): arrays by fancy indexing
    (a copy), lists by position. The one row-taking rule of NodeTable and PlacementState."""
    pick = rows.tolist()
    return {k: v[rows] if isinstance(v, np.ndarray) else [v[i] for i in pick] for k, v in columns.items()}


@dataclass(frozen=True, eq=False)
class NodeTable:
    """Per-node columns (node axis first, `state.nodes` order) and the bound pods' request rows.

    `resources` names the columns of `alloc` and `requested` (int64[n, R], scheduler units: cpu
    in millicores, memory and ephemeral-storage in bytes, then every scalar resource a node
    offers or a pod asks for, sorted); `pods_alloc`/`pods_used` are pod slots. `bound_pods` are
    the non-terminal pods bound to a node of the table (state order), with their row
    (`bound_node`) and request vector (`bound_vec`); `requested` is their sum per row.
    GPUs are in milli-GPU per physical device (padding devices have total 0). `cordoned` and
    `not_ready` are the two facts the one readiness rule (`scheduling.nodeready`) combines;
    `dev_used` and `pod_devices` are the one device packing (`place_on_devices`) every reader of
    "which device a pod holds" uses; it is made on first read (`pack`), since the scheduling core
    never reads it. The arrays are read-only: a what-if copies what it changes.
    """

    nodes: list[Node]
    names: list[str]
    resources: tuple[str, ...]
    alloc: np.ndarray            # int64[n, R]
    requested: np.ndarray        # int64[n, R]: summed requests of the bound pods
    pods_alloc: np.ndarray       # int64[n]
    pods_used: np.ndarray        # int64[n]
    bound_pods: list[Pod]
    bound_node: np.ndarray       # int32[m]: row of each bound pod
    bound_vec: np.ndarray        # int64[m, R]
    gpu_count: np.ndarray
    dev_total: np.ndarray
    gpu_model: np.ndarray
    gpu_models: list[str]
    cordoned: np.ndarray         # bool[n]: spec.unschedulable
    not_ready: np.ndarray        # bool[n]: a Ready condition that is False or Unknown
    pool: list[str]
    pack: InitVar[Callable[[], tuple[np.ndarray, dict[str, np.ndarray]]]]  # -> (dev_used, pod_devices), run once
    rows_of: dict[str, int] = field(default_factory=dict, init=False, repr=False)  # node name -> row
    column: dict[str, int] = field(default_factory=dict, init=False, repr=False)   # resource -> column
    _recipe: list = field(default_factory=list, init=False, repr=False)  # [pack] until the packing is made
    _packed: list = field(default_factory=list, init=False, repr=False)  # [(dev_used, pod_devices)] after
    _pack_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self, pack: Callable[[], tuple[np.ndarray, dict[str, np.ndarray]]]) -> None:
        # the recipe is dropped once run: it refers to the state, which refers to this table
        # (`ClusterState.derived`), and a cycle would leave the whole state to the cyclic GC
        self._recipe.append(pack)
        object.__setattr__(self, "rows_of", {name: i for i, name in enumerate(self.names)})
        object.__setattr__(self, "column", {r: j for j, r in enumerate(self.resources)})
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

    @classmethod
    def from_cluster(cls, state: ClusterState) -> "NodeTable":
        """The state's table, built on first use and kept on `state.derived` (a state never changes)."""
        table = state.derived.get("model.nodetable")
        if table is None:
            table = state.derived["model.nodetable"] = cls.build(state)
        return table

    # ------------------------------------------------------------ columns
    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def cpu_alloc(self) -> np.ndarray:
        return self.alloc[:, CPU]

    @property
    def cpu_used(self) -> np.ndarray:
        return self.requested[:, CPU]

    @property
    def mem_alloc(self) -> np.ndarray:
        return self.alloc[:, MEMORY]

    @property
    def mem_used(self) -> np.ndarray:
        return self.requested[:, MEMORY]

    def _packing(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        packed = self._packed
        if not packed:
            with self._pack_lock:
                if not packed:
                    used, held = self._recipe.pop()()
                    used.flags.writeable = False
                    packed.append((used, held))
        return packed[0]

    @property
    def dev_used(self) -> np.ndarray:
        """int32[n, D]: milli-GPU in use per device."""
        return self._packing()[0]

    @property
    def pod_devices(self) -> dict[str, np.ndarray]:
        """Bound GPU pod -> milli-GPU it holds per device of its node."""
        return self._packing()[1]

    @property
    def dev_free(self) -> np.ndarray:
        return self.dev_total - self.dev_used

    @property
    def gpu_free(self) -> np.ndarray:
        """Free milli-GPU per node."""
        return self.dev_free.sum(axis=1)

    @cached_property
    def labels(self) -> LabelIndex:
        """Node labels as columns (node selectors and affinity match over them), built on first use."""
        return LabelIndex(self.names, [node.metadata.labels for node in self.nodes])

    @cached_property
    def taint_groups(self) -> tuple[list[tuple[Taint, ...]], np.ndarray]:
        """(distinct taint sets, set index per node): toleration checks run once per distinct set."""
        groups: dict[tuple, int] = {}
        sets: list[tuple[Taint, ...]] = []
        group = np.zeros(self.n, dtype=np.int32)
        for i, node in enumerate(self.nodes):
            key = tuple((t.key, t.value or "", t.effect) for t in node.spec.taints)
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(sets)
                sets.append(tuple(node.spec.taints))
            group[i] = g
        group.flags.writeable = False
        return sets, group

    @cached_property
    def pool_index(self) -> tuple[list[str], np.ndarray]:
        """(sorted pool names, pool index per node)."""
        names = sorted(set(self.pool))
        position = {p: k for k, p in enumerate(names)}
        codes = np.asarray([position[p] for p in self.pool], dtype=np.int64)
        codes.flags.writeable = False
        return names, codes

    @cached_property
    def row_pods(self) -> list[np.ndarray]:
        """Per row, the indices of its bound pods (into `bound_pods`, ascending)."""
        order = np.argsort(self.bound_node, kind="stable")
        order.flags.writeable = False
        bounds = np.searchsorted(self.bound_node[order], np.arange(self.n + 1))
        return [order[bounds[i]:bounds[i + 1]] for i in range(self.n)]

    # ------------------------------------------------------------ rows
    def take(self, rows: Any) -> "NodeTable":
        """A table of the rows `rows` (indices, in that order, repeats allowed): every per-node
        column taken along, and the bound pods of those rows (a repeated row repeats its pods)."""
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        keep = [self.row_pods[i] for i in idx.tolist()]
        slots = np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)
        pods = [self.bound_pods[s] for s in slots.tolist()]

        def pack() -> tuple[np.ndarray, dict[str, np.ndarray]]:
            held = self.pod_devices
            return self.dev_used[idx], {p.key: held[p.key] for p in pods if p.key in held}

        return NodeTable(
            **take_rows({name: getattr(self, name) for name in PER_NODE}, idx),
            resources=self.resources, gpu_models=list(self.gpu_models), bound_pods=pods,
            bound_node=np.repeat(np.arange(len(idx), dtype=np.int32), [len(k) for k in keep]),
            bound_vec=self.bound_vec[slots], pack=pack)

    # ------------------------------------------------------------ build
    @classmethod
    def build(cls, state: ClusterState) -> "NodeTable":
        """Every column from the state, in one pass over nodes and one over bound pods (use `from_cluster`)."""
        nodes = list(state.nodes)
        names = [node.name for node in nodes]
        rows_of = {name: i for i, name in enumerate(names)}
        n = len(nodes)
        named = set().union(*state.allocatable.values(), *state.requests.values())
        scalars = sorted(r for r in named if is_scalar_resource(r))
        resources = (*CORE_RESOURCES, *scalars)
        column = {r: j for j, r in enumerate(resources)}
        alloc = np.zeros((n, len(resources)), dtype=np.int64)
        pods_alloc = np.zeros(n, dtype=np.int64)
        for i, node in enumerate(nodes):
            for name, amount in state.allocatable[node.name].items():
                j = column.get(name)
                if j is not None:
                    alloc[i, j] = amount
            pods_alloc[i] = state.allocatable[node.name].get("pods", 0)

        bound = [p for p in state.pods if p.spec.node_name in rows_of and not p.is_terminal]
        m = len(bound)
        bound_node = np.fromiter((rows_of[p.spec.node_name] for p in bound), dtype=np.int32, count=m)
        at_pod, at_col, amounts = [], [], []  # one scatter, not an array store per request
        for k, p in enumerate(bound):
            for name, amount in state.pod_requests(p).items():
                j = column.get(name)
                if j is not None:
                    at_pod.append(k)
                    at_col.append(j)
                    amounts.append(amount)
        bound_vec = np.zeros((m, len(resources)), dtype=np.int64)
        bound_vec[at_pod, at_col] = amounts
        requested = np.zeros_like(alloc)
        np.add.at(requested, bound_node, bound_vec)

        physical = [state.node_gpus[name].physical for name in names]
        dev_total = np.zeros((n, max(physical, default=0)), dtype=np.int32)
        for i, count in enumerate(physical):
            dev_total[i, :count] = MILLI
        gpu_models: list[str] = []
        gpu_model = np.full(n, -1, dtype=np.int32)
        for i, node in enumerate(nodes):
            info = state.node_gpus[node.name]
            if info.physical:
                model = info.model or "unknown"
                if model not in gpu_models:
                    gpu_models.append(model)
                gpu_model[i] = gpu_models.index(model)

        return cls(
            nodes=nodes, names=names, resources=resources, alloc=alloc, requested=requested,
            pods_alloc=pods_alloc, pods_used=np.bincount(bound_node, minlength=n).astype(np.int64),
            bound_pods=bound, bound_node=bound_node, bound_vec=bound_vec,
            gpu_count=np.asarray(physical, dtype=np.int32), dev_total=dev_total,
            gpu_model=gpu_model, gpu_models=gpu_models,
            cordoned=np.asarray([bool(node.spec.unschedulable) for node in nodes], dtype=bool),
            not_ready=np.asarray([node.reports_not_ready for node in nodes], dtype=bool),
            pool=[node_pool(node) for node in nodes],
            pack=lambda: _pack_devices(state, names, dev_total, bound, bound_node))


def _pack_devices(state: ClusterState, names: list[str], dev_total: np.ndarray, bound: list[Pod],
                  bound_node: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(dev_used, pod -> milli-GPU per device): bound pods packed onto their node's devices in
    state order (`place_on_devices`)."""
    dev_used = np.zeros(dev_total.shape, dtype=np.int32)
    physical = (dev_total > 0).any(axis=1)
    pod_devices: dict[str, np.ndarray] = {}
    for k, pod in enumerate(bound):
        i = int(bound_node[k])
        if physical[i]:
            before = dev_used[i].copy()
            place_on_devices(dev_used[i], dev_total[i], state.gpu_demand(pod, names[i]))
            held = pod_devices[pod.key] = dev_used[i] - before
            held.flags.writeable = False
    return dev_used, pod_devices


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
