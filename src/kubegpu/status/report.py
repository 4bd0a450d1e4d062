"""The per-node status report (`kubegpu status`), computed from the NodeTable.

GPU numbers are physical devices: a time-sliced node with 4 GPUs x 8 replicas reports 4, and
its per-device use shows how the replicas are spread.
"""

from __future__ import annotations

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import gpu_number
from kubegpu.model.namespaces import NamespaceScope
from kubegpu.model.nodetable import NodeTable
from kubegpu.scheduling.nodeready import table_takes_new_pods


class GpuCounts(msgspec.Struct):
    total: int | float
    allocated: int | float
    free: int | float


class NodeStatusRow(msgspec.Struct):
    """One node. `pods`/`gpu_pods` count the pods in the namespace scope; GPU numbers are the node's."""

    name: str
    pool: str
    gpu_model: str | None
    gpus: GpuCounts
    sharing: str
    schedulable: bool        # takes new pods: neither cordoned nor NotReady (scheduling.nodeready)
    ready: bool              # the Ready condition is True
    pods: int
    gpu_pods: list[str]
    cpu: GpuCounts
    memory_gib: GpuCounts
    replicas: int = 1
    advertised: int = 0
    devices_milli_used: list[int] = []
    namespace_gpus: int | float = 0
    cordoned: bool = False   # spec.unschedulable


class Totals(msgspec.Struct):
    nodes: int
    gpu_nodes: int
    gpus: GpuCounts
    allocation_ratio: float


class StatusReport(msgspec.Struct):
    nodes: list[NodeStatusRow]
    totals: Totals
    source: str = ""
    server_version: str | None = None
    namespace: str | None = None


def _counts(total: int, used: int, scale: float = 1.0) -> GpuCounts:
    if scale == 1.0:
        return GpuCounts(total=total, allocated=used, free=total - used)
    return GpuCounts(total=round(total / scale, 2), allocated=round(used / scale, 2),
                     free=round((total - used) / scale, 2))


def cluster_status(state: ClusterState, table: NodeTable | None = None,
                   scope: NamespaceScope = NamespaceScope()) -> StatusReport:
    """Per-node GPU status and cluster totals; pods counted only in `scope` (nodes are cluster-scoped).

    `devices_milli_used` is every device's milli-GPU in use on every GPU node (shared or not), and
    `namespace_gpus` the GPUs held by the scope's pods on that node."""
    t = table if table is not None else NodeTable.from_cluster(state)
    takes = table_takes_new_pods(t)
    rows = []
    for i, node in enumerate(state.nodes):
        info = state.node_gpus[node.name]
        total = int(t.dev_total[i].sum())
        used = int(t.dev_used[i].sum())
        pods = [p for p in state.pods_by_node.get(node.name, []) if scope.includes(p.namespace)]
        demands = [state.gpu_demand(p, node.name) for p in pods]
        held = sum(d.total_milli for d in demands)
        rows.append(NodeStatusRow(
            name=node.name, pool=t.pool[i], gpu_model=info.model if info.physical else None,
            gpus=GpuCounts(total=gpu_number(total), allocated=gpu_number(used), free=gpu_number(total - used)),
            sharing=info.sharing, schedulable=bool(takes[i]), ready=node.is_ready,
            pods=len(pods),
            gpu_pods=sorted(p.key for p, d in zip(pods, demands) if d.is_gpu),
            cpu=_counts(int(t.cpu_alloc[i]), int(t.cpu_used[i]), 1000.0),
            memory_gib=_counts(int(t.mem_alloc[i]), int(t.mem_used[i]), float(2**30)),
            replicas=info.replicas, advertised=info.advertised,
            devices_milli_used=[int(x) for x in t.dev_used[i, : info.physical]],
            namespace_gpus=gpu_number(int(held)), cordoned=bool(t.cordoned[i]),
        ))
    total = int(t.dev_total.sum())
    used = int(t.dev_used.sum())
    totals = Totals(nodes=len(rows), gpu_nodes=int((t.gpu_count > 0).sum()),
                    gpus=GpuCounts(total=gpu_number(total), allocated=gpu_number(used), free=gpu_number(total - used)),
                    allocation_ratio=round(used / total, 4) if total else 0.0)
    return StatusReport(nodes=rows, totals=totals, source=state.source, server_version=state.server_version,
                        namespace=scope.namespace)
