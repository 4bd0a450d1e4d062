"""Small real-shaped clusters for defrag tests: v1 dicts, as `kubectl get -o json` would give them."""

from __future__ import annotations

import copy

from kubegpu.model.cluster import ClusterState
from kubegpu.sources.documents import Documents, load_cluster

NOW = "2026-12-01T12:00:00Z"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_node(name: str, gpus: int = 8, *, cpu: str = "96", memory: str = "1000Gi", pool: str = "training",
             taint: bool = True, unschedulable: bool = False, labels: dict | None = None) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {"kubernetes.io/hostname": name, "pool": pool,
                                    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                    "nvidia.com/gpu.count": str(gpus), **(labels or {})}},
            "spec": {"taints": [GPU_TAINT] if taint else [], "unschedulable": unschedulable},
            "status": {"capacity": alloc, "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def cpu_node(name: str, *, cpu: str = "32", memory: str = "128Gi") -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name}},
            "spec": {}, "status": {"capacity": alloc, "allocatable": alloc,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def owner(kind: str, name: str) -> list[dict]:
    api = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1"}.get(
        kind, "kubeflow.org/v1")
    return [{"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{kind}-{name}", "controller": True}]


def pod(name: str, node: str | None, gpus: int = 1, *, ns: str = "ml", cpu: str = "4", memory: str = "16Gi",
        kind: str | None = "ReplicaSet", controller: str | None = None, labels: dict | None = None,
        annotations: dict | None = None, priority: int | None = None, volumes: list | None = None,
        started: str = "2026-12-01T10:00:00Z", ready: bool = True, tolerate: bool = True,
        node_selector: dict | None = None) -> dict:
    res = {"cpu": cpu, "memory": memory}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    meta: dict = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                  "labels": {"app": controller or name, **(labels or {})}, "annotations": dict(annotations or {}),
                  "creationTimestamp": started}
    if kind:
        meta["ownerReferences"] = owner(kind, controller or name)
    spec: dict = {"containers": [{"name": "main", "image": "registry.example/train:1",
                                  "resources": {"requests": dict(res), "limits": dict(res)}}],
                  "tolerations": [GPU_TOLERATION] if tolerate else []}
    if priority is not None:
        spec["priority"] = priority
    if volumes:
        spec["volumes"] = volumes
    if node_selector:
        spec["nodeSelector"] = node_selector
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": started,
                  "conditions": [{"type": "PodScheduled", "status": "True"},
                                 {"type": "Ready", "status": "True" if ready else "False"}]}
    else:
        status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                      "reason": "Unschedulable"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pdb(name: str, selector: dict, *, ns: str = "ml", min_available=None, max_unavailable=None,
        status: dict | None = None) -> dict:
    spec: dict = {"selector": {"matchLabels": selector}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    out = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": name, "namespace": ns, "uid": f"uid-pdb-{name}"}, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def podgroup(name: str, min_member: int, *, ns: str = "ml") -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": min_member}}


def cluster(objects: list[dict], *, captured_at: str = NOW) -> ClusterState:
    docs = Documents(source="test")
    for o in objects:
        docs.add(copy.deepcopy(o), "test")
    state = load_cluster(docs)
    state.captured_at = captured_at
    return state


def fragmented(nodes: int = 4, gpus: int = 8, free_per_node: int = 1) -> list[dict]:
    """`nodes` GPU nodes with `free_per_node` free GPUs each, filled with 1-GPU ReplicaSet pods."""
    objs: list[dict] = []
    for i in range(nodes):
        name = f"gpu-{i}"
        objs.append(gpu_node(name, gpus))
        for j in range(gpus - free_per_node):
            objs.append(pod(f"w-{i}-{j}", name, 1, controller=f"svc-{i}"))
    return objs
