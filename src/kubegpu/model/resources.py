"""Effective resource requests of pods and allocatable of nodes, in scheduler units.

Units: cpu in milli-CPU, memory / ephemeral-storage / hugepages in bytes, every other
(extended) resource by upstream's Value() (whole units, rounded up). Parsing happens here,
once per object, so a bad quantity is reported with the object and the field that hold it.
"""

from __future__ import annotations

from kubegpu.errors import InputError, QuantityError
from kubegpu.model.gpu import MAX_GPUS_PER_POD, is_gpu_resource
from kubegpu.model.integers import INT64_MAX
from kubegpu.model.kinds import Node, Pod
from kubegpu.model.objects import Container
from kubegpu.model.quantity import resource_amount

Resources = dict[str, int]

# the columns every node has, in this order, before the scalar resources (NodeTable, snapshot)
CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def is_scalar_resource(name: str) -> bool:
    """upstream IsScalarResourceName: extended (domain-prefixed), hugepages, attachable volumes."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def parse_resource_list(values: dict, *, obj: str, field: str) -> Resources:
    """Parse a v1 ResourceList, naming object and field on error."""
    out: Resources = {}
    for name, value in values.items():
        try:
            out[name] = resource_amount(name, value)
        except QuantityError as err:
            raise InputError(err.message, obj=obj, field=f"{field}.{name}") from None
    return out


def _container_requests(c: Container, *, obj: str, field: str) -> Resources:
    """A container's requests, with limits standing in for unset requests.

    upstream: API defaulting (SetDefaults_Container) copies a limit into an unset request.
    """
    requests = parse_resource_list(c.resources.requests, obj=obj, field=f"{field}.resources.requests")
    limits = parse_resource_list(c.resources.limits, obj=obj, field=f"{field}.resources.limits")
    for name, amount in limits.items():
        requests.setdefault(name, amount)
    return requests


def _add(into: Resources, other: Resources) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: Resources, other: Resources) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def is_pod_level_resource(name: str) -> bool:
    """upstream IsSupportedPodLevelResource: cpu, memory and hugepages."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_requests(pod: Pod) -> Resources:
    """The pod's effective requests as kube-scheduler computes them.

    upstream (component-helpers PodRequests): sum of app containers plus restartable (sidecar)
    init containers, vs the largest regular init container plus the sidecars started before it;
    the max of the two, plus pod overhead.
    """
    obj = pod.ref
    total: Resources = {}
    for i, c in enumerate(pod.spec.containers):
        _add(total, _container_requests(c, obj=obj, field=f"spec.containers[{i}]"))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for i, c in enumerate(pod.spec.init_containers):
        req = _container_requests(c, obj=obj, field=f"spec.initContainers[{i}]")
        if c.restart_policy == "Always":
            _add(total, req)
            _add(sidecars, req)
            _max(init_peak, dict(sidecars))
        else:
            step = dict(req)
            _add(step, sidecars)
            _max(init_peak, step)
    _max(total, init_peak)
    level = pod.spec.resources
    if level is not None and (level.requests or level.limits):
        # KEP-2837: pod-level requests (defaulted from pod-level limits) replace the container
        # aggregate for the resources pod level supports; others stay as the containers ask
        pod_level = parse_resource_list(level.limits, obj=obj, field="spec.resources.limits")
        pod_level.update(parse_resource_list(level.requests, obj=obj, field="spec.resources.requests"))
        for name, amount in pod_level.items():
            if is_pod_level_resource(name):
                total[name] = amount
    if pod.spec.overhead:
        _add(total, parse_resource_list(pod.spec.overhead, obj=obj, field="spec.overhead"))
    _check_pod_total(pod, total)
    return {k: v for k, v in total.items() if v}


def _check_pod_total(pod: Pod, total: Resources) -> None:
    """Refuse a pod whose summed request is beyond int64, or whose GPU units are beyond MAX_GPUS_PER_POD."""
    for name, amount in total.items():
        gpu = is_gpu_resource(name)
        if amount <= (MAX_GPUS_PER_POD if gpu else INT64_MAX):
            continue
        field = _asking_field(pod, name)
        limit = (f"beyond any real cluster (at most {MAX_GPUS_PER_POD} per pod)" if gpu
                 else "beyond the largest value Kubernetes can hold (2^63-1)")
        raise InputError(f"{amount} {name} for one pod is {limit}", obj=pod.ref, field=field)


def _asking_field(pod: Pod, name: str) -> str:
    """The field that asks for `name`: the one container's, or every container's when several do."""
    fields = [f"spec.{kind}[{i}].resources.{part}.{name}"
              for kind, containers in (("containers", pod.spec.containers), ("initContainers", pod.spec.init_containers))
              for i, c in enumerate(containers)
              for part, values in (("requests", c.resources.requests), ("limits", c.resources.limits))
              if name in values and (part == "requests" or name not in c.resources.requests)]
    return fields[0] if len(fields) == 1 else f"spec.containers[*].resources.requests.{name}"


def node_allocatable(node: Node) -> Resources:
    """Allocatable resources (capacity where allocatable is absent, as kubelet reports)."""
    source = node.status.allocatable or node.status.capacity
    field = "status.allocatable" if node.status.allocatable else "status.capacity"
    return parse_resource_list(source, obj=node.ref, field=field)
