"""A what-if copy of the problem's free resources that a planner moves pods around in.

Moving a unit evicts every member (their room comes back on their nodes), then places each
member on a destination; a failed placement rolls the whole unit back. Destinations must pass
the scheduling core's non-resource filters (`DefragProblem.dest_mask`) and have room by the
scheduler's own arithmetic (every requested resource column, the pod count) and, for whole-GPU
pods, enough entirely free devices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubegpu.defrag.budget import BudgetLedger
from kubegpu.defrag.problem import DefragProblem
from kubegpu.model.gpu import MILLI, GpuDemand
from kubegpu.model.nodetable import place_on_devices
from kubegpu.scheduling.fit import device_room, fits_requests, whole_free_devices


@dataclass
class TargetSpec:
    """Something the plan must make room for: a pending pod, or a k-GPU probe (fits_by_size)."""

    label: str
    vec: np.ndarray          # int64[R] scheduler requests (probes: CPU only)
    mask: np.ndarray         # bool[n] nodes it may use, room aside
    whole: int = 0           # entirely free devices it needs (probes); 0 = scheduler units only
    needs_slot: bool = True  # counts against the node's pod limit


@dataclass
class WorkState:
    problem: DefragProblem
    free: np.ndarray
    pods_free: np.ndarray
    dev_free: np.ndarray
    ledger: BudgetLedger
    moved: dict[int, int] = field(default_factory=dict)       # candidate -> destination node
    order: list[int] = field(default_factory=list)             # units in the order they move
    hosted: list[tuple[str, int]] = field(default_factory=list)  # (target label, node)
    banned: set[tuple[int, int]] = field(default_factory=set)   # (candidate, node) refused by the core

    @classmethod
    def start(cls, problem: DefragProblem) -> "WorkState":
        return cls(problem, problem.free.copy(), problem.pods_free.copy(), problem.dev_free.copy(),
                   problem.ledger.copy())

    def copy(self) -> "WorkState":
        return WorkState(self.problem, self.free.copy(), self.pods_free.copy(), self.dev_free.copy(),
                         self.ledger.copy(), dict(self.moved), list(self.order), list(self.hosted), self.banned)

    # ------------------------------------------------------------------ views
    def whole_free(self) -> np.ndarray:
        return self.problem.whole_free(self.dev_free)

    def whole_free_at(self, n: int) -> int:
        return int(whole_free_devices(self.dev_free[n:n + 1], self.problem.dev_total[n:n + 1])[0])

    def moves(self) -> int:
        return len(self.moved)

    def cost(self) -> float:
        return sum(self.problem.units[u].cost for u in self.order)

    def target_fits(self, t: TargetSpec) -> np.ndarray:
        """bool[n]: nodes where the target fits now."""
        ok = t.mask & fits_requests(self.free, t.vec, self.pods_free if t.needs_slot else None)
        if t.whole:
            ok &= self.whole_free() >= t.whole
        return ok

    def dest_ok(self, p: int, forbidden: np.ndarray) -> np.ndarray:
        """bool[n]: where candidate p's replacement fits now."""
        ok = self.problem.dest_mask(p) & ~forbidden
        idx = np.flatnonzero(ok)
        ok[idx] = self.room(p, idx)
        for q, n in self.banned:
            if q == p:
                ok[n] = False
        return ok

    def room(self, p: int, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """bool over `rows`: nodes with room for candidate p now (the scheduler's arithmetic, then devices)."""
        prob = self.problem
        if isinstance(rows, slice):
            rows = np.arange(*rows.indices(len(self.free)))
        ok = fits_requests(self.free[rows], prob.vec[p], self.pods_free[rows])
        whole, milli = int(prob.whole_gpus[p]), prob.shared_milli(p)
        if whole or milli:  # devices only where the requests fit (few rows)
            sel = np.flatnonzero(ok)
            at = rows[sel]
            ok[sel] = device_room(self.dev_free[at], prob.dev_total[at], whole=whole, milli=milli)
        return ok

    def room_at(self, p: int, m: int) -> bool:
        """`room` on node m alone (the same rule on a one-row view)."""
        return bool(self.room(p, slice(m, m + 1))[0])

    # ------------------------------------------------------------------ changes
    def evict_member(self, p: int) -> None:
        prob = self.problem
        h = int(prob.home[p])
        self.free[h] += prob.vec[p]
        self.pods_free[h] += 1
        self.dev_free[h] += prob.dev_delta[p]

    def place_member(self, p: int, m: int) -> None:
        prob = self.problem
        self.free[m] -= prob.vec[p]
        self.pods_free[m] -= 1
        delta = prob.dev_delta[p]
        if delta.any():
            total = prob.dev_total[m]
            used = total - self.dev_free[m]
            held = delta[delta > 0]
            demand = GpuDemand(num_gpu=len(held), gpu_milli=int(held.max()))
            place_on_devices(used, total, demand)
            self.dev_free[m] = total - used
        self.moved[p] = m

    def host(self, t: TargetSpec, n: int) -> None:
        """Reserve the target's room on node n (it is expected to land there)."""
        self.free[n] -= t.vec
        if t.needs_slot:
            self.pods_free[n] -= 1
        if t.whole:
            row = self.dev_free[n]
            idle = np.flatnonzero((row == MILLI) & (self.problem.dev_total[n] == MILLI))[: t.whole]
            row[idle] = 0
        self.hosted.append((t.label, n))

    def move_unit(self, u: int, forbidden: np.ndarray, score: "DestScore") -> bool:
        """Evict every member of unit u and place each one; False (and no change) when it cannot."""
        prob = self.problem
        members = prob.units[u].members
        if any(p in self.moved for p in members):
            return False
        pods = [prob.pods[p] for p in members]
        if self.ledger.blocked(pods) is not None:
            return False
        saved = (self.free.copy(), self.pods_free.copy(), self.dev_free.copy())
        for p in members:
            self.evict_member(p)
        order = sorted(members, key=lambda p: (-int(prob.whole_gpus[p]), -int(prob.vec[p].sum())))
        placed: list[int] = []
        for p in order:
            ok = self.dest_ok(p, forbidden)
            if not ok.any():
                self.free, self.pods_free, self.dev_free = saved
                for q in placed:
                    del self.moved[q]
                return False
            m = score.pick(self, p, ok)
            self.place_member(p, m)
            placed.append(p)
        self.ledger.take(pods)
        self.order.append(u)
        return True


class DestScore:
    """Where a moved pod goes: never where it destroys room the plan protects, then tightest fit.

    `protect_k` (size goals): prefer nodes whose count of k-GPU slots does not drop. Tightest
    fit (fewest whole devices left) keeps big holes big, the opposite of what fragments.
    """

    def __init__(self, protect_k: int | None = None, avoid: np.ndarray | None = None) -> None:
        self.protect_k = protect_k
        self.avoid = avoid

    def pick(self, work: WorkState, p: int, ok: np.ndarray) -> int:
        prob = work.problem
        idx = np.flatnonzero(ok)
        wf = work.whole_free()[idx]
        need = int(prob.whole_gpus[p])
        left = wf - need
        penalty = np.zeros(len(idx), dtype=np.int64)
        if self.protect_k and need:
            penalty += (wf // self.protect_k) - (left // self.protect_k)
        if self.avoid is not None:
            penalty += self.avoid[idx].astype(np.int64)
        gpu_free = work.dev_free[idx].sum(axis=1)
        key = np.lexsort((idx, gpu_free, left, penalty))
        return int(idx[key[0]])
