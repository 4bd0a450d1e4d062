"""Scale-down planning: candidates, removal simulation with drain rules, and what to delete now.

upstream (scaledown/planner/planner.go, simulator/cluster.go, simulator/drainability/rules/*,
scaledown/actuation): every pod of a non-empty candidate must be evictable (safe-to-evict not
"false", a controller recreates it, no local storage when skip-nodes-with-local-storage) and must
fit elsewhere on a forked snapshot (first passing node); a node that passes is removed from later
candidates' destinations. Deletion keeps each group above its min size; empty nodes up to
max-scale-down-parallelism, non-empty ones up to max-drain-parallelism.
"""

from __future__ import annotations

import numpy as np

from kubegpu.simulate.autoscaler.config import AutoscalerConfig
from kubegpu.simulate.autoscaler.estimator import first_fit
from kubegpu.simulate.autoscaler.scaledown.eligibility import underutilized
from kubegpu.simulate.nodes import READY, ClusterNodes
from kubegpu.simulate.workload import Job


def candidates(cluster: ClusterNodes, config: AutoscalerConfig, now: float) -> np.ndarray:
    """Ready nodes of autoscaled groups; with --scale-down-delay-type-local, not those of groups in cooldown."""
    ok = cluster.status == READY
    for g in cluster.groups:
        # a group at its min size can lose no node (NodeGroupMinSizeReached at actuation): its nodes
        # are not simulated at all, which also leaves their pods' destinations unreserved
        hide = not g.spec.autoscaled or g.target <= g.spec.min
        if config.scale_down_delay_type_local:
            hide |= (now < g.last_scale_up + config.scale_down_delay_after_add
                     or now < g.last_scale_down + config.scale_down_delay_after_delete
                     or now < g.last_scale_down_fail + config.scale_down_delay_after_failure)
        if hide:
            ok[g.slots.start:g.slots.stop] = False
    return np.flatnonzero(ok)


def drainable(job: Job, config: AutoscalerConfig) -> bool:
    if not job.safe_to_evict or not job.controller:
        return False
    return not (job.local_storage and config.skip_nodes_with_local_storage)


def unneeded_nodes(cluster: ClusterNodes, config: AutoscalerConfig, jobs: list[Job], now: float) -> tuple[list[int], set[int]]:
    """(removable slots in order, the empty ones among them)."""
    slots = candidates(cluster, config, now)
    if not slots.size:
        return [], set()
    slots = slots[underutilized(cluster.state, slots, config)]
    fork = None
    out: list[int] = []
    empty: set[int] = set()
    non_empty = 0
    for slot in slots.tolist():
        pods = cluster.pods_on[slot]
        if not pods:
            out.append(slot)
            empty.add(slot)
            if fork is not None:
                fork.schedulable[slot] = False
            continue
        if non_empty >= config.scale_down_non_empty_candidates_count:
            continue
        if not all(drainable(jobs[key[0]], config) for key in pods):
            continue
        non_empty += 1
        if fork is None:
            fork = cluster.state.copy()
            fork.schedulable[np.asarray(out, dtype=np.int64)] = False
        fork.schedulable[slot] = False
        moved = []
        for key in sorted(pods):
            job = jobs[key[0]]
            where = first_fit(fork, job.task, cluster.allowed(job.selector))
            if where is None:
                break
            fork.place(job.task, where)
            moved.append((job.task, where))
        if len(moved) == len(pods):
            out.append(slot)
        else:
            for task, where in moved:
                fork.remove(task, where)
            fork.schedulable[slot] = True
    return out, empty


def to_delete(cluster: ClusterNodes, config: AutoscalerConfig, removable: list[int], empty: set[int]) -> list[int]:
    """Which of the long-enough unneeded nodes go now: min sizes and parallelism limits."""
    left = {g.index: g.target - g.spec.min for g in cluster.groups}
    chosen: list[int] = []
    drains = 0
    for slot in sorted(removable, key=lambda s: (s not in empty, s)):  # empty nodes first
        g = int(cluster.group_of[slot])
        if left[g] <= 0:  # NodeGroupMinSizeReached
            continue
        if len(chosen) >= config.max_scale_down_parallelism:
            break
        if slot not in empty:
            if drains >= config.max_drain_parallelism:
                continue
            drains += 1
        left[g] -= 1
        chosen.append(slot)
    return chosen
