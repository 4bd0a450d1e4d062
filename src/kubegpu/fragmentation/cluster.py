"""From a ClusterState to what the fragmentation engine needs: a placement state and the workload.

The mix defaults to the cluster's own pods (every non-terminal pod, running or pending): what
a cluster runs is the best guess of what it will be asked to run. With a namespace scope (-n NS)
the mix is that namespace's pods, measured against the whole cluster's free capacity (capacity is
shared, so every pod stays placed). GPU demand is physical
(`ClusterState.gpu_demand`: time-slicing units and MIG slices folded into device shares).
"""

from __future__ import annotations

from kubegpu.fragmentation.report import FragReport, demand_sizes, frag_report
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape, mix_from_tasks
from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import GpuDemand
from kubegpu.model.namespaces import NamespaceScope
from kubegpu.model.nodetable import NodeTable
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import MILLI, Task

# Used only when a cluster has no pods at all and no --mix is given: every whole-GPU size alike.
WHOLE_GPU_SIZES_MIX = ShapeMix([TaskShape(cpu_milli=0, num_gpu=k, gpu_milli=MILLI) for k in (1, 2, 4, 8)])


def demand_task(requests: dict[str, int], demand: GpuDemand, name: str) -> Task:
    """`Task.from_demand` under the name the extender imports."""
    return Task.from_demand(requests, demand, name)


def pod_task(cluster: ClusterState, pod) -> Task:
    """A pod as a placement task (CPU milli, memory bytes, physical GPU demand).

    Remembered per pod on the state (`ClusterState.derived`): doctor's frag section, the defrag
    preview's before/after reports and the audit ask again for the same pods. A pod is not changed in
    place (a pod moved elsewhere is a new object), so its id names its node too."""
    memo: dict = cluster.derived.setdefault("fragmentation.pod_task", {})
    found = memo.get(id(pod))
    if found is not None and found[0] is pod:
        return found[1]
    task = Task.from_demand(cluster.pod_requests(pod), cluster.gpu_demand(pod), pod.key)
    memo[id(pod)] = (pod, task)  # the entry keeps the pod, so its id is not reused
    return task


def cluster_tasks(cluster: ClusterState, scope: NamespaceScope = NamespaceScope()) -> list[Task]:
    """Every non-terminal pod of the cluster (of the scope's namespace) as a task."""
    return [pod_task(cluster, p) for p in cluster.live_pods if scope.includes(p.namespace)]


def cluster_placement(cluster: ClusterState, table: NodeTable | None = None) -> PlacementState:
    """The cluster as a mutable placement state, with the request classes of the running pods."""
    table = table if table is not None else NodeTable.from_cluster(cluster)
    return PlacementState.from_node_table(table, placed=_placed(cluster, table))


def _placed(cluster: ClusterState, table: NodeTable) -> list[tuple[int, Task]]:
    """(row in `table`, task) of every running pod the table holds; remembered on the state for the last
    table asked (doctor's frag section and the defrag preview's report of the cluster as it stands share one)."""
    known = cluster.derived.get("fragmentation.placed")
    if known is not None and known[0] is table:
        return known[1]
    placed = [(row, pod_task(cluster, p)) for row, p in zip(table.bound_node.tolist(), table.bound_pods)]
    cluster.derived["fragmentation.placed"] = (table, placed)  # the entry keeps the table: its id is not reused
    return placed


def cluster_mix(cluster: ClusterState, scope: NamespaceScope = NamespaceScope()) -> ShapeMix:
    """The cluster's own workload mix (or every whole-GPU size alike when it has no pods)."""
    tasks = cluster_tasks(cluster, scope)
    return mix_from_tasks(tasks) if tasks else WHOLE_GPU_SIZES_MIX


def cluster_frag_report(cluster: ClusterState, mix: ShapeMix | None = None, *, table: NodeTable | None = None,
                        scope: NamespaceScope = NamespaceScope()) -> FragReport:
    """`kubegpu frag` for a cluster: physical GPUs, k-GPU capacity, stranded GPUs, the FGD measure."""
    if mix is not None:
        return frag_report(cluster_placement(cluster, table), mix, source="mix", namespace=scope.namespace)
    tasks = cluster_tasks(cluster, scope)
    has_gpu_pods = any(t.num_gpu > 0 for t in tasks)
    return frag_report(cluster_placement(cluster, table), mix_from_tasks(tasks) if tasks else WHOLE_GPU_SIZES_MIX,
                       source="pods" if has_gpu_pods else "default", namespace=scope.namespace,
                       demand=demand_sizes(tasks))
