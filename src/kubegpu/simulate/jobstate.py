"""Runtime state of jobs in a run and the run's counters (what `results.summarise` reads)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kubegpu.simulate.workload import BATCH, Job

PENDING, RUNNING, DONE, GONE, TIMED_OUT = "pending", "running", "done", "gone", "timed-out"
SAMPLE_INTERVAL = 60.0


@dataclass
class JobRun:
    """Runtime state of one job."""

    status: str = "new"
    queued_at: float = 0.0
    incarnation: int = 0
    started: float = 0.0          # start of the current run
    useful_from: float = 0.0      # started + restart overhead
    progress: float = 0.0         # checkpointed progress (seconds of work) carried into this run
    placements: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    preemptions: int = 0


@dataclass
class Stats:
    waits: dict[str, list[float]] = field(default_factory=dict)
    preemptions: int = 0
    lost_work_gpu_s: float = 0.0
    restart_gpu_s: float = 0.0
    evictions_by_scale_down: int = 0
    useful_gpu_s: float = 0.0
    alloc_gpu_milli_s: float = 0.0
    ready_gpu_s: float = 0.0
    timed_out: dict[str, int] = field(default_factory=dict)
    completed: dict[str, int] = field(default_factory=dict)
    samples: list[tuple] = field(default_factory=list)


@dataclass(frozen=True)
class EvictionLoss:
    """What evicting a running job now costs: GPU-seconds of work since its last checkpoint, the GPU-seconds
    of its restart, and the work (seconds) its checkpoints keep."""

    work_gpu_s: float
    restart_gpu_s: float
    saved_s: float

    @property
    def gpu_s(self) -> float:
        return self.work_gpu_s + self.restart_gpu_s


def eviction_loss(job: Job, run: JobRun, now: float) -> EvictionLoss:
    """The one pricing of an eviction (preemption, scale-down, a rebalancer move); services lose nothing."""
    if job.kind != BATCH:
        return EvictionLoss(0.0, 0.0, 0.0)
    ran = max(0.0, now - run.useful_from)
    tau = job.checkpoint_interval
    saved = math.floor(ran / tau) * tau if tau > 0 else 0.0
    saved = min(saved, job.work - run.progress)
    last_checkpoint = run.useful_from + saved if saved > 0 else run.started
    return EvictionLoss(job.gpus * (now - last_checkpoint), job.gpus * job.restart_overhead, saved)
