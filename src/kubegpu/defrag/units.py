"""Move units: the pods that must be evicted together or not at all.

A gang (scheduling/gang.py: Volcano, coscheduling, Kueue, JobSet, LWS, KAI) restarts as a whole
when any member goes. So does a distributed training job that no gang layer marks: the workers
of one training-operator job (label training.kubeflow.org/job-name, trainer.kubeflow.org, or a
pod owned by a PyTorchJob/MPIJob/...), and the workers of an Indexed Job that runs more than one
pod at a time (torchrun's elastic agent tears every worker down when one disappears). Those are
failure domains rather than scheduling gangs, so they are grouped here, for defrag only.
"""

from __future__ import annotations

from collections import defaultdict

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.workload_class import DISTRIBUTED_KINDS
from kubegpu.scheduling.gang import find_gangs

TRAINING_JOB_LABELS = ("training.kubeflow.org/job-name", "trainer.kubeflow.org/trainjob-ancestor-step")
# pods owned directly by a training job co-fail: they move as one unit
TRAINING_OWNER_KINDS = DISTRIBUTED_KINDS
JOB_INDEX = "batch.kubernetes.io/job-completion-index"


def _cofailing_key(pod: Pod) -> str | None:
    for label in TRAINING_JOB_LABELS:
        value = pod.labels.get(label)
        if value:
            return f"{pod.namespace}/{value}"
    ref = pod.controller
    if ref is not None and ref.kind in TRAINING_OWNER_KINDS:
        return f"{pod.namespace}/{ref.kind.lower()}-{ref.name}"
    if ref is not None and ref.kind == "Job" and (JOB_INDEX in pod.labels or JOB_INDEX in pod.annotations):
        return f"{pod.namespace}/job-{ref.name}"
    return None


def move_groups(state: ClusterState, gangs=None) -> dict[str, str]:
    """pod key -> group name, for every bound pod that belongs to a group of two or more running pods.

    `gangs` (find_gangs(state)) may be passed by a caller that has it already."""
    groups: dict[str, list[str]] = defaultdict(list)
    for gang in (find_gangs(state) if gangs is None else gangs).values():
        for pod in gang.bound:
            groups[gang.key].append(pod.key)
    claimed = {k for keys in groups.values() for k in keys}
    for pod in state.live_pods:
        if not pod.is_bound or pod.key in claimed:
            continue
        key = _cofailing_key(pod)
        if key is not None:
            groups[key].append(pod.key)
    return {pod: name for name, keys in groups.items() if len(keys) > 1 for pod in keys}
