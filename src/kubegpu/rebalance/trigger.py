"""When a rebalance round is due: a GPU pod (or gang) has waited too long, or stranded GPUs persist.

Two triggers, as the issue defines them:
  - pending: a pending GPU pod, or a gang with pending members, older than `--min-pending-age`
    (a gang counts from its youngest pending member: it cannot start before that one exists);
  - stranded: the cluster's stranded GPUs for its own demand (`kubegpu frag`'s
    stranded_for_demand) above `--stranded-above` for `--sustained`; the goal is then room for
    one more pod of the demand's largest size.
Whether a plan exists is the planner's business (round.py); this module only names candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kubegpu.fragmentation.cluster import cluster_frag_report
from kubegpu.fragmentation.gpumap import reference_size
from kubegpu.model.cluster import ClusterState
from kubegpu.model.timeutil import parse_time
from kubegpu.scheduling.gang import find_gangs


@dataclass(frozen=True)
class Candidate:
    """A pending pod or gang the round may make room for."""

    key: str                 # ns/pod, or ns/gang for a gang
    gang: str | None
    gpus: float              # GPUs the pending pods ask for together
    pending_seconds: float
    priority: int


@dataclass(frozen=True)
class StrandedReading:
    gpus: float              # stranded GPUs for the cluster's own demand
    size: int                # the demand's largest pod size (GPUs), what a stranded goal makes room for


def _gpus(state: ClusterState, pods) -> float:
    total = 0.0
    for p in pods:
        d = state.gpu_demand(p)
        total += d.num_gpu * d.gpu_milli / 1000
    return total


def pending_candidates(state: ClusterState, now: datetime, min_age_s: float) -> list[Candidate]:
    """Pending GPU pods and gangs older than `min_age_s`, oldest first (gangs as one candidate)."""
    gangs = find_gangs(state)
    in_gang: dict[str, str] = {}
    for gang in gangs.values():
        for member in gang.members:
            in_gang[member.key] = gang.key
    out: list[Candidate] = []
    seen_gangs: set[str] = set()
    for pod in state.unscheduled_pods:
        if pod.metadata.deletion_timestamp is not None or _gpus(state, [pod]) <= 0:
            continue
        gang_key = in_gang.get(pod.key)
        if gang_key is not None:
            if gang_key in seen_gangs:
                continue
            seen_gangs.add(gang_key)
            members = gangs[gang_key].pending
        else:
            members = [pod]
        created = [parse_time(p.metadata.creation_timestamp) for p in members]
        if any(c is None for c in created):
            continue  # no age known: never old enough
        age = (now - max(c for c in created if c is not None)).total_seconds()
        if age < min_age_s:
            continue
        out.append(Candidate(key=gang_key or pod.key, gang=gang_key, gpus=_gpus(state, members),
                             pending_seconds=age, priority=max(state.priority_of(p) for p in members)))
    return sorted(out, key=lambda c: (-c.pending_seconds, c.key))


def stranded_reading(state: ClusterState) -> StrandedReading:
    report = cluster_frag_report(state)
    return StrandedReading(gpus=float(report.stranded_for_demand.gpus), size=reference_size(report))


@dataclass
class SustainedTimer:
    """How long a reading has stayed above a threshold; a live round seeds it from the ledger
    (Ledger.stranded_since), so it outlives the process."""

    above_since: datetime | None = None

    def update(self, value: float, threshold: float | None, now: datetime) -> float:
        """Seconds the value has been above `threshold` without a break (0 when it is not)."""
        if threshold is None or value <= threshold:
            self.above_since = None
            return 0.0
        if self.above_since is None:
            self.above_since = now
        return (now - self.above_since).total_seconds()
