"""The FGD paper's workload-inflation experiment (Weng et al., USENIX ATC '23, §6.1).

One run: shuffle the trace's pods with the seed; top the list up by sampling pods of the trace
with replacement until the GPU request would exceed `tune` × cluster GPU capacity (or drop
random pods down to it); submit the pods one by one, never release any; a pod that fits
nowhere is dropped. After every pod record the arrived GPU request, the allocated GPU and the
fragmentation F_N(M) of the target mix M (the original trace's shapes).

The curves are read at integer "arrival" points x (arrived GPU request as % of capacity) the
way the authors' merge scripts do: x_event = round(arrived %); the value at x is the mean over
events with x_event == x (allocation rounded to 0.01 % per event first), or over
x−1 ≤ x_event ≤ x+1 if there is none (small traces with no event even there: the state after the
last event before x; points the run never reaches are left out). The key metric is unallocated GPU % = 100 − alloc at
x = 100, mean ± sample sd over seeds.

Not bit-identical to the authors' Go simulator (different RNG); see docs/fgd-reproduction.md.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import msgspec
import numpy as np

from kubegpu.errors import InputError
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape, mix_from_tasks
from kubegpu.fragmentation.tracker import FragmentTracker
from kubegpu.placement.registry import make_policy
from kubegpu.placement.task import MILLI, Task
from kubegpu.simulate.trace import TraceNodes, trace_state

ARRIVAL_POINTS: tuple[int, ...] = (50, 80, 90, 95, 100, 105, 110, 120, 130)
DEFAULT_TUNE = 1.3
DEFAULT_SEEDS: tuple[int, ...] = tuple(range(42, 52))
# Pods one run may submit: the FGD traces need about 130,000 at --tune 10. A trace whose pods ask
# almost no GPU would need millions (none at all: for ever) to reach tune x capacity.
MAX_SUBMISSIONS = 1_000_000


class Curves(msgspec.Struct, frozen=True):
    """Per-event series of one run (one entry per submitted pod)."""

    arrived_milli: np.ndarray
    allocated_milli: np.ndarray
    frag_milli: np.ndarray
    total_gpus: int

    def at(self, points: Sequence[int]) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """(alloc %, frag rate % of idle, frag amount % of capacity) at each arrival point."""
        arrival = np.round(self.arrived_milli / self.total_gpus / 10.0)
        alloc = np.round(self.allocated_milli / self.total_gpus / 10.0, 2)
        idle = self.total_gpus * MILLI - self.allocated_milli
        rate = np.where(idle > 0, 100.0 * self.frag_milli / np.maximum(idle, 1), 0.0)
        amount = 100.0 * self.frag_milli / (self.total_gpus * MILLI)
        out: tuple[dict[str, float], dict[str, float], dict[str, float]] = ({}, {}, {})
        for x in points:
            sel = arrival == x
            if not sel.any():
                sel = np.abs(arrival - x) <= 1
            if not sel.any():
                # coarse traces: no event near x, the cluster is as the last event before x left it
                before = np.flatnonzero(self.arrived_milli <= x * self.total_gpus * 10)
                if before.size == 0 or self.arrived_milli[-1] < x * self.total_gpus * 10:
                    continue
                sel = np.zeros(arrival.size, dtype=bool)
                sel[before[-1]] = True
            out[0][str(x)] = round(float(alloc[sel].mean()), 2)
            out[1][str(x)] = round(float(rate[sel].mean()), 3)
            out[2][str(x)] = round(float(amount[sel].mean()), 3)
        return out


class RunResult(msgspec.Struct, frozen=True):
    seed: int
    alloc_pct: dict[str, float]
    frag_rate_pct: dict[str, float]
    frag_amount_pct: dict[str, float]
    pods: int
    failed_pods: int


class Summary(msgspec.Struct, frozen=True):
    mean: float
    sd: float


class InflationResult(msgspec.Struct, frozen=True):
    """One trace × one policy over several seeds (DESIGN §4 `simulate inflation` JSON)."""

    trace: str
    policy: str
    tune: float
    runs: list[RunResult]
    unallocated_pct_at_100: Summary


def check_inflatable(nodes: TraceNodes, tasks: Sequence[Task], tune: float, *, nodes_source: str = "nodes",
                     pods_source: str = "pods") -> None:
    """Refuse (InputError naming the file) a run that cannot reach tune x GPU capacity in bounded work."""
    capacity = nodes.total_gpus * MILLI
    if capacity <= 0:
        raise InputError("no node has a GPU: there is no GPU capacity to fill", where=nodes_source)
    demand = sum(t.total_gpu_milli for t in tasks)
    if demand <= 0:
        raise InputError("no pod asks for a GPU: resampling to --tune x GPU capacity would never end",
                         where=pods_source)
    needed = math.ceil(len(tasks) * tune * capacity / demand)
    if needed > MAX_SUBMISSIONS:
        raise InputError(f"its pods ask so little GPU that --tune {tune:g} needs about {needed:,} pods per run "
                         f"(at most {MAX_SUBMISSIONS:,})", where=pods_source)


def inflate_workload(tasks: Sequence[Task], capacity_milli: int, tune: float,
                     rng: np.random.Generator) -> np.ndarray:
    """Indices into `tasks`: the shuffled trace, topped up (with replacement) or trimmed to tune × capacity."""
    demand = np.array([t.total_gpu_milli for t in tasks], dtype=np.int64)
    order = rng.permutation(len(tasks))
    target = tune * capacity_milli
    total = int(demand.sum())
    if total < target:
        extra: list[np.ndarray] = []
        while True:
            draw = rng.integers(len(tasks), size=1024)
            running = total + np.cumsum(demand[draw])
            over = np.flatnonzero(running > target)
            if over.size:
                extra.append(draw[: over[0]])
                break
            extra.append(draw)
            total = int(running[-1])
        order = np.concatenate([order, *extra])
    elif total > target:
        keep = list(order)
        while total > target and keep:
            total -= int(demand[keep.pop(int(rng.integers(len(keep))))])
        order = np.array(keep, dtype=np.int64)
    return order


def simulate_run(nodes: TraceNodes, tasks: Sequence[Task], policy: str, seed: int, *,
                 tune: float = DEFAULT_TUNE, mix: ShapeMix | None = None) -> Curves:
    """One inflation run; returns the per-event curves."""
    rng = np.random.default_rng(seed)
    total_gpus = nodes.total_gpus
    order = inflate_workload(tasks, total_gpus * MILLI, tune, rng)
    state = trace_state(nodes, tie_rank=rng.permutation(len(nodes.names)))
    mix = mix if mix is not None else mix_from_tasks(tasks)
    chooser = make_policy(policy, mix=mix, seed=int(rng.integers(2**32)))
    tracker = FragmentTracker(mix)
    arrived = np.zeros(order.size, dtype=np.int64)
    allocated = np.zeros(order.size, dtype=np.int64)
    frag = np.zeros(order.size, dtype=np.float64)
    arrived_sum = allocated_sum = 0
    for i, index in enumerate(order):
        task = tasks[index]
        arrived_sum += task.total_gpu_milli
        feasible = state.fit_mask(task)
        where = chooser.choose(state, task, feasible) if feasible.any() else None
        if where is not None:
            state.place(task, where)
            allocated_sum += task.total_gpu_milli
        arrived[i], allocated[i] = arrived_sum, allocated_sum
        frag[i] = tracker.node_amounts(state).sum()
    return Curves(arrived_milli=arrived, allocated_milli=allocated, frag_milli=frag, total_gpus=total_gpus)


def run_result(nodes: TraceNodes, tasks: Sequence[Task], policy: str, seed: int, *,
               tune: float = DEFAULT_TUNE, points: Sequence[int] = ARRIVAL_POINTS,
               mix: ShapeMix | None = None) -> RunResult:
    """One run summarised at the arrival points."""
    curves = simulate_run(nodes, tasks, policy, seed, tune=tune, mix=mix)
    alloc, rate, amount = curves.at(points)
    failed = int(np.count_nonzero(np.diff(curves.allocated_milli, prepend=0)
                                  != np.diff(curves.arrived_milli, prepend=0)))
    return RunResult(seed=seed, alloc_pct=alloc, frag_rate_pct=rate, frag_amount_pct=amount,
                     pods=int(curves.arrived_milli.size), failed_pods=failed)


def _run_job(args: tuple) -> tuple[str, RunResult]:
    nodes, tasks, policy, seed, tune, points, mix = args
    return policy, run_result(nodes, tasks, policy, seed, tune=tune, points=points, mix=mix)


def summarize(trace: str, policy: str, tune: float, runs: list[RunResult]) -> InflationResult:
    """Mean ± sample sd of unallocated GPU % at 100 % arrival over the runs."""
    unalloc = [100.0 - r.alloc_pct["100"] for r in runs if "100" in r.alloc_pct]
    mean = statistics.fmean(unalloc) if unalloc else float("nan")
    sd = statistics.stdev(unalloc) if len(unalloc) > 1 else 0.0
    runs = sorted(runs, key=lambda r: r.seed)
    return InflationResult(trace=trace, policy=policy, tune=tune, runs=runs,
                           unallocated_pct_at_100=Summary(mean=round(mean, 3), sd=round(sd, 3)))


def run_experiment(nodes: TraceNodes, tasks: Sequence[Task], policies: Sequence[str], seeds: Sequence[int], *,
                   trace: str = "", tune: float = DEFAULT_TUNE, points: Sequence[int] = ARRIVAL_POINTS,
                   mix: ShapeMix | None = None, workers: int = 1,
                   on_run: Callable[[str, int], None] | None = None, nodes_source: str = "nodes",
                   pods_source: str = "pods") -> list[InflationResult]:
    """Every policy × seed; `workers` > 1 runs them in that many processes. One result per policy.

    `nodes_source` / `pods_source` name the inputs in errors (see `check_inflatable`).
    """
    check_inflatable(nodes, tasks, tune, nodes_source=nodes_source, pods_source=pods_source)
    for name in policies:
        make_policy(name, mix=mix if mix is not None else _placeholder_mix())  # fail fast on bad names
    jobs = [(nodes, list(tasks), p, s, tune, tuple(points), mix) for p in policies for s in seeds]
    by_policy: dict[str, list[RunResult]] = {p: [] for p in policies}
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for policy, result in pool.map(_run_job, jobs):
                by_policy[policy].append(result)
                if on_run:
                    on_run(policy, result.seed)
    else:
        for job in jobs:
            policy, result = _run_job(job)
            by_policy[policy].append(result)
            if on_run:
                on_run(policy, result.seed)
    return [summarize(trace, p, tune, by_policy[p]) for p in policies]


def _placeholder_mix() -> ShapeMix:
    return ShapeMix([TaskShape(cpu_milli=0)])
