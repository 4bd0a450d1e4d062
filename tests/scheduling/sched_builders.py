"""Tiny v1 object builders for scheduling tests (wire-format dicts, decoded like a real dump)."""

from __future__ import annotations

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object

GPU = "nvidia.com/gpu"


def node(name, *, cpu="32", memory="256Gi", gpus=0, pods="110", labels=None, taints=None,
         unschedulable=False, extra=None, product="NVIDIA-A100-SXM4-80GB"):
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "500Gi"}
    lab = {"kubernetes.io/hostname": name, **(labels or {})}
    if gpus:
        alloc[GPU] = str(gpus)
        lab.setdefault("nvidia.com/gpu.product", product)
        lab.setdefault("nvidia.com/gpu.count", str(gpus))
    alloc.update(extra or {})
    spec = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab}, "spec": spec,
            "status": {"allocatable": alloc, "capacity": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name, *, ns="default", node_name=None, cpu="1", memory="1Gi", gpus=0, priority=None, labels=None,
        tolerations=None, node_selector=None, affinity=None, ports=None, volumes=None, phase=None,
        priority_class=None, nominated=None, owner=None, start="2026-11-30T10:00:00Z", extra=None,
        spread=None, init=None, overhead=None, preemption_policy=None, annotations=None):
    limits = {}
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        limits[GPU] = str(gpus)
    for k, v in (extra or {}).items():
        limits[k] = v
    container = {"name": "main", "image": "x", "resources": {"requests": requests, "limits": limits}}
    if ports:
        container["ports"] = ports
    spec = {"containers": [container], "tolerations": tolerations or []}
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if volumes:
        spec["volumes"] = volumes
    if spread:
        spec["topologySpreadConstraints"] = spread
    meta = {"name": name, "namespace": ns, "labels": labels or {}, "annotations": annotations or {},
            "uid": f"uid-{ns}-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1],
                                    "controller": True, "uid": "o"}]
    status = {"phase": phase or ("Running" if node_name else "Pending")}
    if node_name:
        status["startTime"] = start
    if nominated:
        status["nominatedNodeName"] = nominated
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def obj(kind, name, ns=None, api="v1", **body):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    meta.update(body.pop("metadata", {}))
    return {"apiVersion": api, "kind": kind, "metadata": meta, **body}


def cluster(*docs, version=None):
    return ClusterState([decode_object(d) for d in docs], server_version=version)
