"""What a pending GPU pod's wait has cost so far.

The wait runs from the pod's creationTimestamp (else its PodScheduled=False condition) to the
moment the cluster was read (`captured_at`, else now). Two figures, never added together:
- delay: the GPU-hours the pod would have had by now (its GPUs x its wait), priced at the
  cluster's GPU-hour rate: the work the wait postponed;
- idle reservation: GPUs already held by members of its gang that are bound and wait for the rest
  (a gang starts only as a unit), x the wait, priced at their nodes' rate: money billed for nothing.
"""

from __future__ import annotations

from datetime import datetime, timezone

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.timeutil import parse_time
from kubegpu.money.amount import Money
from kubegpu.money.cluster import ClusterPrices
from kubegpu.scheduling.gang import find_gangs, gang_marker


class PendingCost(msgspec.Struct, frozen=True):
    pod: str
    gpus: float
    since: str | None                  # RFC 3339: when the wait began (None: unknown)
    waited_seconds: float | None
    delay_gpu_hours: float
    delay_cost: Money | None
    idle_reserved_gpus: float          # GPUs held idle by bound members of its gang
    idle_reserved_gpu_hours: float
    idle_reserved_cost: Money | None


def wait_start(pod: Pod) -> str | None:
    """When the pod began to wait: its creation, else the PodScheduled=False transition."""
    if pod.metadata.creation_timestamp:
        return pod.metadata.creation_timestamp
    for c in pod.status.conditions:
        if c.type == "PodScheduled" and c.status == "False" and c.last_transition_time:
            return c.last_transition_time
    return None


def observed_at(state: ClusterState) -> datetime:
    """The moment the state describes: when it was captured, else now."""
    return parse_time(state.captured_at) or datetime.now(timezone.utc)


def _gpus(state: ClusterState, pod: Pod) -> float:
    return state.gpu_demand(pod).total_milli / 1000


class WaitCosts:
    """Prices waits against one state: gangs and rates found once, then one pod at a time (`why --all`
    streams its reports, so the cost of a pod must not re-scan the cluster)."""

    def __init__(self, state: ClusterState, prices: ClusterPrices) -> None:
        self.state = state
        self.prices = prices
        self.now = observed_at(state)
        self.gangs = find_gangs(state)
        self.rate = prices.rate()

    def of(self, key: str) -> PendingCost | None:
        """The wait cost of pod "ns/name" (None when there is no such pod)."""
        state, prices = self.state, self.prices
        ns, _, name = key.partition("/")
        pod = state.pod(ns, name)
        if pod is None:
            return None
        since = wait_start(pod)
        start = parse_time(since)
        waited = max((self.now - start).total_seconds(), 0.0) if start else None
        hours = (waited or 0.0) / 3600
        gpus = _gpus(state, pod)
        marker = gang_marker(pod)
        gang = self.gangs.get(f"{pod.namespace}/{marker[1]}") if marker else None
        bound = gang.bound if gang else []
        held = sum(_gpus(state, p) for p in bound)
        held_rate = prices.rate(sorted({p.spec.node_name for p in bound})) if bound else None
        return PendingCost(
            pod=key, gpus=gpus, since=since, waited_seconds=round(waited, 1) if waited is not None else None,
            delay_gpu_hours=round(gpus * hours, 3),
            delay_cost=self.rate.of(gpus * hours, "once") if self.rate and waited is not None else None,
            idle_reserved_gpus=held, idle_reserved_gpu_hours=round(held * hours, 3),
            idle_reserved_cost=held_rate.of(held * hours, "once") if held_rate and waited is not None else None)


def pending_costs(state: ClusterState, pods: list[str], prices: ClusterPrices) -> list[PendingCost]:
    """The wait cost of each pod named "ns/name" (pods not found are left out)."""
    costs = WaitCosts(state, prices)
    return [c for c in (costs.of(key) for key in pods) if c is not None]
