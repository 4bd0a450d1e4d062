"""What-if versions of a pod (one toleration more, one selector key less, fewer GPUs) and the
question every remedy asks of them: on how many nodes would this variant fit right now?"""

from __future__ import annotations

import msgspec

from kubegpu.model.kinds import Pod
from kubegpu.model.objects import Toleration
from kubegpu.scheduling.cycle import run_filters
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion


def _with_spec(pod: Pod, **changes) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, **changes))


def with_tolerations(pod: Pod, extra: list[Toleration]) -> Pod:
    return _with_spec(pod, tolerations=[*pod.spec.tolerations, *extra])


def without_selector_key(pod: Pod, key: str) -> Pod:
    return _with_spec(pod, node_selector={k: v for k, v in pod.spec.node_selector.items() if k != key})


def without_required_node_affinity(pod: Pod) -> Pod:
    aff = pod.spec.affinity
    if aff is None or aff.node_affinity is None:
        return pod
    na = msgspec.structs.replace(aff.node_affinity, required_during_scheduling_ignored_during_execution=None)
    return _with_spec(pod, affinity=msgspec.structs.replace(aff, node_affinity=na))


def with_resource(pod: Pod, resource: str, amount: int) -> Pod:
    """Every container's request/limit of `resource` scaled so the pod asks for `amount` in total."""
    containers = []
    remaining = amount
    for c in pod.spec.containers:
        res = c.resources
        has = resource in res.limits or resource in res.requests
        if not has:
            containers.append(c)
            continue
        value = remaining
        remaining = 0
        limits = {**res.limits, resource: str(value)} if resource in res.limits else res.limits
        requests = {**res.requests, resource: str(value)} if resource in res.requests else res.requests
        containers.append(msgspec.structs.replace(c, resources=msgspec.structs.replace(
            res, limits=limits, requests=requests)))
    return _with_spec(pod, containers=containers)


def fitting_nodes(snap: SchedulingSnapshot, pod: Pod, version: KubeVersion):
    """Indices of the nodes where `pod` passes every filter now."""
    return run_filters(snap, pod, version).feasible
