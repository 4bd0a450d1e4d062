"""Which nodes the scheduler looks at, and whether a job can ever fit the cluster at all."""

from __future__ import annotations

from kubegpu.errors import InputError
from kubegpu.model.text import counted
from kubegpu.simulate.autoscaler.estimator import PendingPod, estimate
from kubegpu.simulate.nodes import ClusterNodes
from kubegpu.simulate.workload import Job

# kube-scheduler (schedule_one.go numFeasibleNodesToFind): in clusters of 100+ nodes it stops
# filtering once it has found this many feasible nodes, starting where the last cycle stopped.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(num_all_nodes: int) -> int:
    """upstream default percentageOfNodesToScore (adaptive): 50 % - nodes/125, at least 5 %, at least 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def check_jobs_fit(cluster: ClusterNodes, jobs: list[Job]) -> None:
    """Every job must fit the cluster at its groups' max sizes, else it would wait forever: an input error."""
    seen: set[tuple] = set()
    for job in jobs:
        key = (job.task, job.pods, job.selector)
        if key in seen:
            continue
        seen.add(key)
        allowed = cluster.allowed(job.selector)
        pods = [PendingPod(job.id, job.task, allowed)] * job.pods
        room = sum(len(estimate(cluster.state, g.slots.start, pods, max(g.spec.max, g.spec.initial)).pods)
                   for g in cluster.groups if len(g.slots))
        if room < job.pods:
            where, _, fld = job.origin.partition(": field ")
            what = (f"{job.name}: a gang of {counted(job.pods, 'pod')} x {counted(job.task.num_gpu, 'GPU')} does not fit the cluster "
                    f"even at every node group's max size (room for {room})")
            raise InputError(what, where=where or None, field=(fld + ".pods") if fld else "pods")
