"""The cluster as the scheduler sees it: per node the pods, their summed requests, host ports.

upstream keeps a NodeInfo per node; here the numbers live in numpy arrays (node axis first)
so one filter answers for every node at once, and pods live in slot arrays so a what-if
(`assume`, `remove`, "every pod below priority p gone") is an array update, not a rebuild.
Built once per ClusterState over the state's NodeTable (`model.nodetable`), whose node columns it
reads as they are (allocatable, pod slots, cordon, labels, taint groups, pools, the bound pods'
rows and request vectors); only the per-pod slots and the summed requests are its own, because
they change. `copy()` gives an independent what-if snapshot for the
preemption dry run, gang placement and the defrag planner.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import GPU, is_gpu_resource
from kubegpu.model.kinds import Node, Pod
from kubegpu.model.nodetable import NodeTable
from kubegpu.model.resources import is_scalar_resource, pod_requests
from kubegpu.scheduling.framework import PodInfo  # re-exported: PodInfo lives with the framework vocabulary
from kubegpu.scheduling.hostports import pod_host_ports
from kubegpu.scheduling.nodeready import table_not_ready_untainted
from kubegpu.scheduling.podcolumns import PodColumns


class SchedulingSnapshot:
    """NodeInfo for every node, as arrays; mutable through assume/remove, cloned by copy()."""

    def __init__(self, state: ClusterState) -> None:
        table = NodeTable.from_cluster(state)
        self.state = state
        self.table = table  # the node columns below are the table's own arrays (read-only), not copies
        self.derived: dict[str, Any] = {}  # facts filters compute once per snapshot object (not shared by copies)
        self.nodes: list[Node] = table.nodes
        self.names: list[str] = table.names
        self.index: dict[str, int] = table.rows_of
        self.resources: tuple[str, ...] = table.resources
        self.column: dict[str, int] = table.column
        self.alloc = table.alloc
        self.allowed_pods = table.pods_alloc
        self.unschedulable = table.cordoned
        # NotReady by condition, no condition taint: the core (as kube-scheduler) sees nothing; `why` notes it
        self.not_ready_untainted = table_not_ready_untainted(table)
        self.labels = table.labels
        self.pools: list[str] = table.pool
        self.taint_sets, self.taint_group = table.taint_groups
        self._pod_by_key = {p.key: p for p in state.pods}
        # pod slots
        n, r = table.n, len(table.resources)
        cap = max(len(table.bound_pods) * 2, 16)
        self._pods: list[Pod | None] = []
        self._infos: list[PodInfo | None] = []
        self.pod_node = np.full(cap, -1, dtype=np.int32)
        self.pod_prio = np.zeros(cap, dtype=np.int64)
        self.pod_vec = np.zeros((cap, r), dtype=np.int64)
        self.alive = np.zeros(cap, dtype=bool)
        self.pod_anti = np.zeros(cap, dtype=bool)  # has required pod anti-affinity
        self.slot: dict[str, int] = {}
        self.node_slots: list[tuple[int, ...]] = [() for _ in range(n)]
        self._pod_columns: PodColumns | None = None
        self.requested = table.requested.copy()  # assume/remove change these two
        self.pod_count = table.pods_used.copy()
        self._bulk_add(table)
        self.nominated: list[tuple[PodInfo, int]] = [
            (self.pod_info(p), self.index[p.status.nominated_node_name]) for p in state.unscheduled_pods
            if p.status.nominated_node_name and p.status.nominated_node_name in self.index]

    @classmethod
    def from_cluster(cls, state: ClusterState) -> "SchedulingSnapshot":
        """The state's snapshot, built once per state (`ClusterState.derived`): every caller gets its
        own copy, since assume/remove change it (doctor's pending, defrag and audit share one build)."""
        base = state.derived.get("scheduling.snapshot")
        if base is None:
            base = state.derived["scheduling.snapshot"] = cls(state)
        return base.copy()

    # ------------------------------------------------------------ pods
    def pod_info(self, pod: Pod) -> PodInfo:
        """Scheduling facts of any pod (bound, pending or hypothetical)."""
        req = self.state.requests.get(pod.key)
        if req is None or self._pod_by_key.get(pod.key) is not pod:
            req = pod_requests(pod)
        vec = np.zeros(len(self.resources), dtype=np.int64)
        extra: dict[str, int] = {}
        for name, amount in req.items():
            j = self.column.get(name)
            if j is not None:
                vec[j] = amount
            elif is_scalar_resource(name) and amount:
                extra[name] = amount
        return PodInfo(pod=pod, key=pod.key, requests=req, vector=vec, extra=extra,
                       priority=self.state.priority_of(pod), host_ports=pod_host_ports(pod))

    def _bulk_add(self, table: NodeTable) -> None:
        """Slot the table's bound pods (the initial build): their rows and request vectors are the
        table's, already summed into `requested`; PodInfo is made lazily."""
        pods = table.bound_pods
        m = len(pods)
        if not m:
            return
        node_idx = table.bound_node
        while len(self.alive) < m:
            self._grow()
        self._pods.extend(pods)
        self._infos.extend([None] * m)
        self.pod_node[:m] = node_idx
        self.pod_prio[:m] = np.fromiter((self.state.priority_of(p) for p in pods), dtype=np.int64, count=m)
        self.pod_vec[:m] = table.bound_vec
        self.alive[:m] = True
        for k, p in enumerate(pods):
            aff = p.spec.affinity
            if aff is not None and aff.pod_anti_affinity is not None and \
                    aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution:
                self.pod_anti[k] = True
            self.slot[p.key] = k
        self.node_slots = [tuple(slots.tolist()) for slots in table.row_pods]  # slot k holds bound pod k

    def gpu_room(self, info: PodInfo, requested: np.ndarray | None = None) -> np.ndarray:
        """int[n]: free units of the GPU resources the pod asks for (whole, shared, MIG), summed.

        What "most free GPU for this pod" orders by (a pod asking none: free nvidia.com/gpu).
        `requested` defaults to the snapshot's own (a view's may hide pods).
        """
        cols = [self.column[r] for r in info.requests if is_gpu_resource(r) and r in self.column]
        if not cols and GPU in self.column:
            cols = [self.column[GPU]]
        used = self.requested if requested is None else requested
        return (self.alloc[:, cols] - used[:, cols]).sum(axis=1) if cols else np.zeros(len(self.names), np.int64)

    @property
    def slot_count(self) -> int:
        """Pod slots in use (alive or removed): the length of every per-slot array that matters."""
        return len(self._pods)

    def pod_at(self, s: int) -> Pod:
        """The pod in slot s."""
        return self._pods[s]  # type: ignore[return-value]

    @property
    def pod_columns(self) -> PodColumns:
        """Labels and namespaces per pod slot, built on first use (only affinity and spread read them)."""
        cols = self._pod_columns
        if cols is None:
            cols = self._pod_columns = PodColumns.build(self._pods, len(self.alive))
        return cols

    def visible_slots(self, view: "NodeView | None" = None) -> np.ndarray:
        """bool[m] over the used pod slots: bound pods the view does not hide."""
        m = len(self._pods)
        out = self.alive[:m].copy()
        if view is not None and view.excluded is not None:
            out &= ~view.excluded[:m]
        return out

    def info_at(self, s: int) -> PodInfo:
        """The PodInfo of pod slot s (built on first use)."""
        info = self._infos[s]
        if info is None:
            info = self._infos[s] = self.pod_info(self._pods[s])  # type: ignore[arg-type]
        return info

    def _grow(self) -> None:
        cap = len(self.alive) * 2
        for attr in ("pod_node", "pod_prio", "alive", "pod_anti"):
            old = getattr(self, attr)
            new = np.zeros(cap, dtype=old.dtype) if attr != "pod_node" else np.full(cap, -1, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, attr, new)
        vec = np.zeros((cap, self.pod_vec.shape[1]), dtype=np.int64)
        vec[: len(self.pod_vec)] = self.pod_vec
        self.pod_vec = vec
        if self._pod_columns is not None:
            self._pod_columns.grow(cap)

    def _add(self, info: PodInfo, i: int) -> None:
        s = len(self._pods)
        if s >= len(self.alive):
            self._grow()
        self._pods.append(info.pod)
        self._infos.append(info)
        self.pod_node[s] = i
        self.pod_prio[s] = info.priority
        self.pod_vec[s] = info.vector
        self.alive[s] = True
        aff = info.pod.spec.affinity
        self.pod_anti[s] = bool(aff and aff.pod_anti_affinity
                                and aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution)
        self.slot[info.key] = s
        if self._pod_columns is not None:
            self._pod_columns.set(s, info.pod)
        self.node_slots[i] = self.node_slots[i] + (s,)
        self.requested[i] += info.vector
        self.pod_count[i] += 1

    def assume(self, pod: Pod | PodInfo, node: str | int) -> None:
        """Place a pod on a node (upstream Cache.AssumePod): its requests now count there."""
        info = pod if isinstance(pod, PodInfo) else self.pod_info(pod)
        i = node if isinstance(node, int) else self.index[node]
        if info.key in self.slot and self.alive[self.slot[info.key]]:
            self.remove(info.key)
        self._add(info, i)

    def remove(self, pod: Pod | str) -> None:
        """Take a pod off its node (evicted, preempted, moved)."""
        key = pod if isinstance(pod, str) else pod.key
        s = self.slot.get(key)
        if s is None or not self.alive[s]:
            return
        i = int(self.pod_node[s])
        self.alive[s] = False
        self.requested[i] -= self.pod_vec[s]
        self.pod_count[i] -= 1
        self.node_slots[i] = tuple(x for x in self.node_slots[i] if x != s)
        del self.slot[key]

    def copy(self) -> "SchedulingSnapshot":
        """An independent what-if copy (the NodeTable's columns and the ClusterState are shared, read-only)."""
        new = object.__new__(SchedulingSnapshot)
        new.__dict__.update(self.__dict__)
        new.derived = {}
        for attr in ("pod_node", "pod_prio", "pod_vec", "alive", "pod_anti", "requested", "pod_count"):
            setattr(new, attr, getattr(self, attr).copy())
        new._pods = list(self._pods)
        new._infos = list(self._infos)
        new.slot = dict(self.slot)
        new.node_slots = list(self.node_slots)  # tuples: replaced, never mutated
        new.nominated = list(self.nominated)
        new._pod_columns = self._pod_columns.copy() if self._pod_columns is not None else None
        return new

    def pods_on(self, node: str | int) -> list[Pod]:
        i = node if isinstance(node, int) else self.index[node]
        return [self._pods[s] for s in self.node_slots[i]]  # type: ignore[misc]

    def infos_on(self, i: int) -> list[PodInfo]:
        return [self.info_at(s) for s in self.node_slots[i]]

    def node_of(self, pod_key: str) -> int | None:
        s = self.slot.get(pod_key)
        return int(self.pod_node[s]) if s is not None and self.alive[s] else None

    # ------------------------------------------------------------ views and cycles
    def view(self, info: PodInfo | None = None) -> "NodeView":
        """What filters read; with `info`, nominated pods of equal or higher priority count too
        (upstream RunFilterPluginsWithNominatedPods)."""
        view = NodeView(self, self.requested, self.pod_count)
        if info is None or not self.nominated:
            return view
        adds = [(o, i) for o, i in self.nominated if o.key != info.key and o.priority >= info.priority]
        if not adds:
            return view
        requested = self.requested.copy()
        count = self.pod_count.copy()
        extra: dict[int, list[PodInfo]] = {}
        for o, i in adds:
            requested[i] += o.vector
            count[i] += 1
            extra.setdefault(i, []).append(o)
        return NodeView(self, requested, count, extra=extra)


class NodeView:
    """The node state a filter reads (implements `framework.NodeView`): summed requests, pod counts,
    the pods on a node.

    `excluded` (a mask over pod slots) hides pods, e.g. preemption's "every lower-priority pod
    removed"; `extra` adds pods that are not bound yet (nominated pods, gang siblings).
    """

    def __init__(self, snapshot: SchedulingSnapshot, requested: np.ndarray, pod_count: np.ndarray, *,
                 excluded: np.ndarray | None = None, extra: dict[int, list[PodInfo]] | None = None) -> None:
        self.snapshot = snapshot
        self.requested = requested
        self.pod_count = pod_count
        self.excluded = excluded
        self.extra = extra or {}

    def infos_on(self, i: int) -> list[PodInfo]:
        snap = self.snapshot
        slots: Iterable[int] = snap.node_slots[i]
        if self.excluded is not None:
            slots = [s for s in slots if not self.excluded[s]]
        out = [snap.info_at(s) for s in slots]
        return out + self.extra.get(i, [])

    def pods_on(self, i: int) -> list[Pod]:
        return [info.pod for info in self.infos_on(i)]

    def without_every_pod(self) -> "NodeView":
        """This view with every bound pod hidden (only added pods stay): the same as `without` of
        every alive slot, without summing 50,000 pod vectors back out."""
        snap = self.snapshot
        m = len(snap._pods)
        requested = np.zeros_like(self.requested)
        count = np.zeros_like(self.pod_count)
        for i, infos in self.extra.items():
            for info in infos:
                requested[i] += info.vector
                count[i] += 1
        full = np.zeros(len(snap.alive), dtype=bool)
        full[:m] = snap.alive[:m]
        if self.excluded is not None:
            full |= self.excluded
        return NodeView(snap, requested, count, excluded=full, extra=self.extra)

    def without(self, excluded: np.ndarray) -> "NodeView":
        """This view with more pod slots hidden (requests and counts adjusted)."""
        snap = self.snapshot
        m = len(snap._pods)
        ex = excluded[:m] & snap.alive[:m]
        if self.excluded is not None:
            ex = ex & ~self.excluded[:m]
        nodes = snap.pod_node[:m][ex]
        requested = self.requested.copy()
        np.subtract.at(requested, nodes, snap.pod_vec[:m][ex])
        count = self.pod_count - np.bincount(nodes, minlength=len(snap.nodes))
        full = np.zeros(len(snap.alive), dtype=bool)
        full[:m] = ex
        if self.excluded is not None:
            full |= self.excluded
        return NodeView(snap, requested, count, excluded=full, extra=self.extra)
