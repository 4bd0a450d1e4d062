"""Small GPU clusters whose every node exercises one rule kube-scheduler cannot see."""

from __future__ import annotations

from sched_builders import cluster, node, pod

GPU = "nvidia.com/gpu"
TOLERATE = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]


def shared_node(name, *, replicas, physical, strategy="time-slicing", product="Tesla-T4"):
    """A node whose GPUs are shared: `replicas` units per physical GPU (time-slicing / HAMi-style)."""
    # HAMi-style nodes also advertise gpucores (100 per GPU) so the core admits gpucores requests
    doc = node(name, gpus=replicas * physical, product=f"{product}-SHARED",
               extra={"nvidia.com/gpucores": str(100 * physical)},
               labels={"nvidia.com/gpu.replicas": str(replicas), "nvidia.com/gpu.count": str(physical),
                       "nvidia.com/gpu.sharing-strategy": strategy})
    return doc


def gpu_pod(name, *, gpus=1, node_name=None, cores=None, labels=None, selector=None, ns="ml", cpu="1",
            memory="4Gi", priority=None, annotations=None, start="2026-11-30T10:00:00Z"):
    extra = {"nvidia.com/gpucores": str(cores)} if cores else None
    return pod(name, ns=ns, gpus=gpus, node_name=node_name, extra=extra, labels=labels, node_selector=selector,
               tolerations=TOLERATE, cpu=cpu, memory=memory, priority=priority, annotations=annotations,
               owner=("Job", name.rsplit("-", 1)[0]), start=start)


def gpu_rules_docs() -> list[dict]:
    """Whole A100s, time-sliced T4s, HAMi-style shared A10s with uneven devices, and pending pods."""
    docs = [
        node("a100-0", gpus=8),
        node("a100-1", gpus=8),
        node("a100-2", gpus=8),
        shared_node("t4-ts-0", replicas=4, physical=2),
        shared_node("a10-share-0", replicas=10, physical=2, product="NVIDIA-A10"),
        node("cpu-0"),
        # a100-0: 6 of 8 GPUs busy; a100-1: 2 busy; a100-2 free
        gpu_pod("busy-a", gpus=6, node_name="a100-0"),
        gpu_pod("busy-b", gpus=2, node_name="a100-1"),
        # a10-share-0: two pods of 60% each leave 400m on each device
        gpu_pod("share-a", gpus=1, cores=60, node_name="a10-share-0"),
        gpu_pod("share-b", gpus=1, cores=60, node_name="a10-share-0"),
        # pending
        gpu_pod("one-gpu-0"),
        gpu_pod("two-units-0", gpus=2),
        gpu_pod("share-60-0", gpus=1, cores=60),
        gpu_pod("share-30-0", gpus=1, cores=30),
        gpu_pod("eight-0", gpus=8),
        gpu_pod("t4-pinned-0", selector={"nvidia.com/gpu.product": "Tesla-T4-SHARED"}),
    ]
    # a gang of three 8-GPU members (only a100-2 has 8 free): it must not be partly admitted
    for k in range(3):
        docs.append(gpu_pod(f"big-gang-{k}", gpus=8, labels={"scheduling.x-k8s.io/pod-group": "big"}))
    # a gang of two 2-GPU members that fits
    for k in range(2):
        docs.append(gpu_pod(f"small-gang-{k}", gpus=2, labels={"scheduling.x-k8s.io/pod-group": "small"}))
    return docs


def gpu_rules_cluster():
    return cluster(*gpu_rules_docs(), version="v1.33.0")
