"""Binpacking estimator: how many new nodes of a group the pending pods need (first-fit decreasing).

upstream (estimator/binpacking_estimator.go, decreasing_pod_orderer.go): pods are ordered by
cpu/node_cpu + mem/node_mem of the template node (GPUs are not in the key); each pod first
tries the nodes already added in this estimate (first passing node, filters only, no scores),
then a fresh template node; when a fresh empty node cannot take the pod, no more nodes are added
for it. The fit is `PlacementState.fit_mask` on a state of template nodes: the one fit rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.placement.state import PlacementState
from kubegpu.placement.state import default_devices
from kubegpu.placement.task import Placement, Task


@dataclass(frozen=True)
class PendingPod:
    job: int
    task: Task
    allowed: np.ndarray   # bool per cluster slot (selector + taints)


@dataclass
class Estimate:
    nodes: int
    pods: list[PendingPod]   # the pods the new nodes would host
    cpu_milli: int = 0
    mem_bytes: int = 0


def template_state(state: PlacementState, slot: int, count: int) -> PlacementState:
    """`count` empty copies of node `slot` (the group's template), none open yet."""
    tmpl = state.rows(np.full(count, slot), empty=True)
    tmpl.names = [f"template-{i}" for i in range(count)]
    tmpl.schedulable[:] = False
    tmpl.tie_rank = np.arange(count, dtype=np.int64)
    return tmpl


def first_fit(state: PlacementState, task: Task, mask: np.ndarray) -> Placement | None:
    """The first node (index order) that passes the filters: cluster-autoscaler's placement check."""
    feasible = state.fit_mask(task) & mask
    idx = np.flatnonzero(feasible)
    if not idx.size:
        return None
    node = int(idx[0])
    return Placement(node, default_devices(state.dev_free[node], task))


def estimate(state: PlacementState, slot: int, pods: list[PendingPod], max_nodes: int) -> Estimate:
    """Nodes of the template at `slot` needed for `pods` (those that can run there at all)."""
    out = Estimate(0, [])
    if max_nodes <= 0:
        return out
    cpu, mem = max(int(state.cpu_alloc[slot]), 1), max(int(state.mem_alloc[slot]), 1)
    ordered = sorted(pods, key=lambda p: -(p.task.cpu_milli / cpu + p.task.mem_bytes / mem))
    tmpl = template_state(state, slot, max_nodes)
    everywhere = np.ones(max_nodes, dtype=bool)
    blocked: set[tuple] = set()
    for pod in ordered:
        if not pod.allowed[slot] or (pod.task, id(pod.allowed)) in blocked:
            continue
        where = first_fit(tmpl, pod.task, everywhere)
        if where is None and out.nodes < max_nodes:
            tmpl.schedulable[out.nodes] = True
            where = first_fit(tmpl, pod.task, everywhere)
            if where is None:  # a fresh node cannot take it: no node for this pod shape
                tmpl.schedulable[out.nodes] = False
                blocked.add((pod.task, id(pod.allowed)))
                continue
            out.nodes += 1
        if where is None:
            continue
        tmpl.place(pod.task, where)
        out.pods.append(pod)
        out.cpu_milli += pod.task.cpu_milli
        out.mem_bytes += pod.task.mem_bytes
    return out
