"""The fast planner: per target, the host node that needs the fewest (then cheapest) moves.

For each target (a pending pod, a gang member, a k-GPU probe) the hosts are ranked by a lower
bound on the moves they need (the fewest units whose room covers the shortfall); hosts are
tried in that order and the search stops once no remaining host can beat the best plan found.
On a host, subsets of its movable units are tried by size, cheapest first; a subset works when
every member finds a destination elsewhere and the PDB budgets allow it. Node emptying drains
the nodes with the fewest movable pods first. Runs in well under a second per target on a
thousand nodes: the per-node work is numpy, the Python loops are over a host's few units.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from kubegpu.defrag.hostrank import alive_mask, movable_units, ranked_hosts
from kubegpu.defrag.workstate import DestScore, TargetSpec, WorkState

MAX_SUBSET = 4          # units evicted from one host for one target
TRIES_PER_SIZE = 6      # covering subsets tried per size, cheapest first
MAX_HOSTS = 48          # hosts examined per target beyond the first that works
MAX_HOSTS_TRIED = 2000  # hosts examined per target at all (a bound for hopeless targets)
CHAIN_HOSTS = 24        # hosts examined when making room for a pod that is itself being moved


@dataclass
class Budget:
    max_moves: int | None = None
    max_cost: float | None = None

    def allows(self, work: WorkState) -> bool:
        if self.max_moves is not None and work.moves() > self.max_moves:
            return False
        return self.max_cost is None or work.cost() <= self.max_cost + 1e-9


def _units_on(work: WorkState, n: int) -> list[int]:
    prob = work.problem
    return sorted({int(prob.unit_of[p]) for p in prob.on_node[n] if p not in work.moved})


class _Shortfall:
    """What node n lacks for target t, over the few columns that matter, in plain ints (hot loop)."""

    def __init__(self, work: WorkState, t: TargetSpec, n: int) -> None:
        short = np.where(t.vec > 0, t.vec - work.free[n], 0)  # only requested columns count (fitsRequest)
        self.cols = np.flatnonzero(short > 0)
        self.need = [int(x) for x in short[self.cols]]
        self.slots = (1 - int(work.pods_free[n])) if t.needs_slot else -1 << 30
        self.whole = (t.whole - work.whole_free_at(n)) if t.whole else -1 << 30

    def room(self, work: WorkState, u: int, n: int) -> tuple[tuple[int, ...], int, int]:
        vec, slots, whole = work.problem.room(u, n)
        return tuple(int(x) for x in vec[self.cols]), slots, whole

    def covered(self, acc: tuple[tuple[int, ...], int, int]) -> bool:
        vec, slots, whole = acc
        return slots >= self.slots and whole >= self.whole and all(a >= b for a, b in zip(vec, self.need))

    @staticmethod
    def add(a: tuple[tuple[int, ...], int, int], b: tuple[tuple[int, ...], int, int]):
        return tuple(x + y for x, y in zip(a[0], b[0])), a[1] + b[1], a[2] + b[2]

    def zero(self) -> tuple[tuple[int, ...], int, int]:
        return tuple(0 for _ in self.need), 0, 0


def _greedy_subset(units: list[int], rooms: dict, cost: dict, size: int) -> tuple[int, ...] | None:
    """`size` units that free the most (cheapest first among equals): for hosts with many small pods."""
    ranked = sorted(units, key=lambda u: (-rooms[u][2], -sum(rooms[u][0]), cost[u], u))
    return tuple(sorted(ranked[:size])) if len(ranked) >= size else None


def _try_host(work: WorkState, t: TargetSpec, n: int, units: list[int], score: DestScore,
              forbidden: np.ndarray, best_moves: float) -> WorkState | None:
    """The cheapest way (fewest pods, then GPU-hours) to make room for t on n, or None."""
    prob = work.problem
    sf = _Shortfall(work, t, n)
    rooms = {u: sf.room(work, u, n) for u in units}
    # a unit that frees nothing the host lacks only adds moves to any subset: leave it out
    units = [u for u in units if any(x > 0 for x in rooms[u][0]) or (sf.slots > 0 and rooms[u][1] > 0)
             or (sf.whole > 0 and rooms[u][2] > 0)]
    cost = {u: prob.units[u].cost for u in units}
    pods_of = {u: len(prob.units[u].members) for u in units}
    best: WorkState | None = None
    greedy = sorted(units, key=lambda u: (-rooms[u][2], -sum(rooms[u][0])))
    first, acc = len(units) + 1, sf.zero()
    for i, u in enumerate(greedy):  # fewest units that can cover: fewer can never do
        acc = sf.add(acc, rooms[u])
        if sf.covered(acc):
            first = i + 1
            break
    for size in range(first, min(len(units), first + MAX_SUBSET) + 1):
        covering = []
        combos = (itertools.combinations(units, size) if size <= MAX_SUBSET and math.comb(len(units), size) <= 3000
                  else [_greedy_subset(units, rooms, cost, size)])
        for combo in combos:
            if combo is None:
                continue
            acc = sf.zero()
            for u in combo:
                acc = sf.add(acc, rooms[u])
            if sf.covered(acc):
                covering.append((sum(pods_of[u] for u in combo), sum(cost[u] for u in combo), combo))
        covering.sort(key=lambda c: (c[0], c[1], c[2]))
        for pods, _, combo in covering[:TRIES_PER_SIZE]:
            if work.moves() + pods >= best_moves or (best is not None and pods >= best.moves() - work.moves()):
                break
            trial = work.copy()
            forbid = forbidden.copy()
            forbid[n] = True
            if all(trial.move_unit(u, forbid, score) for u in combo):
                best = trial
                break
        if best is not None:
            break
    return best


def _screen(work: WorkState, t: TargetSpec, candidates: np.ndarray, keep: int) -> np.ndarray:
    """At most `keep` hosts worth an exact lower bound, chosen with array operations.

    A host is possible only if its free room plus everything movable on it covers the target;
    among those, the ones short of the least (relative to the request) come first.
    """
    if len(candidates) <= keep:
        return candidates
    prob = work.problem
    alive = alive_mask(work)
    reclaim = np.zeros_like(work.free)
    if alive.any():
        np.add.at(reclaim, prob.home[alive], prob.vec[alive])
    free = work.free[candidates]
    req = t.vec > 0
    possible = (free[:, req] + reclaim[candidates][:, req] >= t.vec[req]).all(axis=1)
    short = (np.maximum(t.vec - free, 0) / (t.vec + 1)).sum(axis=1)
    if t.whole:
        short = short + np.maximum(t.whole - work.whole_free()[candidates], 0)
    order = np.lexsort((candidates, short))
    order = order[possible[order]]
    return candidates[order[:keep]]


def make_room(work: WorkState, t: TargetSpec, score: DestScore, forbidden: np.ndarray,
              budget: Budget, *, max_hosts: int = MAX_HOSTS_TRIED) -> WorkState | None:
    """Make room for one target; returns the new state with the target hosted, or None."""
    fits = work.target_fits(t) & ~forbidden
    if fits.any():
        out = work.copy()
        idx = np.flatnonzero(fits)
        n = int(idx[np.argmin(out.whole_free()[idx] * 10_000 + idx)]) if t.whole else int(
            idx[np.lexsort((idx, out.free[idx].sum(axis=1)))[0]])
        out.host(t, n)
        return out
    allowed = t.mask & ~forbidden
    req = t.vec > 0
    if (work.free[allowed][:, req].sum(axis=0) < t.vec[req]).any():
        # moves only relocate free room (a moved pod takes its requests along), so room that the
        # allowed nodes lack in total cannot be made on any one of them
        return None
    candidates = _screen(work, t, np.flatnonzero(allowed), 4 * max_hosts)
    movable = movable_units(work, forbidden)
    ranked = ranked_hosts(work, t, candidates, movable)
    best: WorkState | None = None
    best_moves = float("inf")
    tried = 0
    for lb, n in ranked:
        if work.moves() + lb >= best_moves or (tried >= MAX_HOSTS and best is not None) or tried >= max_hosts:
            break
        tried += 1
        units = [u for u in _units_on(work, n) if movable[u]]
        trial = _try_host(work, t, n, units, score, forbidden, best_moves)
        if trial is None or not budget.allows(trial):
            continue
        if trial.moves() < best_moves or (trial.moves() == best_moves and best is not None
                                          and trial.cost() < best.cost()):
            trial.host(t, n)
            best, best_moves = trial, trial.moves()
    return best


def plan_targets(work: WorkState, targets: list[TargetSpec], score: DestScore, budget: Budget,
                 forbidden: np.ndarray | None = None, *,
                 max_hosts: int = MAX_HOSTS_TRIED) -> tuple[WorkState, list[str]]:
    """Make room for every target in turn (largest first); returns the state and unmet targets."""
    forbidden = np.zeros(work.problem.n, dtype=bool) if forbidden is None else forbidden
    unmet: list[str] = []
    for t in sorted(targets, key=lambda t: (-t.whole, -int(t.vec.sum()))):
        nxt = make_room(work, t, score, forbidden, budget, max_hosts=max_hosts)
        if nxt is None:
            unmet.append(t.label)
            continue
        work = nxt
    return work, unmet


def move_with_chain(work: WorkState, u: int, forbidden: np.ndarray, score: DestScore,
                    budget: Budget) -> WorkState | None:
    """Move unit u; when a single pod finds no room anywhere, first make room for it elsewhere (one level)."""
    trial = work.copy()
    if trial.move_unit(u, forbidden, score):
        return trial
    prob = work.problem
    members = prob.units[u].members
    if len(members) != 1 or any(p in work.moved for p in members):
        return None
    p = members[0]
    pod = prob.pods[p]
    if work.ledger.blocked([pod]) is not None:
        return None
    home = np.zeros(prob.n, dtype=bool)
    home[int(prob.home[p])] = True
    t = TargetSpec(label=pod.key, vec=prob.vec[p].copy(), mask=prob.dest_mask(p) & ~forbidden)
    room = make_room(work, t, score, forbidden | home, budget, max_hosts=CHAIN_HOSTS)
    if room is None:
        return None
    _, n = room.hosted.pop()
    room.free[n] += t.vec
    room.pods_free[n] += 1
    room.evict_member(p)
    room.place_member(p, n)
    room.ledger.take([pod])
    room.order.append(u)
    return room


def empty_nodes(work: WorkState, count: int, candidates: np.ndarray, budget: Budget) -> tuple[WorkState, list[int]]:
    """Drain `count` of the candidate nodes, fewest movable pods (then cheapest) first."""
    prob = work.problem
    order = []
    for n in np.flatnonzero(candidates).tolist():
        units = _units_on(work, n)
        pods = sum(len(prob.units[u].members) for u in units)
        order.append((pods, sum(prob.units[u].cost for u in units), n, units))
    order.sort(key=lambda r: (r[0], r[1], r[2]))
    drained: list[int] = []
    forbidden = np.zeros(prob.n, dtype=bool)
    avoid = candidates.astype(np.int64)  # prefer to land on nodes we will not drain
    score = DestScore(avoid=avoid)
    for _, _, n, units in order:
        if len(drained) >= count:
            break
        if any(m == n for m in work.moved.values()):
            continue  # an earlier drain put pods here
        units = _units_on(work, n)
        forbid = forbidden.copy()
        forbid[n] = True
        trial: WorkState | None = work
        for u in sorted(units, key=lambda u: -int(prob.whole_gpus[prob.units[u].members].sum())):
            trial = move_with_chain(trial, u, forbid, score, budget) if trial is not None else None
        if trial is not None and budget.allows(trial):
            work = trial
            forbidden[n] = True
            drained.append(n)
    return work, drained
