"""Audit findings that have a computable price.

Pitfall 4, a training workload without checkpoint storage (KG-403): a preemption or eviction
restarts it from step 0, so every GPU-hour its running pods have done so far is at risk. Priced
at the rate of the nodes they run on. Other findings carry no price (yet): their cost depends on
what the cluster will do, not on what it is.
"""

from __future__ import annotations

from collections import defaultdict

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.timeutil import parse_time
from kubegpu.money.amount import Money
from kubegpu.money.cluster import ClusterPrices
from kubegpu.money.waits import observed_at

NO_CHECKPOINT = "KG-403"


class FindingCost(msgspec.Struct, frozen=True):
    id: str
    object: str
    what: str                    # what the figure is
    gpu_hours: float
    cost: Money | None


def workload_pods(state: ClusterState) -> dict[tuple[str, str, str], list[Pod]]:
    """Running pods by (kind, namespace, name) of their outermost controller, in pod order: one pass
    over the pods for every finding (not one per finding)."""
    out: dict[tuple[str, str, str], list[Pod]] = defaultdict(list)
    for pod in state.pods:
        if pod.is_bound and not pod.is_terminal:
            top = state.top_controller(pod)
            if top is not None:
                out[(top[0], pod.namespace, top[1])].append(pod)
    return out


def checkpoint_risk(state: ClusterState, obj: str, prices: ClusterPrices,
                    by_workload: dict[tuple[str, str, str], list[Pod]] | None = None) -> FindingCost | None:
    """GPU-hours the running pods of workload `obj` ("Kind/ns/name") would lose to a preemption now
    (`by_workload`: `workload_pods(state)` when the caller has it)."""
    kind, _, rest = obj.partition("/")
    ns, _, name = rest.partition("/")
    now = observed_at(state)
    hours, nodes = 0.0, set()
    pods = (by_workload if by_workload is not None else workload_pods(state)).get((kind, ns, name), [])
    for pod in pods:
        start = parse_time(pod.status.start_time or pod.metadata.creation_timestamp)
        gpus = state.gpu_demand(pod).total_milli / 1000
        if start is None or not gpus:
            continue
        hours += gpus * max((now - start).total_seconds(), 0.0) / 3600
        nodes.add(pod.spec.node_name)
    if not hours:
        return None
    rate = prices.rate(sorted(nodes))
    return FindingCost(id=NO_CHECKPOINT, object=obj, what="GPU-hours of work a preemption would throw away now",
                       gpu_hours=round(hours, 2), cost=rate.of(hours, "once") if rate else None)


def audit_json(report, state: ClusterState, prices: ClusterPrices) -> dict:
    """`kubegpu audit -o json`: the report with `costs` added, one per finding that has a price."""
    return {**msgspec.to_builtins(report), "costs": msgspec.to_builtins(finding_costs(state, report.findings, prices))}


def finding_costs(state: ClusterState, findings: list, prices: ClusterPrices) -> list[FindingCost]:
    """A price for each finding that has one (findings as the audit's structs or plain dicts)."""
    out = []
    by_workload = None
    for f in findings:
        fid = f["id"] if isinstance(f, dict) else f.id
        obj = f["object"] if isinstance(f, dict) else f.object
        if fid == NO_CHECKPOINT:
            by_workload = workload_pods(state) if by_workload is None else by_workload
            cost = checkpoint_risk(state, obj, prices, by_workload)
            if cost is not None:
                out.append(cost)
    return out
