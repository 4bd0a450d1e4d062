"""How the modelled rebalancer plans one move set: every host ranked at once, destinations by tightest fit.

As `kubegpu defrag --for` does (defrag/hostrank.py, heuristic.py, workstate.DestScore): each candidate
host gets the fewest movable pods whose room covers what it lacks for the pending pod (largest first,
cheapest on ties), for all hosts in one numpy pass over the running pods grouped by node; hosts are
tried fewest moves first, then least work lost; a host works when every moved pod gets a destination
elsewhere. A destination is the tightest fit (fewest whole GPUs left, then least GPU free, then node
order) so big holes stay big, with at most `per_node` reservations on one node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.placement.state import PlacementState, default_devices
from kubegpu.placement.task import Placement, Task

MAX_HOSTS_TRIED = 48   # hosts examined per plan beyond which it gives up (defrag's MAX_HOSTS)


@dataclass(frozen=True)
class PodTable:
    """The running pods of single-pod jobs, one row each (columns for the host ranking)."""

    job: np.ndarray        # job id
    node: np.ndarray       # node slot
    gpu: np.ndarray        # milli-GPU held (all devices)
    cpu: np.ndarray        # millicores
    mem: np.ndarray        # bytes
    prio: np.ndarray       # priority value
    movable: np.ndarray    # bool: defrag would move it (controller-owned, safe to evict, no local storage)
    cost: np.ndarray       # GPU-seconds lost if evicted now

    @classmethod
    def build(cls, rows: list[tuple[int, int, int, int, int, int, bool, float]]) -> "PodTable":
        cols = list(zip(*rows)) if rows else [()] * 8
        as_int = [np.asarray(c, dtype=np.int64) for c in cols[:6]]
        return cls(*as_int, movable=np.asarray(cols[6], dtype=bool), cost=np.asarray(cols[7], dtype=float))


@dataclass(frozen=True)
class HostPlan:
    hosts: list[int]                      # the nodes cleared, one per pod that needed room
    moves: list[tuple[int, Placement]]   # (moved job id, its reserved destination), in eviction order
    cost: float                           # GPU-seconds lost


def shortfall(state: PlacementState, task: Task) -> np.ndarray:
    """int64[n, 4]: what each node lacks for `task` (milli-GPU, millicores, bytes, pod slots); <= 0 covered.

    GPUs: a whole-GPU task needs `num_gpu` fully free devices, so the lack is counted in whole devices
    (x 1000); a shared task needs `gpu_milli` on one device, counted as total milli-GPU (a lower bound).
    """
    if task.gpu_milli >= 1000:
        whole = ((state.dev_free >= 1000) & (state.dev_total > 0)).sum(axis=1)
        gpu = (task.num_gpu - whole) * 1000
    elif task.wants_gpu:
        gpu = task.gpu_milli - state.dev_free.max(axis=1, initial=0)
    else:
        gpu = np.full(state.n_nodes, -1, dtype=np.int64)
    return np.stack([gpu, task.cpu_milli - state.cpu_free, task.mem_bytes - state.mem_free,
                     1 - state.pods_free], axis=1).astype(np.int64)


def rank_hosts(state: PlacementState, task: Task, hosts: np.ndarray, pods: PodTable,
               eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Hosts (among bool[n] `hosts`) that some `eligible` pods of theirs can clear, ordered by (moves, cost,
    node): (host, moves, cost, the victims' rows in `pods` per host). No loop over pods or nodes."""
    lack = shortfall(state, task)
    sel = np.flatnonzero(eligible & hosts[pods.node])
    if sel.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), []
    order = sel[np.lexsort((pods.cost[sel], -pods.gpu[sel], pods.node[sel]))]
    node = pods.node[order]
    new_group = np.r_[True, node[1:] != node[:-1]]
    starts = np.flatnonzero(new_group)
    group = np.cumsum(new_group) - 1

    def in_group_cumsum(x: np.ndarray) -> np.ndarray:
        c = np.cumsum(x)
        return c - np.r_[0, c][starts][group]

    freed = np.stack([in_group_cumsum(pods.gpu[order]), in_group_cumsum(pods.cpu[order]),
                      in_group_cumsum(pods.mem[order]), np.arange(order.size) - starts[group] + 1], axis=1)
    covered = np.flatnonzero((freed >= lack[node]).all(axis=1))
    groups, first = np.unique(group[covered], return_index=True)
    last = covered[first]                               # the row that completes each host's set
    moves = last - starts[groups] + 1
    cost = in_group_cumsum(pods.cost[order])[last]
    host = node[last]
    rank = np.lexsort((host, cost, moves))
    victims = [order[starts[g]:r + 1] for g, r in zip(groups[rank].tolist(), last[rank].tolist())]
    return host[rank], moves[rank], cost[rank], victims


def tightest_destination(state: PlacementState, task: Task, ok: np.ndarray) -> Placement | None:
    """defrag's DestScore without a protected size: fewest whole GPUs left, then least GPU free, then node."""
    idx = np.flatnonzero(ok & state.fit_mask(task))
    if idx.size == 0:
        return None
    whole = ((state.dev_free[idx] >= 1000) & (state.dev_total[idx] > 0)).sum(axis=1)
    need = task.num_gpu if task.gpu_milli >= 1000 else 0
    gpu_free = state.dev_free[idx].sum(axis=1)
    node = int(idx[np.lexsort((idx, gpu_free, whole - need))[0]])
    return Placement(node, default_devices(state.dev_free[node], task))
