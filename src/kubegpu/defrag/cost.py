"""What a move throws away: GPU-hours of work since the last checkpoint, plus the restart.

There is no standard checkpoint signal in Kubernetes (kueue#477, volcano#5999), so the pod
says it: `kubegpu.io/last-checkpoint` (RFC 3339 time of the last checkpoint), or
`kubegpu.io/checkpoint-interval` (a Go duration: checkpoints every interval since the pod
started), or Volcano's proposed `volcano.sh/last-checkpoint-time`. Without any, everything since
the pod started is lost. Restart time (image pull, NCCL init, data reload) comes from
`kubegpu.io/restart-time`, else a default that is larger for GPU pods.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import MILLI
from kubegpu.model.kinds import Pod

LAST_CHECKPOINT = "kubegpu.io/last-checkpoint"
CHECKPOINT_INTERVAL = "kubegpu.io/checkpoint-interval"
VOLCANO_LAST_CHECKPOINT = "volcano.sh/last-checkpoint-time"
RESTART_TIME = "kubegpu.io/restart-time"
DEFAULT_GPU_RESTART_S = 300.0   # image pull of a multi-GB training image, NCCL init, data reload
DEFAULT_CPU_RESTART_S = 30.0

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration ("1h30m", "90s") or a plain number of seconds; None if unreadable."""
    t = text.strip()
    if not t:
        return None
    try:
        value = float(t)
        return value if value >= 0 else None
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(t):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    return total if pos == len(t) and pos > 0 else None


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp (as Kubernetes writes them) as an aware datetime; None if unreadable."""
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


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
