"""The pod of an extender request: decoded with the model's decoder, its facts computed once.

kube-scheduler sends the Pod as plain v1 JSON, usually without apiVersion/kind (informer
objects carry no TypeMeta) and with Go's `null` for nil slices; both are accepted. A pod that
cannot be read is an InputError naming the field, which the edge turns into a 400 or an
extender `Error`, never a 500.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from kubegpu.errors import InputError
from kubegpu.fragmentation.cluster import demand_task
from kubegpu.model.decode import decode_object
from kubegpu.model.gpu import GPU, GPU_SHARED, GpuDemand, NodeGpu, pod_gpu_demand
from kubegpu.model.kinds import Pod
from kubegpu.model.resources import pod_requests
from kubegpu.placement.task import Task

_POD = msgspec.json.Decoder(Pod)


class _ShapeOf(msgspec.Struct):
    """What a pod's filter verdict depends on besides its name: namespace, labels, spec."""

    namespace: str
    labels: dict[str, str]
    spec: object


def decode_pod(raw: msgspec.Raw | None) -> Pod:
    """The request's Pod as a typed object (InputError naming the field when it cannot be read)."""
    if raw is None or bytes(memoryview(raw)[:4]) == b"null":
        raise InputError("the request has no Pod", field="Pod")
    try:
        pod = _POD.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        # the slow path words the error (object and field) and reads Go's null slices as unset
        try:
            body = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError) as err:
            raise InputError(f"Pod is not JSON: {err}", field="Pod") from None
        if not isinstance(body, dict):
            raise InputError("Pod is not a JSON object", field="Pod") from None
        obj = decode_object({**body, "apiVersion": "v1", "kind": "Pod"}, where="Pod")
        if not isinstance(obj, Pod):
            raise InputError("Pod is not a v1 Pod", field="Pod") from None
        pod = obj
    if not pod.metadata.name:
        raise InputError("the Pod has no name", obj="Pod", field="metadata.name")
    return pod


@dataclass
class PodFacts:
    """A request's pod and what every verb reads of it.

    `shape` keys the core's verdict: the spec, plus the namespace and labels only where a filter
    can read them (volumes and claims resolve in the namespace; affinity and spread terms, and
    other pods' anti-affinity, match labels). `gpu_shape` keys the GPU rules, which read only
    the requests and the GPU model pins.
    """

    pod: Pod
    requests: dict[str, int]
    shape: bytes
    gpu_shape: bytes
    gpu_units: int       # nvidia.com/gpu (+ .shared) units asked

    @classmethod
    def of(cls, pod: Pod, *, labels_matter: bool = True) -> "PodFacts":
        requests = pod_requests(pod)   # a bad quantity is an InputError naming the container
        spec = pod.spec
        own_terms = bool(spec.affinity or spec.topology_spread_constraints or spec.volumes or spec.resource_claims)
        if own_terms or labels_matter:
            shape = msgspec.json.encode(_ShapeOf(pod.namespace, pod.labels, spec))
        else:
            shape = msgspec.json.encode(_ShapeOf("", {}, spec))
        models = pod_gpu_demand(pod, requests, None).models
        gpu_shape = msgspec.json.encode((sorted(requests.items()), sorted(models) if models else None))
        return cls(pod, requests, shape, gpu_shape, requests.get(GPU, 0) + requests.get(GPU_SHARED, 0))

    def demand(self, node: NodeGpu | None) -> GpuDemand:
        """Physical GPU demand on a node of this kind (time-slicing and MIG change what a unit is)."""
        return pod_gpu_demand(self.pod, self.requests, node)

    def task(self, node: NodeGpu | None) -> Task:
        """The pod as a placement task on a node of this kind (the frag engine's pod_task rule)."""
        return demand_task(self.requests, self.demand(node), self.pod.key)
