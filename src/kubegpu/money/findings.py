"""Audit findings that have a computable price.

Pitfall 4, a training workload without checkpoint storage (KG-403): a preemption or eviction
restarts it from step 0, so every GPU-hour its running pods have done so far is at risk. Priced
at the rate of the nodes they run on.

Pitfall 3, an autoscaler that flaps (KG-301/KG-302, short scale-down delays): the cluster-autoscaler
status ConfigMap records only the current state, no history of scale-ups and downs, so the figure
is the documented waste of one flap cycle of one GPU node: billed while it boots (not yet usable)
and while it sits idle for --scale-down-unneeded-time before removal. The boot time is an
assumption (stated in `assumed`).

Pitfall 10 (and 8), GPUs idle behind slow storage (KG-805, inference loading weights from a network
filesystem): while each replica loads its weights its GPUs are held and do nothing. The model's
size is not in the cluster, so the figure is per GB of weights, per roll-out of every replica, at
the storage class's throughput as `kubegpu storage estimate` uses it. Other findings carry no price (yet).
"""

from __future__ import annotations

from collections import defaultdict

import msgspec

from kubegpu.storage.throughput import DEFAULT_THROUGHPUT, PROVISIONER_KINDS, load_seconds
from kubegpu.storage.volumes import spec_backends
from kubegpu.model.autoscaler import find_cluster_autoscalers
from kubegpu.model.cluster import ClusterState
from kubegpu.model.timeutil import parse_duration
from kubegpu.model.kinds import Pod
from kubegpu.model.timeutil import parse_time
from kubegpu.money.amount import HOURS_PER_DAY, Money
from kubegpu.money.cluster import ClusterPrices
from kubegpu.money.fixes import FixValue, fix_value
from kubegpu.money.waits import observed_at
from kubegpu.model.text import counted

NO_CHECKPOINT = "KG-403"
FLAPPING = ("KG-301", "KG-302")
SLOW_LOAD = "KG-805"
# node boot + driver + GPU ready: the seed-flapping scenario's provision_time 3m + jitter 1m + gpu_ready_lag 60s
BOOT_SECONDS = 300.0


class FindingCost(msgspec.Struct, frozen=True):
    id: str
    object: str
    what: str                    # what the figure is
    gpu_hours: float
    cost: Money | None
    assumed: str | None = None   # what the figure assumes when the cluster does not record it


def workload_pods(state: ClusterState) -> dict[tuple[str, str, str], list[Pod]]:
    """Running pods by (kind, namespace, name) of their outermost controller, in pod order: one pass
    over the pods for every finding (not one per finding)."""
    out: dict[tuple[str, str, str], list[Pod]] = defaultdict(list)
    for pod in state.live_pods:
        if pod.is_bound:
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


def flap_cycle_cost(state: ClusterState, fid: str, obj: str, prices: ClusterPrices) -> FindingCost | None:
    """One flap cycle of one GPU node of autoscaler `obj`: boot + unneeded-time billed for nothing."""
    ca = next((c for c in find_cluster_autoscalers(state) if c.workload.ref == obj), None)
    gpu_nodes = [g for g in prices.gpus.values() if g]
    if ca is None or not gpu_nodes:
        return None
    flag = "scale-down-unneeded-time"
    text, default = ca.value(flag)
    idle = parse_duration(text) or 0.0
    node_gpus = sum(gpu_nodes) / len(gpu_nodes)
    node_hours = (BOOT_SECONDS + idle) / 3600
    hours = node_hours * node_gpus
    rate = prices.rate()
    assumed = (f"one scale-up/scale-down cycle of one GPU node ({node_gpus:g} GPUs, the cluster's mean): "
               f"{BOOT_SECONDS / 60:g}m boot (assumed: provision 3m + 1m jitter + GPU ready 60s, as the seed-flapping "
               f"scenario) + --{flag}={text}{' (the default)' if default else ''} idle before removal = "
               f"{node_hours:.3f} node-hours; the autoscaler's status ConfigMap keeps no history of cycles")
    return FindingCost(id=fid, object=obj, what="GPU-hours billed for nothing per flap cycle of one GPU node",
                       gpu_hours=round(hours, 2), cost=rate.of(hours, "once") if rate else None, assumed=assumed)


def _throughput_kind(driver: str) -> str:
    d = driver.lower()
    return next((kind for kind, needles in PROVISIONER_KINDS if any(n in d for n in needles)), "network-fs")


def slow_load_cost(state: ClusterState, obj: str, prices: ClusterPrices,
                   by_workload: dict[tuple[str, str, str], list[Pod]] | None = None) -> FindingCost | None:
    """GPU-hours the pods of workload `obj` sit idle loading 1 GB of weights each, per roll-out
    (`by_workload`: `workload_pods(state)` when the caller has it)."""
    kind, _, rest = obj.partition("/")
    ns, _, name = rest.partition("/")
    by_workload = workload_pods(state) if by_workload is None else by_workload
    pods = [p for p in by_workload.get((kind, ns, name), []) if state.gpu_demand(p).total_milli]
    backends = [b for p in pods[:1] for b in spec_backends(state, p.spec, ns) if b.network_fs]
    if not pods or not backends:
        return None
    storage = _throughput_kind(backends[0].driver)
    throughput = DEFAULT_THROUGHPUT[storage]
    gpus = sum(state.gpu_demand(p).total_milli for p in pods) / 1000
    seconds = load_seconds(1e9, throughput)
    hours = gpus * seconds / 3600
    rate = prices.rate(sorted({p.spec.node_name for p in pods}))
    assumed = (f"1 GB of weights (the model's size is not in the cluster: multiply by its GB) read by each of "
               f"{counted(len(pods), 'replica')} ({counted(gpus, 'GPU')} held) from {backends[0].ref} at {throughput / 1e6:g} MB/s "
               f"({storage}, the default of `kubegpu storage estimate`) = {seconds:g} s per replica")
    return FindingCost(id=SLOW_LOAD, object=obj, what="GPU-hours held idle per GB of weights loaded, per roll-out",
                       gpu_hours=round(hours, 4), cost=rate.of(hours, "once") if rate else None, assumed=assumed)


def finding_fixes(costs: list[FindingCost], prices: ClusterPrices) -> list[FixValue]:
    """Priced findings whose fix saves something every day, for the doctor's "fix first" ranking:
    a flapping autoscaler's cycle, counted once a day (stated in the summary: no history says more)."""
    out = []
    for c in costs:
        if c.id in FLAPPING:
            out.append(fix_value("autoscaler", f"{c.object}: lengthen --scale-down-unneeded-time and "
                                 f"--scale-down-delay-after-add to 30m (pitfall 3); saves {c.gpu_hours:g} GPU-hours "
                                 "billed for nothing per flap cycle, one cycle a day assumed",
                                 prices=prices, frees_gpus=c.gpu_hours / HOURS_PER_DAY))
    return out


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
        elif fid in FLAPPING:
            cost = flap_cycle_cost(state, fid, obj, prices)
        elif fid == SLOW_LOAD:
            by_workload = workload_pods(state) if by_workload is None else by_workload
            cost = slow_load_cost(state, obj, prices, by_workload)
        else:
            cost = None
        if cost is not None and not (fid in FLAPPING and any(c.id in FLAPPING and c.object == obj for c in out)):
            out.append(cost)   # KG-301 and KG-302 on one autoscaler: one flap cycle, priced once
    return out
