"""Which hosts to try first for a target: a lower bound on the moves each one needs, for all at once.

The bound for one host: take its movable units largest first (whole GPUs they free, then what
they free of the columns the host lacks; unit order on ties) and count pods until their room
covers the shortfall (every requested column short on the host, a pod slot, whole devices).
Computed for every candidate host in one pass over the (host, unit) groups with numpy, so the
planner can rank thousands of hosts per target, as `kubegpu defrag --for` and `why` both do.
"""

from __future__ import annotations

import numpy as np

from kubegpu.defrag.workstate import TargetSpec, WorkState

NOT_NEEDED = -(1 << 40)  # a shortfall that is always covered (slots or devices the target does not use)


def alive_mask(work: WorkState) -> np.ndarray:
    """bool[P]: candidates this plan has not moved yet."""
    alive = np.ones(len(work.problem.pods), dtype=bool)
    if work.moved:
        alive[np.fromiter(work.moved, dtype=np.int64, count=len(work.moved))] = False
    return alive


def movable_units(work: WorkState, forbidden: np.ndarray) -> np.ndarray:
    """bool[U]: units each of whose pods has room, by resources alone, on some node other than its
    own and outside `forbidden`. Necessary for a move (filters and budgets come later), so a unit
    that fails it can be left out of every host's count: no subset holding it can work now.

    Pods are grouped by shape (requests, whole GPUs), so the check is shapes x nodes, not pods x nodes.
    """
    prob = work.problem
    if not len(prob.pods):
        return np.ones(len(prob.units), dtype=bool)
    rows, inv = prob.pod_shapes()
    inv = inv.reshape(-1)
    open_ = ~forbidden & (work.pods_free >= 1)
    free, whole_free = work.free[open_], work.whole_free()[open_]
    nodes = np.flatnonzero(open_)
    vec, whole = rows[:, :-1], rows[:, -1]
    room = (((free[None, :, :] >= vec[:, None, :]) | (vec[:, None, :] == 0)).all(axis=2)
            & (whole_free[None, :] >= whole[:, None]))  # fitsRequest per shape and open node
    count = room.sum(axis=1)
    only = nodes[room.argmax(axis=1)] if len(nodes) else np.full(len(rows), -1)
    ok = (count[inv] >= 2) | ((count[inv] == 1) & (only[inv] != prob.home))
    stuck = np.bincount(prob.unit_of, weights=~ok, minlength=len(prob.units))
    return stuck == 0


def lower_bounds(work: WorkState, t: TargetSpec, hosts: np.ndarray,
                 movable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(int[H] fewest pods whose moves could make room on each host, 0 = none needed, -1 = not
    even all of them; int[H] the most whole GPUs one unit there frees). `movable` (bool[U], see
    `movable_units`) leaves out units that cannot move now."""
    prob = work.problem
    hosts = np.asarray(hosts, dtype=np.int64)
    n_hosts, n_units = len(hosts), max(len(prob.units), 1)
    short = np.where(t.vec > 0, t.vec - work.free[hosts], 0)  # only requested columns count (fitsRequest)
    short = np.maximum(short, 0)
    need_slot = (1 - work.pods_free[hosts]) if t.needs_slot else np.full(n_hosts, NOT_NEEDED)
    need_whole = (t.whole - work.whole_free()[hosts]) if t.whole else np.full(n_hosts, NOT_NEEDED)
    zero_covered = (short == 0).all(axis=1) & (need_slot <= 0) & (need_whole <= 0)

    pos = np.full(prob.n, -1, dtype=np.int64)
    pos[hosts] = np.arange(n_hosts)
    counted = alive_mask(work) & (pos[prob.home] >= 0)
    if movable is not None and len(prob.pods):
        counted &= movable[prob.unit_of]
    pods = np.flatnonzero(counted) if len(prob.pods) else np.zeros(0, np.int64)
    key = pos[prob.home[pods]] * n_units + prob.unit_of[pods]
    groups, inv = np.unique(key, return_inverse=True)
    g_host, g_unit = groups // n_units, groups % n_units
    g_vec = np.zeros((len(groups), short.shape[1]), dtype=np.int64)
    np.add.at(g_vec, inv, prob.vec[pods])
    g_slots = np.bincount(inv, minlength=len(groups)).astype(np.int64)
    g_whole = np.bincount(inv, weights=prob.whole_gpus[pods], minlength=len(groups)).astype(np.int64)
    unit_size = np.fromiter((len(u.members) for u in prob.units), dtype=np.int64, count=len(prob.units))
    g_pods = unit_size[g_unit] if len(groups) else np.zeros(0, dtype=np.int64)
    g_gain = (g_vec * (short[g_host] > 0)).sum(axis=1)

    biggest = np.zeros(n_hosts, dtype=np.int64)
    np.maximum.at(biggest, g_host, g_whole)
    order = np.lexsort((g_unit, -g_gain, -g_whole, g_host))
    g_host, g_vec, g_slots, g_whole, g_pods = (a[order] for a in (g_host, g_vec, g_slots, g_whole, g_pods))
    first = np.r_[True, g_host[1:] != g_host[:-1]] if len(groups) else np.zeros(0, dtype=bool)
    seg = np.cumsum(first) - 1
    starts = np.flatnonzero(first)

    def running(a: np.ndarray) -> np.ndarray:  # cumulative sum restarting at each host
        total = np.cumsum(a, axis=0)
        return total - (total[starts] - a[starts])[seg]

    covered = ((running(g_slots) >= need_slot[g_host]) & (running(g_whole) >= need_whole[g_host])
               & (running(g_vec) >= short[g_host]).all(axis=1))
    bound = np.full(n_hosts, -1, dtype=np.int64)
    rows = np.flatnonzero(covered)
    hit_hosts, at = np.unique(g_host[rows], return_index=True)
    bound[hit_hosts] = running(g_pods)[rows[at]]
    bound[zero_covered] = 0
    return bound, biggest


def ranked_hosts(work: WorkState, t: TargetSpec, hosts: np.ndarray,
                 movable: np.ndarray | None = None) -> list[tuple[int, int]]:
    """(bound, host) of the hosts that moves can free, fewest moves first; among equal bounds, hosts
    whose units are small first (small pods find destinations), then node order."""
    hosts = np.asarray(hosts, dtype=np.int64)
    bound, biggest = lower_bounds(work, t, hosts, movable)
    keep = bound > 0
    hosts, bound, biggest = hosts[keep], bound[keep], biggest[keep]
    order = np.lexsort((hosts, biggest, bound))
    return list(zip(bound[order].tolist(), hosts[order].tolist()))
