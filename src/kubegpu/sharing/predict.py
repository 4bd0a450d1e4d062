"""The predicted effect of time-slicing a pool: replay the cluster's own pods with the placement model.

The replay, on a copy of the cluster's placement state (placement.PlacementState):
1. choose the fewest GPU nodes of the pool that hold every candidate at `replicas` per GPU,
   preferring nodes whose GPUs candidates already hold (time-slicing applies to a whole node);
2. take every candidate off its GPU and every other GPU pod off the shared nodes;
3. place the candidates on the shared nodes, each taking 1/replicas of a device (pending
   candidates that the pool's nodes admit included), then the other pods taken off, as whole GPUs, on the pool's unshared
   nodes (largest first), with the placement policy (`bestfit`: packs, as the device plugin's
   replicas can only be counted, not steered);
4. measure the pool's unshared nodes: GPUs entirely free for whole-GPU work and stranded GPUs
   (frag's stranded_for_demand), then place the cluster's pending GPU pods (largest first) on
   nodes their nodeSelector, node affinity and tolerations admit, shared nodes excluded, and count
   those that fit.
The same pending pods are placed the same way on today's state for the "before" figure. A
what-if of capacity, not a schedule: topology spread and pod affinity are not replayed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.fragmentation.capacity import cpu_by_size
from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement, cluster_tasks, pod_task
from kubegpu.fragmentation.report import demand_sizes, stranded_for
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.nodetable import NodeTable
from kubegpu.scheduling.filters.nodeaffinity import node_affinity_mask
from kubegpu.scheduling.filters.tainttoleration import first_untolerated
from kubegpu.scheduling.fit import whole_free_devices
from kubegpu.placement.registry import make_policy
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import MILLI, Placement, Task

POLICY = "bestfit"


@dataclass(frozen=True)
class Replay:
    shared_nodes: list[str]
    candidates_placed: list[str]
    candidates_unplaced: list[str]
    displaced_unplaced: list[str]
    moved: int                       # running pods that would restart elsewhere
    whole_free_before: int
    whole_free_after: int
    stranded_before: float
    stranded_after: float            # on the pool's unshared nodes
    shared_free_gpus: float          # free capacity left on the shared nodes, in GPUs (for more candidates only)
    fit_before: list[str]
    fit_after: list[str]
    candidate_gpus_before: float     # GPUs the candidates hold today
    candidate_gpus_after: float      # devices they occupy once shared


def _devices(table: NodeTable, pod: Pod) -> tuple[int, ...]:
    used = table.pod_devices.get(pod.key)
    return tuple(int(d) for d in np.flatnonzero(used)) if used is not None else ()


def _take_off(state: PlacementState, table: NodeTable, index: dict[str, int], cluster: ClusterState, pod: Pod) -> None:
    task = pod_task(cluster, pod)
    state.remove(task, Placement(index[pod.spec.node_name], _devices(table, pod) if task.wants_gpu else ()))


def _place(state: PlacementState, task: Task, allowed: np.ndarray, policy) -> bool:
    feasible = state.fit_mask(task) & allowed
    choice = policy.choose(state, task, feasible)
    if choice is None:
        return False
    state.place(task, choice)
    return True


def _place_pending(state: PlacementState, cluster: ClusterState, pods: list[Pod], allowed: dict[str, np.ndarray],
                   exclude: np.ndarray, policy) -> list[str]:
    placed = []
    for pod in pods:
        if _place(state, pod_task(cluster, pod), allowed[pod.key] & ~exclude, policy):
            placed.append(pod.key)
    return placed


def _admitting_nodes(table: NodeTable, pod: Pod) -> np.ndarray:
    """Nodes the pod's nodeSelector, required node affinity and tolerations admit (the filters'
    own rules; taints evaluated once per distinct taint set, not per node)."""
    sets, group = table.taint_groups
    tolerated = np.asarray([first_untolerated(taints, pod.spec.tolerations) is None for taints in sets], dtype=bool)
    return node_affinity_mask(pod, table.labels) & tolerated[group]


def _pending_order(cluster: ClusterState, pods: list[Pod]) -> list[Pod]:
    def key(p: Pod):
        d = cluster.gpu_demand(p)
        return (-d.total_milli, -cluster.priority_of(p), p.key)
    return sorted(pods, key=key)


def replay_sharing(cluster: ClusterState, pool_nodes: list[str], candidates: list[Pod], replicas: int) -> Replay:
    """Predict time-slicing `replicas` per GPU on (part of) `pool_nodes` for `candidates`."""
    table = NodeTable.from_cluster(cluster)
    index = table.rows_of
    before = cluster_placement(cluster, table)
    pool = np.zeros(table.n, dtype=bool)
    pool[[index[n] for n in pool_nodes if n in index]] = True
    pool &= table.gpu_count > 0
    cand_keys = {p.key for p in candidates}
    bound = [p for p in candidates if p.spec.node_name in index and pool[index[p.spec.node_name]]]
    admits = {p.key: _admitting_nodes(table, p) for p in cluster.unscheduled_pods}
    pending_cands = [p for p in candidates if p.is_unscheduled and (admits[p.key] & pool).any()]
    cands = bound + pending_cands
    pending = _pending_order(cluster, [p for p in cluster.unscheduled_pods if cluster.gpu_demand(p).is_gpu
                                       and p.key not in cand_keys])
    allowed = {p.key: admits[p.key] for p in pending + pending_cands}
    tasks = cluster_tasks(cluster)
    sizes, mix = demand_sizes(tasks), cluster_mix(cluster)
    cpu = cpu_by_size(mix, sizes=sorted(set(sizes) | {1, 2, 4, 8}))
    pool_rows = np.flatnonzero(pool)
    pool_state = before.rows(pool_rows)
    whole_before = int(whole_free_devices(pool_state.dev_free, pool_state.dev_total).sum())
    stranded_before = stranded_for(pool_state, sizes, cpu).gpus
    fit_before = _place_pending(before.copy(), cluster, pending, allowed, np.zeros(table.n, bool), make_policy(POLICY))

    # GPU pods per pool node: candidates' GPUs vs everyone else's (who would have to move off)
    cand_gpu = np.zeros(table.n)
    other_gpu = np.zeros(table.n)
    others_on: dict[int, list[Pod]] = {}
    for node, pods in cluster.pods_by_node.items():
        i = index.get(node)
        if i is None or not pool[i]:
            continue
        for p in pods:
            d = cluster.gpu_demand(p, node)
            if p.is_terminal or not d.is_gpu:
                continue
            if p.key in cand_keys:
                cand_gpu[i] += d.total_milli / MILLI
            else:
                other_gpu[i] += d.total_milli / MILLI
                others_on.setdefault(i, []).append(p)
    order = sorted(pool_rows.tolist(), key=lambda i: (-(cand_gpu[i] - other_gpu[i]), other_gpu[i], table.names[i]))
    slots_needed = len(cands)
    result = None
    for count in range(1, len(order) + 1):
        shared = order[:count]
        if slots_needed and int(table.gpu_count[shared].sum()) * replicas < slots_needed and count < len(order):
            continue
        result = _replay_with(cluster, table, index, before, pool, shared, bound, cands, others_on, replicas,
                              pending, allowed, sizes, cpu)
        if not result.candidates_unplaced or count == len(order):
            break
    if result is None or not cands:
        result = _replay_with(cluster, table, index, before, pool, [], bound, [], others_on, replicas, pending,
                              allowed, sizes, cpu)
    return Replay(**{**result.__dict__, "whole_free_before": whole_before, "stranded_before": stranded_before,
                     "fit_before": fit_before})


def _replay_with(cluster, table, index, before, pool, shared_rows, bound, cands, others_on, replicas, pending,
                 allowed, sizes, cpu) -> Replay:
    state = before.copy()
    shared = np.zeros(table.n, dtype=bool)
    shared[shared_rows] = True
    displaced = [p for i in shared_rows for p in others_on.get(i, [])]
    for p in bound + displaced:
        _take_off(state, table, index, cluster, p)
    policy = make_policy(POLICY)
    share = MILLI // replicas
    placed, unplaced = [], []
    for p in cands:
        t = pod_task(cluster, p)
        sliced = Task(cpu_milli=t.cpu_milli, mem_bytes=t.mem_bytes, num_gpu=1, gpu_milli=share, models=t.models,
                      name=t.name)
        (placed if _place(state, sliced, shared, policy) else unplaced).append(p.key)
    lost = []
    for p in sorted(displaced, key=lambda p: (-pod_task(cluster, p).total_gpu_milli, p.key)):
        if not _place(state, pod_task(cluster, p), pool & ~shared, policy):
            lost.append(p.key)
    unshared_rows = np.flatnonzero(pool & ~shared)
    sub = state.rows(unshared_rows)
    whole_after = int(whole_free_devices(sub.dev_free, sub.dev_total).sum())
    stranded_after = stranded_for(sub, sizes, cpu).gpus if unshared_rows.size else 0.0
    shared_free = float(state.dev_free[shared].sum()) / MILLI
    fit_after = _place_pending(state, cluster, pending, allowed, shared, policy)
    used_devices = int(((state.dev_total[shared] - state.dev_free[shared]) > 0).sum()) if shared.any() else 0
    return Replay(shared_nodes=[table.names[i] for i in shared_rows], candidates_placed=placed,
                  candidates_unplaced=unplaced, displaced_unplaced=lost,
                  moved=len([p for p in bound if p.key in placed and not shared[index[p.spec.node_name]]])
                  + len(displaced),
                  whole_free_before=0, whole_free_after=whole_after, stranded_before=0.0,
                  stranded_after=round(stranded_after, 2), shared_free_gpus=round(shared_free, 2),
                  fit_before=[], fit_after=fit_after,
                  candidate_gpus_before=round(sum(cluster.gpu_demand(p).total_milli for p in bound) / MILLI, 3),
                  candidate_gpus_after=used_devices)
