"""What a move throws away: GPU-hours of work since the last checkpoint, plus the restart.

There is no standard checkpoint signal in Kubernetes (kueue#477, volcano#5999), so the pod
says it: `kubegpu.io/last-checkpoint` (RFC 3339 time of the last checkpoint), or
`kubegpu.io/checkpoint-interval` (a Go duration: checkpoints every interval since the pod
started), or Volcano's proposed `volcano.sh/last-checkpoint-time`. Without any, everything since
the pod started is lost. Restart time (image pull, NCCL init, data reload) comes from
`kubegpu.io/restart-time`, else a default that is larger for GPU pods.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from kubegpu.model.cluster import ClusterState
from kubegpu.model.timeutil import parse_duration as _parse_duration
from kubegpu.model.timeutil import parse_time
from kubegpu.model.gpu import MILLI
from kubegpu.model.kinds import Pod

LAST_CHECKPOINT = "kubegpu.io/last-checkpoint"
CHECKPOINT_INTERVAL = "kubegpu.io/checkpoint-interval"
VOLCANO_LAST_CHECKPOINT = "volcano.sh/last-checkpoint-time"
RESTART_TIME = "kubegpu.io/restart-time"
DEFAULT_GPU_RESTART_S = 300.0   # image pull of a multi-GB training image, NCCL init, data reload
DEFAULT_CPU_RESTART_S = 30.0

def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration ("1h30m", "90s") or a plain number of seconds; None if unreadable."""
    return _parse_duration(text, bare_seconds=True)


def state_now(state: ClusterState, now: datetime | None = None) -> datetime:
    """The instant costs are measured at: given, else when the state was captured, else now."""
    if now is not None:
        return now
    return parse_time(state.captured_at) or datetime.now(timezone.utc)


@dataclass(frozen=True)
class MoveCost:
    """The price of moving one pod."""

    gpus: float                 # physical GPUs the pod holds
    lost_seconds: float         # work since the last checkpoint
    restart_seconds: float
    gpu_hours: float            # gpus x (lost + restart) / 3600
    basis: str                  # where lost_seconds came from


def move_cost(state: ClusterState, pod: Pod, now: datetime) -> MoveCost:
    """GPU-hours lost by evicting `pod` at `now`."""
    demand = state.gpu_demand(pod)
    gpus = demand.num_gpu * demand.gpu_milli / MILLI
    started = parse_time(pod.status.start_time) or parse_time(pod.metadata.creation_timestamp)
    run_s = max((now - started).total_seconds(), 0.0) if started else 0.0
    ann = pod.annotations
    lost, basis = run_s, "run time (no checkpoint annotation)" if started else "unknown start time"
    for key in (LAST_CHECKPOINT, VOLCANO_LAST_CHECKPOINT):
        if key in ann:
            last = parse_time(ann[key])
            if last is None:
                basis = f"run time ({key} unreadable: {ann[key]!r})"
                break
            lost = min(max((now - last).total_seconds(), 0.0), run_s) if started else max(
                (now - last).total_seconds(), 0.0)
            basis = f"{key} {ann[key]}"
            break
    else:
        if CHECKPOINT_INTERVAL in ann:
            interval = parse_duration(ann[CHECKPOINT_INTERVAL])
            if interval:
                lost = run_s % interval
                basis = f"{CHECKPOINT_INTERVAL} {ann[CHECKPOINT_INTERVAL]}"
            else:
                basis = f"run time ({CHECKPOINT_INTERVAL} unreadable: {ann[CHECKPOINT_INTERVAL]!r})"
    restart = parse_duration(ann.get(RESTART_TIME, "")) if RESTART_TIME in ann else None
    if restart is None:
        restart = DEFAULT_GPU_RESTART_S if gpus else DEFAULT_CPU_RESTART_S
    return MoveCost(gpus=gpus, lost_seconds=round(lost, 1), restart_seconds=restart,
                    gpu_hours=round(gpus * (lost + restart) / 3600.0, 4), basis=basis)
