"""`kubegpu rebalance` modelled as a controller in the event simulation (scenario key `rebalancer`).

Every `interval`, a round looks at the pending GPU jobs (single pods and gangs) the scheduler found
unschedulable that have waited `min-pending-age` (the live trigger; a gang's members are queued
together), and makes room for them smallest plan first: every waiting shape (a queue lane: same pod,
gang size, selector, priority) gets the plan for its oldest job, the plan with the fewest moves (then
least work lost, then the oldest job) is carried out, the others are planned again on the cluster as it
is after it. A plan (rebalance_plan.py, as `defrag --for`) clears one host per pod that lacks room: the
fewest movable pods whose room covers what the host lacks, every host ranked at once, each moved pod
reserved on the tightest-fit node elsewhere; a gang's members are planned one after the other. Movable as
`kubegpu defrag` decides it here: a single pod, owned by a controller, safe to evict, no local storage,
priority not above the pending pod's. Budgets as the live ones: `max-moves` per round, at most
`max-moves-per-node` (2) reservations on one destination, and `max-gpu-hours-lost` per round and per
simulated day (work since the last checkpoint plus the restart, as `defrag` prices it). The destination
is held, so the moved pod starts there at once (no scheduler race, no TTL expiry) and adds no wait
sample; it loses its work since its last checkpoint plus its restart overhead, and the pending job is
placed right after (the scheduler's own choice among the nodes that now fit).

Simplified, named: gang members are never moved (defrag may move a whole gang as a unit); a round
takes plans greedily smallest first (live tries the three smallest first plans and keeps the sequence
that serves the most); a host's move set is the greedy largest-first one (not every subset); the
stranded trigger (`--stranded-above`), `--cooldown` and `--quiet-hours` are not modelled; the
simulated workloads have no PDBs. A lane with no plan is not planned again until a pod starts or
leaves somewhere or a node changes (nothing else can make a plan appear).

Settings (flag names of `kubegpu rebalance`): `enabled`, `interval` (5m), `min-pending-age` (10m),
`max-moves` (6), `max-moves-per-node` (2), `max-gpu-hours-lost` and `max-gpu-hours-lost-per-day`
(none). The summary gains `rebalance: {rounds, moves, gpu_hours_lost}` and every run with a
`rebalancer` key samples `stranded_gpus` (free GPUs on nodes where a pod of the workload's largest
whole-GPU size does not fit) for the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubegpu.errors import InputError
from kubegpu.rebalance.budget import PER_NODE_DEFAULT
from kubegpu.placement.state import default_devices
from kubegpu.placement.task import Placement, Task
from kubegpu.simulate.jobstate import PENDING, eviction_loss
from kubegpu.simulate.rebalance_plan import MAX_HOSTS_TRIED, HostPlan, PodTable, rank_hosts, tightest_destination
from kubegpu.simulate.scenario import seconds
from kubegpu.simulate.workload import Job

KEYS = ("enabled", "interval", "min-pending-age", "max-moves", "max-moves-per-node", "max-gpu-hours-lost",
        "max-gpu-hours-lost-per-day")
DAY_S = 86400.0


def _whole(raw: dict[str, Any], key: str, default: int, where: str) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(f"rebalancer {key} must be a whole number >= 0", where=where)
    return value


def _hours(raw: dict[str, Any], key: str, where: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
        raise InputError(f"rebalancer {key} must be a number of GPU-hours >= 0", where=where)
    return float(value)


@dataclass(frozen=True)
class RebalancerSettings:
    enabled: bool = False
    interval_s: float = 300.0
    min_pending_age_s: float = 600.0
    max_moves: int = 6
    max_moves_per_node: int = PER_NODE_DEFAULT
    max_gpu_hours_lost: float | None = None
    max_gpu_hours_lost_per_day: float | None = None

    @classmethod
    def from_spec(cls, raw: dict[str, Any], *, where: str) -> "RebalancerSettings":
        unknown = sorted(set(raw) - set(KEYS))
        if unknown:
            raise InputError(f"unknown rebalancer setting {unknown[0]!r} (known: {', '.join(KEYS)})", where=where)
        interval = seconds(raw.get("interval", "5m"), where=where, field="rebalancer.interval")
        if interval <= 0:
            raise InputError("rebalancer interval must be longer than 0s", where=where)
        return cls(enabled=bool(raw.get("enabled", False)), interval_s=interval,
                   max_moves=_whole(raw, "max-moves", 6, where),
                   max_moves_per_node=_whole(raw, "max-moves-per-node", PER_NODE_DEFAULT, where),
                   max_gpu_hours_lost=_hours(raw, "max-gpu-hours-lost", where),
                   max_gpu_hours_lost_per_day=_hours(raw, "max-gpu-hours-lost-per-day", where),
                   min_pending_age_s=seconds(raw.get("min-pending-age", "10m"), where=where,
                                             field="rebalancer.min-pending-age"))


def _movable(victim: Job) -> bool:
    return victim.pods == 1 and victim.controller and victim.safe_to_evict and not victim.local_storage


class SimRebalancer:
    def __init__(self, engine, settings: RebalancerSettings) -> None:
        self.engine = engine
        self.cfg = settings
        self.rounds = 0
        self.moves = 0
        self.lost_gpu_s = 0.0
        self.plans_made = 0
        self.lost_by_day: dict[int, float] = {}
        self.lost_by_round: dict[float, float] = {}       # round time -> GPU-seconds its moves threw away
        self._no_plan: dict[int, tuple[int, int]] = {}    # lane -> cluster signature when it had no plan
        self._pods: tuple[tuple[tuple[int, int], float], PodTable] | None = None

    def run_once(self, now: float) -> None:
        e = self.engine
        heads: dict[int, list[int]] = {}                  # lane -> its waiting jobs, oldest first
        for j in e.pending_jobs():
            job = e.jobs[j]
            if job.task.wants_gpu and now - e.runs[j].queued_at >= self.cfg.min_pending_age_s:
                heads.setdefault(e.lane_of[j], []).append(j)
        if not heads:
            return
        self.rounds += 1
        left_moves, left_s = self.cfg.max_moves, self._gpu_s_allowed(now)
        while heads and left_moves > 0:
            plans = []
            for lane, waiting in heads.items():
                plan = self._plan_lane(lane, waiting[0], now)
                if plan is not None and len(plan.moves) <= left_moves and plan.cost <= left_s + 1e-9:
                    plans.append((len(plan.moves), plan.cost, e.runs[waiting[0]].queued_at, waiting[0], lane, plan))
            if not plans:
                return
            n, cost, _, job_id, lane, plan = min(plans, key=lambda p: p[:4])
            self._carry_out(job_id, plan, now)
            left_moves, left_s = left_moves - n, left_s - cost
            heads[lane].pop(0)
            if not heads[lane]:
                del heads[lane]

    def _gpu_s_allowed(self, now: float) -> float:
        per_round, per_day = self.cfg.max_gpu_hours_lost, self.cfg.max_gpu_hours_lost_per_day
        left = float("inf") if per_round is None else per_round * 3600
        if per_day is not None:
            left = min(left, per_day * 3600 - self.lost_by_day.get(int(now // DAY_S), 0.0))
        return left

    def _signature(self) -> tuple[int, int]:
        """Changes whenever a pod starts or stops anywhere or a node's schedulability changes (a plan's
        what-ifs, undone, leave it as it was)."""
        e = self.engine
        return e.pod_changes, hash(e.state.schedulable.tobytes())

    def _plan_lane(self, lane: int, job_id: int, now: float) -> HostPlan | None:
        sig = self._signature()
        if self._no_plan.get(lane) == sig:
            return None
        plan = self._plan(job_id, now, sig)
        if plan is None:
            self._no_plan[lane] = sig
        else:
            self._no_plan.pop(lane, None)
        return plan

    def _pod_table(self, now: float, sig: tuple[int, int]) -> PodTable:
        if self._pods is not None and self._pods[0] == (sig, now):   # the work lost depends on the time
            return self._pods[1]
        e = self.engine
        rows = []
        for slot in np.flatnonzero(e.state.gpu_capacity > 0).tolist():
            for (j, _member) in e.cluster.pods_on[slot]:
                job = e.jobs[j]
                if job.pods == 1:
                    t = job.task
                    rows.append((j, slot, t.total_gpu_milli, t.cpu_milli, t.mem_bytes, job.priority.value,
                                 _movable(job), eviction_loss(job, e.runs[j], now).gpu_s))
        table = PodTable.build(rows)
        self._pods = ((sig, now), table)
        return table

    def _plan(self, job_id: int, now: float, sig: tuple[int, int]) -> HostPlan | None:
        """The cheapest moves that make room for every pod of `job_id`, each with a reserved destination.

        A gang's members are planned one after the other on the cluster as the earlier members' moves leave
        it (a member that fits as it is takes the tightest fit), all tried on the live state and undone."""
        e = self.engine
        self.plans_made += 1
        job = e.jobs[job_id]
        state, task = e.state, job.task
        allowed = e.cluster.allowed(job.selector) & state.model_mask(task.models)
        pods = self._pod_table(now, sig)
        eligible = pods.movable & (pods.prio <= job.priority.value)
        undo: list[tuple[Task, Placement, bool]] = []   # (task, where, True = placed / False = removed)
        held = np.zeros(state.n_nodes, dtype=np.int64)  # reservations per node over the whole plan
        hosts: list[int] = []
        moves: list[tuple[int, Placement]] = []
        cost = 0.0
        try:
            for _ in range(job.pods):
                where = tightest_destination(state, task, allowed)
                if where is None:
                    found = self._plan_pod(task, allowed, pods, eligible, held, undo)
                    if found is None:
                        return None
                    host, member_moves, member_cost = found
                    hosts.append(host)
                    moves += member_moves
                    cost += member_cost
                    eligible = eligible & ~np.isin(pods.job, [v for v, _ in member_moves])
                    where = Placement(host, default_devices(state.dev_free[host], task))
                state.place(task, where)
                undo.append((task, where, True))
            return HostPlan(hosts, moves, cost) if moves else None   # no move needed: the scheduler places it
        finally:
            for t, where, placed in reversed(undo):
                (state.remove if placed else state.place)(t, where)

    def _plan_pod(self, task: Task, allowed: np.ndarray, pods: PodTable, eligible: np.ndarray, held: np.ndarray,
                  undo: list) -> tuple[int, list[tuple[int, Placement]], float] | None:
        """Clear one host for one pod: the first ranked host whose moved pods all get a destination (left applied
        on the state and recorded in `undo`)."""
        e = self.engine
        hosts = allowed & e.state.schedulable & (e.state.gpu_capacity >= task.num_gpu * task.gpu_milli)
        ranked_host, _, cost, victims = rank_hosts(e.state, task, hosts, pods, eligible)
        for host, c, rows in list(zip(ranked_host.tolist(), cost.tolist(), victims))[:MAX_HOSTS_TRIED]:
            chosen = pods.job[rows].tolist()
            if not self._clears(host, task, chosen):
                continue
            mark = len(undo)
            moves = self._destinations(host, chosen, held, undo)
            if moves is not None:
                return host, moves, float(c)
            for t, where, placed in reversed(undo[mark:]):
                (e.state.remove if placed else e.state.place)(t, where)
            del undo[mark:]
        return None

    def _clears(self, host: int, task: Task, victims: list[int]) -> bool:
        """The one-node what-if: with `victims` gone, `task` fits on `host`."""
        e = self.engine
        one = e.state.rows([host])
        for v in victims:
            _, devs = e.runs[v].placements[0]
            one.remove(e.jobs[v].task, Placement(0, devs))
        return one.fits_on(task, 0)

    def _destinations(self, host: int, victims: list[int], held: np.ndarray,
                      undo: list) -> list[tuple[int, Placement]] | None:
        """A reserved place off `host` for each victim, at most `max-moves-per-node` reservations on one node over
        the plan (`held`, updated on success); the victims leave `host` and take their places on the state
        (recorded in `undo`). None when one finds no room."""
        e = self.engine
        held_here = held.copy()
        placed: list[tuple[int, Placement]] = []
        for victim in victims:
            vjob = e.jobs[victim]
            ok = e.cluster.allowed(vjob.selector) & (held_here < self.cfg.max_moves_per_node)
            ok[host] = False
            where = tightest_destination(e.state, vjob.task, ok)
            if where is None:
                return None
            e.state.place(vjob.task, where)
            undo.append((vjob.task, where, True))
            held_here[where.node] += 1
            placed.append((victim, where))
        for victim in victims:
            node, devs = e.runs[victim].placements[0]
            e.state.remove(e.jobs[victim].task, Placement(node, devs))
            undo.append((e.jobs[victim].task, Placement(node, devs), False))
        held[:] = held_here
        return placed

    def _carry_out(self, job_id: int, plan: HostPlan, now: float) -> None:
        e = self.engine
        for victim, where in plan.moves:
            before = e.stats.lost_work_gpu_s + e.stats.restart_gpu_s
            e.evict(victim, reason="rebalance")
            lost = e.stats.lost_work_gpu_s + e.stats.restart_gpu_s - before
            self.lost_gpu_s += lost
            day = int(now // DAY_S)
            self.lost_by_day[day] = self.lost_by_day.get(day, 0.0) + lost
            self.lost_by_round[now] = self.lost_by_round.get(now, 0.0) + lost
            run, vjob = e.runs[victim], e.jobs[victim]
            e.state.place(vjob.task, where)        # the reserved destination: it starts there at once
            e._start(vjob, run, [where], waited=False)
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
