"""The defrag problem as arrays: free resources per node, the movable pods, their units and costs.

Built once per plan from a ClusterState. Resources are those of the scheduling core's snapshot
(allocatable minus requested, per resource column, in scheduler units), so "room" means what
kube-scheduler's NodeResourcesFit means. Whole free GPU devices per node (what `fits_by_size`
counts) come from the snapshot's NodeTable, so both share one node order. Which nodes a pod may land on for reasons other than room
(taints, affinity, ports, volumes, topology) is asked of the scheduling core, once per pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import msgspec
import numpy as np

from kubegpu.defrag.budget import BudgetLedger
from kubegpu.defrag.cost import MoveCost, move_cost, state_now
from kubegpu.defrag.evictability import Evictability, EvictionPolicy, classify
from kubegpu.defrag.units import move_groups
from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import MILLI
from kubegpu.model.kinds import Pod
from kubegpu.scheduling.fit import whole_free_devices
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import version_of
from kubegpu.scheduling.cycle import filter_pod

RESOURCE_FILTER = "NodeResourcesFit"


def replacement_of(pod: Pod) -> Pod:
    """The pod its controller creates after an eviction: same spec, not bound, not yet running."""
    spec = msgspec.structs.replace(pod.spec, node_name=None)
    status = msgspec.structs.replace(pod.status, phase="Pending", nominated_node_name=None, conditions=[],
                                     container_statuses=[])
    return msgspec.structs.replace(pod, spec=spec, status=status)


@dataclass
class Unit:
    """Pods that move together (one pod, or a whole gang), as indices into the problem's pods."""

    name: str
    members: list[int]
    gang: str | None
    cost: float          # GPU-hours


@dataclass
class DefragProblem:
    state: ClusterState
    snapshot: SchedulingSnapshot
    names: list[str]
    free: np.ndarray            # int64[n, R]: allocatable - requested, per snapshot resource column
    pods_free: np.ndarray       # int64[n]
    dev_free: np.ndarray        # int32[n, D]: free milli-GPU per device
    dev_total: np.ndarray
    schedulable: np.ndarray     # bool[n]
    pods: list[Pod]             # movable candidates
    home: np.ndarray            # int[P]
    vec: np.ndarray             # int64[P, R]
    dev_delta: list[np.ndarray]  # per candidate: milli-GPU it holds per device of its node
    whole_gpus: np.ndarray      # int[P]: whole devices it holds (0 for shared-GPU pods)
    costs: list[MoveCost]
    unit_of: np.ndarray         # int[P]
    units: list[Unit]
    standing: dict[str, Evictability]
    ledger: BudgetLedger
    now: datetime
    _dest: dict[int, np.ndarray] = field(default_factory=dict)          # this plan's masks (bans applied)
    _dest_shared: dict[int, np.ndarray] = field(default_factory=dict)   # every plan's masks, no bans
    _cache: dict = field(default_factory=dict)  # derived, read-only facts shared by every plan's copy
    _key_index: dict[str, int] = field(default_factory=dict, repr=False)  # pod key -> candidate (candidate())
    same_pool: bool = False     # destinations only in the pod's own node pool (the pool separation)

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def on_node(self) -> list[list[int]]:
        """Candidates per node (by home), computed once."""
        cached = self._cache.get("on_node")
        if cached is None:
            cached = [[] for _ in range(self.n)]
            for p, h in enumerate(self.home.tolist()):
                cached[h].append(p)
            self._cache["on_node"] = cached
        return cached

    def room(self, u: int, n: int) -> tuple[np.ndarray, int, int]:
        """What unit u gives back on node n: (resource vector, pod slots, whole devices); cached."""
        cache = self._cache.setdefault("room", {})
        key = (u, n)
        hit = cache.get(key)
        if hit is None:
            members = [p for p in self.units[u].members if self.home[p] == n]
            vec = self.vec[members].sum(axis=0) if members else np.zeros(self.free.shape[1], dtype=np.int64)
            hit = cache[key] = (vec, len(members), int(self.whole_gpus[members].sum()) if members else 0)
        return hit

    def whole_free(self, dev_free: np.ndarray | None = None) -> np.ndarray:
        return whole_free_devices(self.dev_free if dev_free is None else dev_free, self.dev_total)

    def shared_milli(self, p: int) -> int:
        """The share of one device candidate p holds (0 when it holds whole devices or none)."""
        if self.whole_gpus[p]:
            return 0
        delta = self.dev_delta[p]
        return int(delta.max()) if delta.size else 0

    def column(self, resource: str) -> int | None:
        return self.snapshot.column.get(resource)

    def static_mask(self, pod: Pod, *, exclude: str | None = None) -> np.ndarray:
        """bool[n]: nodes where every filter but NodeResourcesFit passes for `pod` (resources are ours).

        `exclude` (a bound pod's key) is taken off the snapshot first, so a pod does not collide
        with itself (host ports, anti-affinity) when asked where its replacement may go.
        """
        snap = self.snapshot
        where = snap.node_of(exclude) if exclude else None
        info = snap.pod_info(pod)
        if info.extra:
            return np.zeros(self.n, dtype=bool)  # asks for a resource no node offers
        held = snap.info_at(snap.slot[exclude]) if where is not None else None
        if where is not None:
            snap.remove(exclude)
        try:
            outcome = filter_pod(snap, pod, version=version_of(self.state.server_version, self.state.k8s_version))
        finally:
            if held is not None:
                snap.assume(held, where)
        return outcome.mask_except(RESOURCE_FILTER)

    def dest_mask(self, p: int) -> np.ndarray:
        """bool[n]: nodes the replacement of candidate p may land on, room aside (cached)."""
        mask = self._dest.get(p)
        if mask is None:
            mask = self._dest_shared.get(p)
            if mask is None:
                pod = self.pods[p]
                mask = self.static_mask(replacement_of(pod), exclude=pod.key)
                mask[self.home[p]] = False
                mask.flags.writeable = False  # shared by every plan on this problem
                self._dest_shared[p] = mask
            if self.same_pool:
                mask = mask & self.pool_mates(int(self.home[p]))
            self._dest[p] = mask
        return mask

    def ban(self, p: int, n: int) -> None:
        """This plan's replacement of candidate p may not land on node n (the core refused it there)."""
        mask = self.dest_mask(p).copy()
        mask[n] = False
        self._dest[p] = mask

    def pod_shapes(self) -> tuple[np.ndarray, np.ndarray]:
        """The candidates' distinct shapes (requests, whole GPUs) and each candidate's shape (cached)."""
        shapes = self._cache.get("pod_shapes")
        if shapes is None:
            keyed = np.column_stack([self.vec, self.whole_gpus.astype(np.int64)])
            shapes = self._cache["pod_shapes"] = np.unique(keyed, axis=0, return_inverse=True)
        return shapes

    def pool_mates(self, n: int) -> np.ndarray:
        """bool[n]: nodes in node n's pool (same pool label, or both without one)."""
        codes = self.snapshot.table.pool_index[1]
        return codes == codes[n]

    def crosses_pools(self, p: int, n: int) -> bool:
        return not bool(self.pool_mates(int(self.home[p]))[n])

    def candidate(self, key: str) -> int | None:
        """The index of the candidate pod `key` ('ns/name'), None if it is no candidate."""
        if len(self._key_index) != len(self.pods):
            self._key_index = {p.key: i for i, p in enumerate(self.pods)}
        return self._key_index.get(key)


def build_problem(state: ClusterState, *, policy: EvictionPolicy = EvictionPolicy(),
                  beneficiary_priority: int | None = None, now: datetime | None = None,
                  snapshot: SchedulingSnapshot | None = None, gangs=None) -> DefragProblem:
    """Everything a planner needs, computed once (`snapshot`, `gangs`: reuse the caller's)."""
    snap = snapshot if snapshot is not None else SchedulingSnapshot.from_cluster(state)
    table = snap.table
    free = snap.alloc - snap.requested
    pods_free = snap.allowed_pods - snap.pod_count
    groups = move_groups(state, gangs)
    bound = [p for p in state.live_pods if p.spec.node_name in snap.index]
    ledger = BudgetLedger(state)
    standing = classify(state, bound, gangs=groups, beneficiary_priority=beneficiary_priority, policy=policy,
                        budget_reason=ledger.exhausted_reason)
    deltas = table.pod_devices
    at = state_now(state, now)
    pods = [p for p in bound if standing[p.key].movable]
    slots = np.fromiter((snap.slot[p.key] for p in pods), dtype=np.int64, count=len(pods))
    vec = snap.pod_vec[slots].astype(np.int64)
    home = snap.pod_node[slots].astype(np.int64)
    no_gpu = np.zeros(table.dev_total.shape[1], dtype=np.int32)
    dev_delta = [deltas.get(p.key, no_gpu) for p in pods]
    whole = ((np.stack(dev_delta) == MILLI).sum(axis=1).astype(np.int64) if pods
             else np.zeros(0, dtype=np.int64))
    costs = [move_cost(state, pod, at) for pod in pods]
    unit_index: dict[str, int] = {}
    units: list[Unit] = []
    unit_of = np.zeros(len(pods), dtype=np.int64)
    for i, pod in enumerate(pods):
        gang = groups.get(pod.key)
        name = gang or pod.key
        u = unit_index.get(name)
        if u is None:
            u = unit_index[name] = len(units)
            units.append(Unit(name=name, members=[], gang=gang, cost=0.0))
        units[u].members.append(i)
        units[u].cost += costs[i].gpu_hours
        unit_of[i] = u
    return DefragProblem(state=state, snapshot=snap, names=list(snap.names), free=free, pods_free=pods_free,
                         dev_free=table.dev_free.astype(np.int32), dev_total=table.dev_total.astype(np.int32),
                         schedulable=~snap.unschedulable, pods=pods, home=home, vec=vec, dev_delta=dev_delta,
                         whole_gpus=whole, costs=costs, unit_of=unit_of, units=units, standing=standing,
                         ledger=ledger, now=at)
