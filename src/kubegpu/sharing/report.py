"""`kubegpu share`: candidates, the device plugin configuration, its check, the predicted effect and risks."""

from __future__ import annotations

from typing import Any

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import LABEL_MEMORY
from kubegpu.model.namespaces import NamespaceScope
from kubegpu.model.pools import node_pool
from kubegpu.money.amount import HOURS_PER_DAY, Money
from kubegpu.money.cluster import ClusterPrices, PricesUsed
from kubegpu.money.fixes import FixValue, fix_value
from kubegpu.sharing.candidates import Thresholds, pod_class, sharing_candidates
from kubegpu.sharing.config import (apply_steps, config_key, configmap, manifest_yaml, sharing_config,
                                    validate_config)
from kubegpu.sharing.predict import replay_sharing
from kubegpu.model.text import counted

# The risks the sharing facts list (NVIDIA device plugin README "Shared Access to GPUs"; GPU Operator docs).
RISKS = (
    "no memory or fault isolation under time-slicing: replicas share the GPU's memory, and if one workload "
    "crashes or runs out of memory, they all do (MPS gives each replica 1/replicas of memory and compute)",
    "a shared node advertises GPUs x replicas of nvidia.com/gpu: whatever counts that resource (cluster-autoscaler's "
    "scale-up estimates, ResourceQuota, dashboards) counts replicas as GPUs",
    "noisy neighbours: time slices are handed out in turn, so a busy replica slows the others on the same GPU",
    "with renameByDefault: false any 1-GPU pod that lands on a shared node gets a replica, not a GPU: keep whole-GPU "
    "pods off those nodes (or set renameByDefault: true and have the candidates request nvidia.com/gpu.shared)",
    "failRequestsGreaterThanOne: true makes a request for more than one GPU fail at kubelet admission on shared "
    "nodes (UnexpectedAdmissionError) instead of silently getting replicas",
)


class ShareCandidate(msgspec.Struct, frozen=True):
    pod: str
    workload: str | None
    node: str | None                 # None: pending
    gpus: float
    cpu_milli: int
    memory_bytes: int


class ShareConfig(msgspec.Struct, frozen=True):
    method: str                      # "timeSlicing"
    key: str                         # ConfigMap data key = node label value
    config: dict[str, Any]           # the device plugin config file
    configmap: str                   # the GPU Operator ConfigMap, YAML
    valid: bool
    errors: list[str]
    apply: list[str]


class Alternative(msgspec.Struct, frozen=True):
    method: str                      # "mps" | "mig"
    when: str
    config: dict[str, Any] | None = None


class Before(msgspec.Struct, frozen=True):
    before: float
    after: float


class SharePrediction(msgspec.Struct, frozen=True):
    shared_nodes: list[str]
    candidates_placed: int
    candidates_not_placed: list[str]
    candidate_gpus: Before            # GPUs the candidates hold today / devices they occupy shared
    pods_fit_now: Before              # pending GPU pods that fit (placed in turn, largest first)
    newly_fit: list[str]
    stranded_gpus: Before             # stranded GPUs for the cluster's demand: the pool's, then its unshared nodes'
    shared_free_gpus: float           # free capacity left on the shared nodes (usable by candidates only)
    whole_gpus_free: Before           # GPUs entirely free for whole-GPU work in the pool
    gpus_freed: float
    moved_pods: int                   # running pods that restart elsewhere
    displaced_not_placed: list[str]
    saves_gpu_hours_per_day: float
    saves_per_day: Money | None
    policy: str


class ShareReport(msgspec.Struct, frozen=True):
    pool: str | None
    nodes: int                        # GPU nodes in scope
    replicas: int
    candidates: list[ShareCandidate]
    config: ShareConfig | None
    alternatives: list[Alternative]
    prediction: SharePrediction | None
    risks: list[str]
    prices: PricesUsed
    message: str


def _workload(state: ClusterState, pod) -> str | None:
    top = state.top_controller(pod)
    return f"{top[0]}/{pod.namespace}/{top[1]}" if top else None


def _alternatives(state: ClusterState, nodes: list[str], replicas: int) -> list[Alternative]:
    by_name = {n.name: n for n in state.nodes}
    labels = by_name[nodes[0]].metadata.labels if nodes else {}
    memory = labels.get(LABEL_MEMORY, "")
    per = f" ({int(memory) // replicas} MiB each of {memory} MiB)" if memory.isdigit() else ""
    out = [Alternative(method="mps", when="the candidates need memory isolation: MPS gives each of the "
                       f"{replicas} replicas 1/{replicas} of the GPU's memory{per} and compute",
                       config=sharing_config("mps", replicas))]
    if labels.get("nvidia.com/mig.capable") == "true":
        product = labels.get("nvidia.com/gpu.product", "")
        profile = "all-1g.10gb" if "A100" in product and "80GB" in product else "<profile>"
        out.append(Alternative(method="mig", when="hardware isolation (memory, cache, faults): the GPUs are "
                               "MIG-capable; the GPU Operator's MIG manager partitions them when the nodes are "
                               f"labelled nvidia.com/mig.config={profile} (up to 7 slices per GPU)"))
    return out


def share_fix(report: ShareReport, prices: ClusterPrices) -> FixValue | None:
    """The sharing advice as a fix for the doctor's list: the whole GPUs it frees, when it frees any
    and every pod still fits (restarting inference replicas throws no training work away)."""
    p = report.prediction
    if p is None or p.gpus_freed <= 0 or p.displaced_not_placed or p.candidates_not_placed:
        return None
    where = f"pool {report.pool}" if report.pool else "the cluster"
    summary = (f"share: time-slice {len(p.shared_nodes)} node(s) of {where} x{report.replicas} for "
               f"{p.candidates_placed} inference pods; frees {p.gpus_freed:g} whole GPUs")
    return fix_value("share", summary, prices=prices, frees_gpus=p.gpus_freed, command="kubegpu share"
                     + (f" --pool {report.pool}" if report.pool else ""))


def share_report(state: ClusterState, prices: ClusterPrices, *, pool: str | None, replicas: int,
                 limits: Thresholds, scope: NamespaceScope = NamespaceScope()) -> ShareReport:
    """Advice for `pool` (None: every GPU node of the cluster)."""
    gpu_nodes = [n.name for n in state.nodes if state.node_gpus[n.name].physical
                 and (pool is None or node_pool(n) == pool)]
    in_scope = set(gpu_nodes)
    candidates = [p for p in sharing_candidates(state, limits, scope)
                  if p.is_unscheduled or p.spec.node_name in in_scope]
    rows = [ShareCandidate(pod=p.key, workload=_workload(state, p), node=p.spec.node_name or None,
                           gpus=state.gpu_demand(p).total_milli / 1000,
                           cpu_milli=int(state.pod_requests(p).get("cpu", 0)),
                           memory_bytes=int(state.pod_requests(p).get("memory", 0))) for p in candidates]
    empty = ShareReport(pool=pool, nodes=len(gpu_nodes), replicas=replicas, candidates=rows, config=None,
                        alternatives=[], prediction=None, risks=[], prices=prices.used(), message="")
    if not gpu_nodes:
        return msgspec.structs.replace(empty, message=f"no GPU nodes{f' in pool {pool}' if pool else ''}")
    if not candidates:
        return msgspec.structs.replace(empty, message="no sharing candidates: no small inference pod of one GPU "
                                                      "or less" + (f" in pool {pool}" if pool else ""))
    r = replay_sharing(state, gpu_nodes, candidates, replicas)
    if not r.shared_nodes:
        return msgspec.structs.replace(empty, message=f"{counted(len(candidates), 'candidate')}, none of them admitted by the "
                                       "nodes in scope (nodeSelector, node affinity, tolerations): nothing to share")
    product = state.node_gpus[r.shared_nodes[0]].model if r.shared_nodes else ""
    config = sharing_config("timeSlicing", replicas)
    key = config_key(product or "gpu", "timeSlicing", replicas)
    errors = validate_config(config)
    cfg = ShareConfig(method="timeSlicing", key=key, config=config,
                      configmap=manifest_yaml(configmap(key, config)), valid=not errors,
                      errors=errors, apply=apply_steps(key, r.shared_nodes))
    freed = float(r.whole_free_after - r.whole_free_before)
    rate = prices.rate(gpu_nodes)
    per_day = max(freed, 0.0) * HOURS_PER_DAY
    prediction = SharePrediction(
        shared_nodes=r.shared_nodes, candidates_placed=len(r.candidates_placed),
        candidates_not_placed=r.candidates_unplaced,
        candidate_gpus=Before(before=r.candidate_gpus_before, after=r.candidate_gpus_after),
        pods_fit_now=Before(before=len(r.fit_before), after=len(r.fit_after)),
        newly_fit=sorted(set(r.fit_after) - set(r.fit_before)),
        stranded_gpus=Before(before=r.stranded_before, after=r.stranded_after), shared_free_gpus=r.shared_free_gpus,
        whole_gpus_free=Before(before=r.whole_free_before, after=r.whole_free_after), gpus_freed=freed,
        moved_pods=r.moved, displaced_not_placed=r.displaced_unplaced,
        saves_gpu_hours_per_day=round(per_day, 2), saves_per_day=rate.of(per_day, "day") if rate else None,
        policy="bestfit")
    classes = sorted({pod_class(state, p) for p in candidates})
    head = f"{counted(len(candidates), '/'.join(classes) + ' pod')} of one GPU or less"
    if freed > 0 and not r.displaced_unplaced and not r.candidates_unplaced:
        message = (f"{head}: time-slicing x{replicas} on {counted(len(r.shared_nodes), 'node')} frees "
                   f"{counted(freed, 'whole GPU')} for whole-GPU work")
    else:
        why = [f"frees {counted(freed, 'whole GPU')}"]
        if r.displaced_unplaced:
            why.append(f"{counted(len(r.displaced_unplaced), 'pod')} moved off the shared "
                       f"{'node' if len(r.shared_nodes) == 1 else 'nodes'} would not fit again")
        if r.candidates_unplaced:
            why.append(f"{counted(len(r.candidates_unplaced), 'candidate')} would not fit")
        message = f"{head}: sharing does not pay here ({'; '.join(why)})"
    return ShareReport(pool=pool, nodes=len(gpu_nodes), replicas=replicas, candidates=rows, config=cfg,
                       alternatives=_alternatives(state, r.shared_nodes, replicas), prediction=prediction,
                       risks=list(RISKS), prices=prices.used(), message=message)
