"""A small synthetic GPU cluster for the sharing tests, as v1 objects."""

from __future__ import annotations

from kubegpu.sources.documents import snapshot_info_object


def node(name: str, *, gpus: int = 8, pool: str = "inf", cpu: str = "96", memory: str = "1024Gi") -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"pool": pool, "node.kubernetes.io/instance-type": "p4d.24xlarge",
                                                  "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
                                                  "nvidia.com/gpu.count": str(gpus)}},
            "spec": {}, "status": {"capacity": alloc, "allocatable": alloc,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, *, gpus: int, owner: tuple[str, str] | None, node_name: str | None = None, cpu: str = "2",
        memory: str = "8Gi", ns: str = "serving", created: str = "2026-11-30T10:00:00Z") -> dict:
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": created}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1" if owner[0] == "ReplicaSet" else "batch/v1",
                                    "kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}", "controller": True}]
    spec = {"containers": [{"name": "c", "image": "x", "resources": {
        "requests": {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": str(gpus)} if gpus else {})},
        "limits": {**({"nvidia.com/gpu": str(gpus)} if gpus else {})}}}]}
    status = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": created}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def three_node_pool() -> list[dict]:
    """node-a and node-b: 4 small inference pods + a 4-GPU training pod each; node-c: 2 inference pods;
    two 4-GPU training pods pending. Time-slicing x4 packs the 10 inference pods on 3 GPUs of node-c."""
    objs = [node("node-a"), node("node-b"), node("node-c")]
    i = 0
    for n, count in (("node-a", 4), ("node-b", 4), ("node-c", 2)):
        for _ in range(count):
            objs.append(pod(f"embed-{i}", gpus=1, owner=("ReplicaSet", "embed-7d9f"), node_name=n))
            i += 1
    objs.append(pod("train-a", gpus=4, owner=("Job", "train-a"), node_name="node-a", ns="ml", cpu="16",
                    memory="64Gi"))
    objs.append(pod("train-b", gpus=4, owner=("Job", "train-b"), node_name="node-b", ns="ml", cpu="16",
                    memory="64Gi"))
    for k in range(2):
        objs.append(pod(f"wait-{k}", gpus=4, owner=("Job", f"wait-{k}"), ns="ml", cpu="16", memory="64Gi"))
    objs.append(snapshot_info_object(server_version=None, captured_at="2026-11-30T12:00:00Z", source="test"))
    return objs
