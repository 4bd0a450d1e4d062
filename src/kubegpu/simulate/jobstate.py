"""Runtime state of jobs in a run and the run's counters (what `results.summarise` reads)."""

from __future__ import annotations

from dataclasses import dataclass, field

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
