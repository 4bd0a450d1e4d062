"""`kubegpu rebalance` modelled as a controller in the event simulation (scenario key `rebalancer`).

Every `interval`, pending single-pod GPU jobs that have waited `min-pending-age` get room, smallest plan
first, at most `max-moves` moves per round: a plan frees one node for the pending pod by moving
movable pods off it to other nodes. A pod is movable as `kubegpu defrag` decides it here: one pod
(gangs stay), owned by a controller, safe to evict, no local storage, priority not above the pending
pod's. The destination is reserved before the eviction (the move is placed at once; the model has no
scheduler race), the moved pod loses its work since the last checkpoint plus its restart overhead,
and the pending pod is placed right after. Simplifications, named: pending gangs are not served,
plans free one node (the fewest moves on the node closest to fitting among the 8 closest), and
`max-moves` is the only budget modelled.

Settings (flag names of `kubegpu rebalance`): `enabled`, `interval` (5m), `min-pending-age` (10m),
`max-moves` (6). The summary gains `rebalance: {rounds, moves, gpu_hours_lost}` and every run with a
`rebalancer` key samples `stranded_gpus` (free GPUs on nodes where a pod of the workload's largest
whole-GPU size does not fit) for the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubegpu.errors import InputError
from kubegpu.scheduling.placement.task import Placement
from kubegpu.simulate.jobstate import PENDING, RUNNING
from kubegpu.simulate.scenario import seconds
from kubegpu.simulate.workload import Job

CANDIDATE_NODES = 8
KEYS = ("enabled", "interval", "min-pending-age", "max-moves")


@dataclass(frozen=True)
class RebalancerSettings:
    enabled: bool = False
    interval_s: float = 300.0
    min_pending_age_s: float = 600.0
    max_moves: int = 6

    @classmethod
    def from_spec(cls, raw: dict[str, Any], *, where: str) -> "RebalancerSettings":
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise InputError(f"unknown rebalancer setting {unknown[0]!r} (known: {', '.join(KEYS)})", where=where)
        moves = raw.get("max-moves", 6)
        if not isinstance(moves, int) or isinstance(moves, bool) or moves < 0:
            raise InputError("rebalancer max-moves must be a whole number >= 0", where=where)
        interval = seconds(raw.get("interval", "5m"), where=where, field="rebalancer.interval")
        if interval <= 0:
            raise InputError("rebalancer interval must be longer than 0s", where=where)
        return cls(enabled=bool(raw.get("enabled", False)), interval_s=interval, max_moves=moves,
                   min_pending_age_s=seconds(raw.get("min-pending-age", "10m"), where=where,
                                             field="rebalancer.min-pending-age"))


def _movable(victim: Job, run, beneficiary: Job) -> bool:
    return (run.status == RUNNING and victim.pods == 1 and victim.controller and victim.safe_to_evict
            and not victim.local_storage and victim.priority.value <= beneficiary.priority.value)


class SimRebalancer:
    def __init__(self, engine, settings: RebalancerSettings) -> None:
        self.engine = engine
        self.cfg = settings
        self.rounds = 0
        self.moves = 0
        self.lost_gpu_s = 0.0

    def run_once(self, now: float) -> None:
        e = self.engine
        waiting = [j for j in e.pending_jobs() if e.jobs[j].pods == 1 and e.jobs[j].task.wants_gpu
                   and now - e.runs[j].queued_at >= self.cfg.min_pending_age_s]
        if not waiting:
            return
        self.rounds += 1
        left = self.cfg.max_moves
        while waiting and left > 0:
            plans = [(len(p[1]), j, p) for j in waiting for p in [self._plan(j)] if p is not None]
            plans = [x for x in plans if x[0] <= left]
            if not plans:
                return
            n, job_id, (slot, moves) = min(plans, key=lambda x: (x[0], e.runs[x[1]].queued_at, x[1]))
            self._carry_out(job_id, moves)
            left -= n
            waiting.remove(job_id)

    def _plan(self, job_id: int) -> tuple[int, list[tuple[int, Placement]]] | None:
        """(node to free, [(moved job, its reserved destination)]) with the fewest moves, or None."""
        e = self.engine
        job = e.jobs[job_id]
        state, task = e.state, job.task
        allowed = e.cluster.allowed(job.selector) & state.schedulable & state.model_mask(task.models)
        if (state.fit_mask(task) & allowed).any():
            return None  # it fits: the scheduler places it
        need = task.num_gpu * task.gpu_milli
        nodes = np.flatnonzero(allowed & (state.gpu_capacity >= need))
        missing = need - state.gpu_free[nodes]
        best: tuple[int, list[tuple[int, Placement]]] | None = None
        for slot in nodes[np.argsort(missing, kind="stable")][:CANDIDATE_NODES].tolist():
            movable = sorted(((key[0], devs) for key, devs in e.cluster.pods_on[slot].items()
                              if _movable(e.jobs[key[0]], e.runs[key[0]], job)),
                             key=lambda v: (-e.jobs[v[0]].task.total_gpu_milli, v[0]))
            one, chosen = state.rows([slot]), []  # what-if on a one-node copy
            for victim, devs in movable:
                if one.fits_on(task, 0):
                    break
                one.remove(e.jobs[victim].task, Placement(0, devs))
                chosen.append(victim)
            if not one.fits_on(task, 0) or (best is not None and len(chosen) >= len(best[1])):
                continue
            moves = self._destinations(slot, chosen)
            if moves is not None:
                best = (slot, moves)
        return best

    def _destinations(self, slot: int, victims: list[int]) -> list[tuple[int, Placement]] | None:
        """A reserved place off `slot` for each victim (tried on the live state, then undone)."""
        e = self.engine
        placed: list[tuple[int, Placement]] = []
        for victim in victims:
            vjob = e.jobs[victim]
            mask = e.state.fit_mask(vjob.task) & e.cluster.allowed(vjob.selector)
            mask[slot] = False
            if not mask.any():
                break
            where = e.policy.choose(e.state, vjob.task, mask)
            e.state.place(vjob.task, where)
            placed.append((victim, where))
        for victim, where in placed:
            e.state.remove(e.jobs[victim].task, where)
        return placed if len(placed) == len(victims) else None

    def _carry_out(self, job_id: int, moves: list[tuple[int, Placement]]) -> None:
        e = self.engine
        for victim, where in moves:
            before = e.stats.lost_work_gpu_s + e.stats.restart_gpu_s
            e.evict(victim, reason="rebalance")
            self.lost_gpu_s += e.stats.lost_work_gpu_s + e.stats.restart_gpu_s - before
            run, vjob = e.runs[victim], e.jobs[victim]
            if run.status == PENDING:   # the reserved destination: it starts there at once
                e.state.place(vjob.task, where)
                e._start(vjob, run, [where])
            self.moves += 1
            e.emit("rebalance-move", job=vjob.name, to=e.node_name(where.node))
        if e.runs[job_id].status == PENDING and e.place(job_id):
            e.emit("rebalance-placed", job=e.jobs[job_id].name)

    def summary(self) -> dict[str, Any]:
        return {"rounds": self.rounds, "moves": self.moves, "gpu_hours_lost": round(self.lost_gpu_s / 3600, 4)}


def stranded_gpus(state, size: int) -> float:
    """Free GPUs on schedulable nodes where a `size`-GPU pod does not fit (whole free devices count)."""
    whole = (state.dev_free >= 1000) & (state.dev_total > 0)
    free_whole = whole.sum(axis=1)
    free = state.dev_free.sum(axis=1) / 1000.0
    stuck = state.schedulable & (free_whole < size)
    return float(free[stuck].sum())
