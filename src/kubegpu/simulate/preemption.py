"""DefaultPreemption for the simulator: which lower-priority pods to evict so a pending pod fits.

Same steps as kube-scheduler (and `kubegpu.scheduling.preemption`): only nodes that fail on
resources are tried (not on selector/taints: "UnschedulableAndUnresolvable"); per node remove every
strictly lower-priority pod, check the fit, then reprieve the most important victims first
(higher priority, then earlier start) while the pod still fits; the node is then picked by
upstream's criteria (`scheduling.preemption.pick_one_node`). Fit is the placement model's
`PlacementState.fits_on` (not the scheduling core's filters) on a one-node sub-state
(`PlacementState.rows`), with the placement state's documented omissions. No PDBs in the simulated
workloads, so none is violated.
Starting at node 0 (upstream starts at a random offset) keeps runs reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Placement, Task
from kubegpu.scheduling.preemption import (MIN_CANDIDATES_ABSOLUTE, MIN_CANDIDATES_PERCENTAGE, Candidate, Victim,
                                           pick_one_node)
from kubegpu.simulate.workload import Job

PodKey = tuple[int, int]  # (job id, member index)


@dataclass(frozen=True)
class RunningPod:
    key: PodKey
    task: Task
    devices: tuple[int, ...]
    priority: int
    start: float


def select_victims(state: PlacementState, slot: int, task: Task, lower: list[RunningPod]) -> list[RunningPod] | None:
    """upstream SelectVictimsOnNode: None when removing every lower-priority pod still does not make room."""
    one = state.rows([slot])  # what-if on a one-node copy, the cluster untouched
    for pod in lower:
        one.remove(pod.task, Placement(0, pod.devices))
    if not one.fits_on(task, 0):
        return None
    victims = []
    for pod in sorted(lower, key=lambda p: (-p.priority, p.start, p.key)):  # MoreImportantPod first
        one.place(pod.task, Placement(0, pod.devices))
        if not one.fits_on(task, 0):
            one.remove(pod.task, Placement(0, pod.devices))
            victims.append(pod)
    return victims


def _candidate(slot: int, name: str, victims: list[RunningPod]) -> Candidate:
    # pick_one_node reads info.priority and info.pod.status.start_time (RFC 3339 strings sort by time;
    # zero-padded seconds sort the same way)
    return Candidate(name, slot, [Victim(SimpleNamespace(priority=v.priority, key=v.key,
                                                         pod=SimpleNamespace(status=SimpleNamespace(
                                                             start_time=f"{v.start:020.3f}"))), False)
                                  for v in victims])


def find_preemption(state: PlacementState, task: Task, allowed: np.ndarray, priority: int,
                    pods_on: list[dict[PodKey, tuple[int, ...]]], jobs: list[Job],
                    starts: dict[PodKey, float]) -> tuple[int, list[PodKey]] | None:
    """(node slot, victim pods) that DefaultPreemption would choose for one pod, or None."""
    potential = np.flatnonzero(allowed & state.schedulable & state.model_mask(task.models if task.wants_gpu else None))
    limit = max(math.ceil(len(potential) * MIN_CANDIDATES_PERCENTAGE / 100), MIN_CANDIDATES_ABSOLUTE)
    candidates: list[Candidate] = []
    for slot in potential.tolist():
        lower = [RunningPod(key, jobs[key[0]].task, devs, jobs[key[0]].priority.value, starts[key])
                 for key, devs in pods_on[slot].items() if jobs[key[0]].priority.value < priority]
        if not lower:
            continue  # "No preemption victims found for incoming pod"
        victims = select_victims(state, slot, task, lower)
        if victims is None:
            continue
        candidates.append(_candidate(slot, state.names[slot], victims))
        if len(candidates) >= limit:
            break
    chosen = pick_one_node(candidates)
    if chosen is None:
        return None
    return chosen.index, [v.info.key for v in chosen.victims]
