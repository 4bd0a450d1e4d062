"""Which pods are sharing candidates: small inference pods of one GPU or less.

Inference by the one workload-class rule the audit uses (model.workload_class); "small" by the
audit's KG-102 thresholds (CPU and memory requests), so `share` and the audit agree on who
would share a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.audit.catalog import CATALOG_BY_ID
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.namespaces import NamespaceScope
from kubegpu.model.quantity import resource_amount
from kubegpu.model.workload_class import INFERENCE, workload_class

MAX_GPU_MILLI = 1000      # one GPU or less


@dataclass(frozen=True)
class Thresholds:
    max_cpu_milli: int
    max_memory_bytes: int


def audit_thresholds() -> Thresholds:
    """KG-102's defaults: the audit's own idea of a small pod."""
    params = CATALOG_BY_ID["KG-102"].params
    return Thresholds(max_cpu_milli=resource_amount("cpu", str(params["max_cpu"])),
                      max_memory_bytes=resource_amount("memory", str(params["max_memory"])))


def default_replicas() -> int:
    return int(CATALOG_BY_ID["KG-102"].params["replicas"])


def pod_class(state: ClusterState, pod: Pod) -> str:
    top = state.top_controller(pod)
    return workload_class(top[0] if top else None, [(pod.spec, pod.labels)])


def is_candidate(state: ClusterState, pod: Pod, limits: Thresholds) -> bool:
    """A non-terminal inference pod asking one GPU or less, small in CPU and memory."""
    if pod.is_terminal:
        return False
    demand = state.gpu_demand(pod)
    if demand.num_gpu != 1 or demand.gpu_milli > MAX_GPU_MILLI:
        return False
    req = state.pod_requests(pod)
    if req.get("cpu", 0) > limits.max_cpu_milli or req.get("memory", 0) > limits.max_memory_bytes:
        return False
    return pod_class(state, pod) == INFERENCE


def sharing_candidates(state: ClusterState, limits: Thresholds, scope: NamespaceScope = NamespaceScope()) -> list[Pod]:
    """Every candidate pod of the scope, in pod key order."""
    return sorted((p for p in state.pods if scope.includes(p.namespace) and is_candidate(state, p, limits)),
                  key=lambda p: p.key)
