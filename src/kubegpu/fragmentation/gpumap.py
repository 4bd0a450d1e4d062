"""The GPU map as data: per GPU node, per physical device, its state, owner pod, class and priority.

One pure function feeds every picture (the `frag --plot` PNG, the HTML report, the dashboard).
Device states:
  * used / partly-used: held by pods (the NodeTable's packing; the owner listed is the largest pod on it);
  * free: entirely free and usable by the reference pod size (the largest size of the demand);
  * stranded: free GPU that a pod of the reference size cannot use — exactly the devices that
    `stranded_by_size[reference_size]` counts (a partly-used device's free share included);
  * unavailable: free, on a node that takes no new pods (cordoned or NotReady: `scheduling.nodeready`; also
    counted as stranded by `stranded_by_size`).
The Kubernetes API does not say which device index a pod holds (the device plugin assigns them
inside the kubelet), so pods are *packed* onto devices in a stable order: the picture shows how
many devices each owner holds, not which ones.
"""

from __future__ import annotations

import msgspec
import numpy as np

from kubegpu.fragmentation.capacity import cpu_by_size, pods_that_fit
from kubegpu.fragmentation.cluster import cluster_placement
from kubegpu.fragmentation.report import FragReport
from kubegpu.fragmentation.shapes import ShapeMix
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.nodetable import NodeTable
from kubegpu.model.workload_class import workload_class
from kubegpu.model.gpu import MILLI, gpu_number

USED, PARTLY_USED, FREE, STRANDED, UNAVAILABLE = "used", "partly-used", "free", "stranded", "unavailable"
PACKING_NOTE = ("Device positions are packed: the Kubernetes API does not say which device index a pod holds, "
                "so each node shows how many devices its pods hold, in a stable order.")


class Device(msgspec.Struct, frozen=True):
    index: int
    state: str
    used_milli: int
    pod: str | None              # the first pod packed onto the device
    pods: list[str]              # every pod sharing it
    workload_class: str | None   # training | inference | other (of `pod`)
    priority: int | None         # of `pod`


class NodeMap(msgspec.Struct, frozen=True):
    name: str
    pool: str
    gpu_model: str | None
    schedulable: bool
    stranded_gpus: int | float
    devices: list[Device]


class GpuMap(msgspec.Struct, frozen=True):
    reference_size: int          # stranded is measured for pods of this many GPUs
    free_gpus: int | float
    stranded_gpus: int | float   # == stranded_by_size[reference_size] of the frag report
    nodes: list[NodeMap]
    note: str = PACKING_NOTE


def reference_size(report: FragReport) -> int:
    """The largest pod size of the demand (the size 'stranded' is measured for on the map)."""
    sizes = [int(k) for k, share in report.demand.gpu_share_by_size.items() if share > 0]
    return max(sizes, default=1)


def _owners(cluster: ClusterState, table: NodeTable, node: str, width: int) -> tuple[list[list[Pod]], ...]:
    """Pods per device, read from the NodeTable's one packing (`pod_devices`, what `used_milli` sums).

    On each device the largest pod (then the highest priority, then the key) comes first."""
    owners: list[list[Pod]] = [[] for _ in range(width)]
    pods = [p for p in cluster.pods_by_node.get(node, []) if p.key in table.pod_devices]
    pods.sort(key=lambda p: (-cluster.gpu_demand(p, node).total_milli, -cluster.priority_of(p), p.key))
    for pod in pods:
        for d in np.flatnonzero(table.pod_devices[pod.key][:width] > 0).tolist():
            owners[d].append(pod)
    return tuple(owners)


def gpu_map(cluster: ClusterState, report: FragReport, mix: ShapeMix | None = None,
            table: NodeTable | None = None) -> GpuMap:
    """The map of every GPU node, with stranded devices measured for the demand's largest pod size.

    Pass the `mix` the report was measured with so the CPU cap of k-GPU pods matches the report."""
    table = table if table is not None else NodeTable.from_cluster(cluster)
    state = cluster_placement(cluster, table)
    k = reference_size(report)
    cpu = cpu_by_size(mix, sizes=[k]).get(k) if mix is not None else None
    usable = pods_that_fit(state, k, cpu) * k  # whole free devices that k-GPU pods can take, per node
    nodes: list[NodeMap] = []
    total_stranded = 0
    for i in np.flatnonzero(state.gpu_count > 0):
        name = state.names[i]
        used = (state.dev_total[i] - state.dev_free[i])[: state.gpu_count[i]]
        owners = _owners(cluster, table, name, len(used))
        left = int(usable[i])
        devices = []
        stranded_milli = 0
        for d, u in enumerate(used):
            u = int(u)
            if u >= MILLI:
                kind = USED
            elif u > 0:
                kind = PARTLY_USED
            elif not state.schedulable[i]:
                kind = UNAVAILABLE
            elif left > 0:
                kind, left = FREE, left - 1
            else:
                kind = STRANDED
            if kind in (PARTLY_USED, STRANDED, UNAVAILABLE):
                stranded_milli += MILLI - u
            obj = owners[d][0] if owners[d] else None
            devices.append(Device(index=d, state=kind, used_milli=u, pod=obj.key if obj else None,
                                  pods=[p.key for p in owners[d]],
                                  workload_class=pod_class(cluster, obj) if obj else None,
                                  priority=cluster.priority_of(obj) if obj else None))
        total_stranded += stranded_milli
        node = cluster.node_by_name.get(name)
        nodes.append(NodeMap(name=name, pool=state.pool[i], gpu_model=cluster.node_gpus[name].model if node else None,
                             schedulable=bool(state.schedulable[i]),
                             stranded_gpus=gpu_number(stranded_milli), devices=devices))
    return GpuMap(reference_size=k, free_gpus=gpu_number(int(state.dev_free.sum())), stranded_gpus=gpu_number(total_stranded),
                  nodes=nodes)


def pod_class(cluster: ClusterState, pod) -> str:
    """training | inference | other, from the pod's outermost controller and its own spec."""
    top = cluster.top_controller(pod)
    return workload_class(top[0] if top else None, [(pod.spec, pod.labels)])
