"""Synthetic workloads for the seed's patterns: inference peaks that follow load, long training, batch.

All randomness comes from one numpy Generator seeded by the scenario, so a seed reproduces the
same jobs. Jobs are returned in submission order with ids assigned by the caller.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from kubegpu.errors import InputError
from kubegpu.placement.task import Task
from kubegpu.simulate.scenario import InferencePeaks, PodShape, PoissonJobs, Training
from kubegpu.simulate.scenario_checks import quantity, seconds
from kubegpu.simulate.trace_format import load_trace
from kubegpu.simulate.workload import BATCH, SERVICE, Job, PriorityClass, Selector

MIB = 1024 * 1024


def pod_task(shape: PodShape, name: str, *, gpus: int | None = None, where: str = "") -> Task:
    n = shape.gpus if gpus is None else gpus
    return Task(cpu_milli=int(round(quantity(shape.cpu, where=where, field="pod.cpu") * 1000)),
                mem_bytes=int(quantity(shape.memory, where=where, field="pod.memory")),
                num_gpu=n, gpu_milli=shape.gpu_milli if n else 0,
                models=frozenset(shape.gpu_models) if shape.gpu_models else None, name=name)


def pod_selector(shape: PodShape) -> Selector:
    return Selector(tuple(sorted(shape.node_selector.items())), tuple(sorted(shape.tolerations)))


def inference_peaks(gen: InferencePeaks, *, duration: float, classes: dict[str, PriorityClass],
                    rng: np.random.Generator, where: str) -> list[Job]:
    """Replicas = base + peak during each peak (+ noise), re-evaluated every `step`; HPA removes the newest."""
    s = lambda v, f: seconds(v, where=where, field=f)  # noqa: E731
    step, period, length = s(gen.step, "step"), s(gen.period, "period"), s(gen.peak_duration, "peak_duration")
    first, jitter_peak = s(gen.first_peak, "first_peak"), s(gen.peak_start_jitter, "peak_start_jitter")
    peaks: list[tuple[float, float]] = []
    for day in range(int(math.ceil(duration / 86400.0))):
        for k in range(gen.peaks_per_day):
            start = day * 86400.0 + first + k * period + (rng.uniform(0, jitter_peak) if jitter_peak else 0.0)
            peaks.append((start, start + length))
    task = pod_task(gen.pod, gen.name, where=where)
    prio = classes.get(gen.pod.priority_class, PriorityClass(gen.pod.priority_class))
    sel = pod_selector(gen.pod)
    jobs: list[Job] = []
    live: list[Job] = []
    steps = np.arange(0.0, duration, step)
    noise = (np.rint(rng.normal(0.0, gen.jitter, steps.size)).astype(int) if gen.jitter > 0
             else np.zeros(steps.size, dtype=int))
    starts = np.array([p[0] for p in peaks]) if peaks else np.zeros(0)
    ends = np.array([p[1] for p in peaks]) if peaks else np.zeros(0)
    for t, extra in zip(steps.tolist(), noise.tolist()):
        in_peak = bool(((starts <= t) & (t < ends)).any())
        # the HPA reacts to load within one step: a peak that starts between steps is seen at the next
        target = max(0, gen.base_replicas + (gen.peak_replicas if in_peak else 0) + extra)
        while len(live) < target:
            job = Job(id=-1, name=f"{gen.name}-{len(jobs)}", cls=gen.name, submit=t, task=task, kind=SERVICE,
                      end=duration, priority=prio, selector=sel, safe_to_evict=gen.safe_to_evict)
            live.append(job)
            jobs.append(job)
        while len(live) > target:
            live.pop().end = t
    return jobs


def training(gen: Training, *, classes: dict[str, PriorityClass], where: str, **_) -> list[Job]:
    s = lambda v, f: seconds(v, where=where, field=f)  # noqa: E731
    task = pod_task(gen.pod, gen.name, where=where)
    prio = classes.get(gen.pod.priority_class, PriorityClass(gen.pod.priority_class))
    return [Job(id=-1, name=f"{gen.name}-{i}", cls=gen.name, submit=s(gen.submit, "submit") + i * s(gen.every, "every"),
                task=task, pods=gen.pods, kind=BATCH, work=s(gen.duration, "duration"), priority=prio,
                selector=pod_selector(gen.pod), checkpoint_interval=s(gen.checkpoint_interval, "checkpoint_interval"),
                restart_overhead=s(gen.restart_overhead, "restart_overhead"),
                scheduling_timeout=s(gen.scheduling_timeout, "scheduling_timeout"), safe_to_evict=gen.safe_to_evict)
            for i in range(gen.count)]


def _choice(weights: dict[str, float], default: int, rng: np.random.Generator, size: int, where: str) -> np.ndarray:
    if not weights:
        return np.full(size, default, dtype=int)
    keys = np.array([int(k) for k in weights])
    p = np.array(list(weights.values()), dtype=float)
    if (keys < 0).any() or (p < 0).any() or p.sum() <= 0:
        raise InputError(f"{weights!r}: counts and weights must be non-negative", where=where, field="gpus")
    return keys[rng.choice(keys.size, size=size, p=p / p.sum())]


def poisson_jobs(gen: PoissonJobs, *, duration: float, classes: dict[str, PriorityClass],
                 rng: np.random.Generator, where: str) -> list[Job]:
    s = lambda v, f: seconds(v, where=where, field=f)  # noqa: E731
    start = s(gen.start, "start")
    stop = duration if gen.stop == "" else min(duration, s(gen.stop, "stop"))
    expected = max(0.0, (stop - start) / 3600.0 * gen.rate_per_hour)
    n = int(rng.poisson(expected)) if expected > 0 else 0
    submits = np.sort(rng.uniform(start, stop, n))
    durations = s(gen.median_duration, "median_duration") * np.exp(rng.normal(0.0, gen.sigma, n))
    gpus = _choice(gen.gpus, gen.pod.gpus, rng, n, where)
    gangs = _choice(gen.gang_pods, 1, rng, n, where)
    prio = classes.get(gen.pod.priority_class, PriorityClass(gen.pod.priority_class))
    sel = pod_selector(gen.pod)
    tasks: dict[int, Task] = {}
    jobs = []
    for i in range(n):
        g = int(gpus[i])
        task = tasks.get(g) or tasks.setdefault(g, pod_task(gen.pod, gen.name, gpus=g, where=where))
        jobs.append(Job(id=-1, name=f"{gen.name}-{i}", cls=gen.name, submit=float(submits[i]), task=task,
                        pods=max(1, int(gangs[i])), kind=BATCH, work=max(1.0, float(durations[i])), priority=prio,
                        selector=sel, checkpoint_interval=s(gen.checkpoint_interval, "checkpoint_interval"),
                        restart_overhead=s(gen.restart_overhead, "restart_overhead")))
    return jobs


GENERATORS = {InferencePeaks: inference_peaks, Training: training, PoissonJobs: poisson_jobs}


def build_jobs(scenario) -> list[Job]:
    """Every job of the scenario (trace first, then generators in file order), sorted by submission."""
    spec, where = scenario.spec, scenario.source
    classes = {name: PriorityClass(name, c.value, c.preemption_policy) for name, c in spec.workload.priority_classes.items()}
    rng = np.random.default_rng([spec.seed, 0])
    jobs: list[Job] = []
    if spec.workload.trace:
        path = Path(spec.workload.trace)
        if not path.is_absolute():
            path = Path(scenario.base_dir) / path
        jobs.extend(j for j in load_trace(path, classes=classes, default_class=spec.workload.trace_class)
                    if j.submit < scenario.duration_s)
    for i, gen in enumerate(spec.workload.generators):
        made = GENERATORS[type(gen)](gen, duration=scenario.duration_s, classes=classes, rng=rng, where=where)
        for job in made:
            job.origin = f"{where}: field workload.generators.{i}"
        jobs.extend(made)
    jobs.sort(key=lambda j: j.submit)  # stable: equal times keep file order
    return jobs
