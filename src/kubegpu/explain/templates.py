"""Node shapes the cluster can add: one per existing pool (its first node, emptied) and the
scale-from-zero templates Cluster API / Cluster Autoscaler annotations describe."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import GenericObject, Node
from kubegpu.model.objects import Taint
from kubegpu.model.pools import node_pool

CAPI_PREFIX = "capacity.cluster-autoscaler.kubernetes.io/"


@dataclass(frozen=True)
class NodeTemplate:
    group: str
    source: str      # "pool" or "MachineDeployment/ns/name"
    node: Node


def _capi_template(obj: GenericObject) -> NodeTemplate | None:
    ann = obj.annotations
    if not any(k.startswith(CAPI_PREFIX) for k in ann):
        return None
    alloc = {"pods": "110"}
    for key, res in (("cpu", "cpu"), ("memory", "memory"), ("ephemeral-disk", "ephemeral-storage")):
        if ann.get(CAPI_PREFIX + key):
            alloc[res] = ann[CAPI_PREFIX + key]
    gpu_type = ann.get(CAPI_PREFIX + "gpu-type", "nvidia.com/gpu")
    if ann.get(CAPI_PREFIX + "gpu-count"):
        alloc[gpu_type] = ann[CAPI_PREFIX + "gpu-count"]
    labels = dict(kv.split("=", 1) for kv in ann.get(CAPI_PREFIX + "labels", "").split(",") if "=" in kv)
    taints = []
    for spec in ann.get(CAPI_PREFIX + "taints", "").split(","):
        if "=" in spec and ":" in spec:
            key, rest = spec.split("=", 1)
            value, effect = rest.rsplit(":", 1)
            taints.append(Taint(key=key, value=value, effect=effect))
    name = f"template-{obj.name}"
    node = msgspec.convert({"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
                            "status": {"allocatable": alloc, "capacity": alloc}}, Node)
    node = msgspec.structs.replace(node, spec=msgspec.structs.replace(node.spec, taints=taints))
    return NodeTemplate(group=obj.name, source=obj.ref, node=node)


def node_templates(state: ClusterState) -> list[NodeTemplate]:
    """Every node shape a scale-up could add."""
    out: list[NodeTemplate] = []
    seen: set[str] = set()
    for node in state.nodes:
        pool = node_pool(node)
        if not pool or pool in seen:
            continue
        seen.add(pool)
        empty = msgspec.structs.replace(node, spec=msgspec.structs.replace(node.spec, unschedulable=False))
        out.append(NodeTemplate(group=pool, source="pool", node=empty))
    for obj in [*state.of_kind("MachineDeployment"), *state.of_kind("MachineSet")]:
        if isinstance(obj, GenericObject):
            t = _capi_template(obj)
            if t is not None:
                out.append(t)
    return out
