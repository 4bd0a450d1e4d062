"""A synthetic large cluster dump (v1 List JSON) for benchmarks: N GPU-heavy nodes, M pods.

Realistic shape: 3 pools (8-GPU training, 4-GPU inference, CPU), GPU taints, GFD labels,
pods with 1-8 GPUs owned by ReplicaSets/Jobs, and a tail of unscheduled pods. Seeded.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def node(i: int, pool: str, gpus: int) -> dict:
    labels = {"kubernetes.io/hostname": f"{pool}-{i:05d}", "pool": pool,
              "topology.kubernetes.io/zone": f"zone-{i % 3}"}
    alloc = {"cpu": "95", "memory": "1000Gi", "pods": "110", "ephemeral-storage": "3500Gi"}
    taints = []
    if gpus:
        labels |= {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": str(gpus),
                   "nvidia.com/gpu.present": "true"}
        alloc["nvidia.com/gpu"] = str(gpus)
        taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"{pool}-{i:05d}", "uid": f"node-{pool}-{i}", "labels": labels},
            "spec": {"taints": taints},
            "status": {"capacity": alloc, "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {"kubeletVersion": "v1.35.2"}}}


def spread_and_anti_affinity(app: str) -> dict:
    """Required anti-affinity (one pod of the app per node) and a zone spread constraint."""
    selector = {"matchLabels": {"app": app}}
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                           "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]}


def pod(j: int, node_name: str | None, gpus: int, rng: random.Random, *, affinity: bool = False) -> dict:
    requests = {"cpu": f"{rng.choice([500, 1000, 2000, 4000])}m", "memory": f"{rng.choice([1, 4, 16, 32])}Gi"}
    limits = dict(requests)
    if gpus:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(gpus)
    spec = {"containers": [{"name": "main", "image": "registry.example/train:1",
                            "resources": {"requests": requests, "limits": limits},
                            "env": [{"name": "NCCL_DEBUG", "value": "WARN"}]}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "priorityClassName": "training", "priority": 100}
    if affinity:
        spec |= spread_and_anti_affinity(f"job-{j // 4}")
    status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                  "reason": "Unschedulable"}]}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": "2026-11-30T00:00:00Z",
                  "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"job-{j:06d}", "namespace": f"team-{j % 20}", "uid": f"pod-{j}",
                         "labels": {"app": f"job-{j // 4}"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{j // 4}",
                                              "uid": f"job-{j // 4}", "controller": True}]},
            "spec": spec, "status": status}


def storage_for_node(name: str) -> list[dict]:
    """A GPU node's CSINode (the EBS driver attaches at most 25 volumes) and two local NVMe PVs."""
    out: list[dict] = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
                        "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": name,
                                              "allocatable": {"count": 25}}]}}]
    for k in range(2):
        out.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"nvme-{name}-{k}"},
                    "spec": {"capacity": {"storage": "3500Gi"}, "accessModes": ["ReadWriteOnce"],
                             "storageClassName": "local-nvme", "volumeMode": "Filesystem",
                             "local": {"path": f"/mnt/nvme{k}"}, "persistentVolumeReclaimPolicy": "Delete",
                             "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                 {"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}]}}},
                    "status": {"phase": "Available"}})
    return out


def claim(pod_doc: dict, klass: str, size: str, volume: str | None = None) -> list[dict]:
    """A claim for the pod (bound to `volume` when given, with its PV) and the volume in the pod."""
    ns, name = pod_doc["metadata"]["namespace"], f"data-{pod_doc['metadata']['name']}"
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": klass,
                    "resources": {"requests": {"storage": size}}}, "status": {"phase": "Pending"}}
    out = [pvc]
    if volume:
        pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        pvc["spec"]["volumeName"] = volume
        pvc["status"]["phase"] = "Bound"
        out.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
                    "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                             "storageClassName": klass, "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": volume},
                             "claimRef": {"name": name, "namespace": ns}},
                    "status": {"phase": "Bound"}})
    pod_doc["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
    return out


STORAGE_CLASSES = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local-nvme"},
     "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
     "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"}]


# Free GPUs left on each node by the fragmented variant (a random choice per node): 1-3 GPU holes
# everywhere, about 15% of the GPUs free, none where a 4- or 8-GPU pod fits without a move.
HOLES = {8: (0, 0, 1, 1, 2, 3), 4: (0, 0, 1, 1)}


def synthetic_cluster(nodes: int = 5000, pods: int = 50_000, pending: int = 1000, seed: int = 7,
                      affinity: bool = False, fragmented: bool = False, volumes: bool = False) -> dict:
    """A v1 List: 60% 8-GPU nodes, 20% 4-GPU nodes, 20% CPU nodes; pods packed onto them.

    `affinity`: every pending pod also carries a required pod anti-affinity (per node) and a
    DoNotSchedule zone spread constraint on its job's label (the running pods stay as they are).
    `fragmented`: each GPU node keeps a small hole free (`HOLES`) and the pending pods ask 4 or 8
    GPUs, so none fits as the cluster stands, and moving 1-3 small pods can make room.
    `volumes`: every GPU node has a CSINode with an EBS attach limit and two local NVMe PVs, every
    10th running pod an EBS claim, and every pending pod a claim of its own on local NVMe (a model
    cache), so VolumeBinding and NodeVolumeLimits do real work for each pending pod."""
    rng = random.Random(seed)
    items = []
    gpu_nodes = []
    for i in range(nodes):
        pool, gpus = ("training", 8) if i % 5 < 3 else ("inference", 4) if i % 5 == 3 else ("cpu", 0)
        items.append(node(i, pool, gpus))
        gpu_nodes.append((items[-1]["metadata"]["name"], gpus))
        if volumes and gpus:
            items.extend(storage_for_node(items[-1]["metadata"]["name"]))
    free = {name: g - (rng.choice(HOLES[g]) if fragmented and g else 0) for name, g in gpu_nodes}
    names = [name for name, _ in gpu_nodes]
    for j in range(pods - pending):
        want = rng.choice([0, 1, 1, 1, 2, 4, 8]) if j % 10 else 0
        name = names[rng.randrange(len(names))]
        for _ in range(8):
            if free[name] >= want:
                break
            name = names[rng.randrange(len(names))]
        if free[name] < want:
            want = 0
        free[name] -= want
        items.append(pod(j, name, want, rng))
        if volumes and j % 10 == 1:
            items.extend(claim(items[-1], "gp3", "100Gi", volume=f"ebs-{j}"))
    for j in range(pods - pending, pods):
        items.append(pod(j, None, rng.choice([4, 8] if fragmented else [1, 2, 4, 8]), rng, affinity=affinity))
        if volumes:
            items.extend(claim(items[-1], "local-nvme", "3000Gi"))
    if volumes:
        items.extend(STORAGE_CLASSES)
    items.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": "training"}, "value": 100})
    return {"apiVersion": "v1", "kind": "List", "items": items}


def write_synthetic(path: Path, **kwargs) -> Path:
    path.write_text(json.dumps(synthetic_cluster(**kwargs)))
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--affinity", action="store_true", help="pending pods with anti-affinity and spread")
    ap.add_argument("--fragmented", action="store_true", help="1-3 free GPUs per node; pending pods ask 4 or 8")
    ap.add_argument("--volumes", action="store_true", help="CSINode limits, local NVMe PVs, claims on pods")
    a = ap.parse_args()
    write_synthetic(a.out, nodes=a.nodes, pods=a.pods, pending=a.pending, affinity=a.affinity,
                    fragmented=a.fragmented, volumes=a.volumes)
