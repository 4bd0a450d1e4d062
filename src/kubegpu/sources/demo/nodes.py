"""The 40 nodes: 10 p4de.24xlarge (8x A100-SXM4-80GB each) in two pools and 30 m6i.4xlarge.

Labels follow what the real agents write: kubelet (hostname, zone, instance type), EKS
(nodegroup, capacity type), NVIDIA GPU Feature Discovery and Node Feature Discovery.
Allocatable is capacity minus EKS's kube-reserved/eviction formula for the instance.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.sources.demo.builders import (
    GPU,
    GPU_TAINT,
    ago,
    condition,
    hex_token,
    obj,
    rfc3339,
    uid_for,
)

REGION = "us-east-1"
KUBELET_VERSION = "v1.35.2"
GPU_PRODUCT = "NVIDIA-A100-SXM4-80GB"
GFD_TIMESTAMP = "1764417600"  # 2025-11-29T12:00:00Z, when GFD last relabelled


@dataclass(frozen=True)
class InstanceType:
    """Capacity and allocatable of one EC2 instance type as the kubelet reports them."""

    name: str
    cpu: str
    cpu_allocatable: str
    memory: str
    memory_allocatable: str
    max_pods: int
    gpus: int = 0
    efa: int = 0


P4DE = InstanceType("p4de.24xlarge", "96", "95690m", "1176705588Ki", "1173526068Ki", 250, gpus=8, efa=4)
M6I = InstanceType("m6i.4xlarge", "16", "15890m", "64362668Ki", "61363372Ki", 234)


@dataclass(frozen=True)
class NodeSpec:
    """Where a node sits: pool, autoscaler node group, zone and instance type."""

    name: str
    index: int
    pool: str
    nodegroup: str
    zone: str
    instance: InstanceType

    @property
    def is_gpu(self) -> bool:
        return self.instance.gpus > 0

    @property
    def ip(self) -> str:
        third = {"us-east-1a": 16, "us-east-1b": 32, "us-east-1c": 48}[self.zone]
        return f"10.0.{third}.{10 + self.index}"


INFERENCE_NODES = tuple(f"gpu-inf-{i:02d}" for i in range(1, 5))
TRAINING_NODES = tuple(f"gpu-train-{i:02d}" for i in range(1, 7))
CPU_NODES = tuple(f"cpu-{i:02d}" for i in range(1, 31))
# The pitfall: six CPU nodes were added to the training GPU node group (one ASG, two shapes).
MIXED_CPU_NODES = CPU_NODES[24:]


def node_specs(variant: str) -> list[NodeSpec]:
    """The node inventory; only the node-group membership of cpu-25..30 differs by variant."""
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    specs = []
    for i, name in enumerate(INFERENCE_NODES):
        specs.append(NodeSpec(name, i, "inference", "gpu-inference", zones[i % 2], P4DE))
    training_group = "training-mixed" if variant == "pitfalls" else "gpu-training"
    for i, name in enumerate(TRAINING_NODES):
        # one zone for training: EFA traffic stays inside a cluster placement group
        specs.append(NodeSpec(name, 4 + i, "training", training_group, "us-east-1a", P4DE))
    for i, name in enumerate(CPU_NODES):
        # node labels come from the node group's launch template, so mixed-in CPU nodes say pool=training
        mixed = variant == "pitfalls" and name in MIXED_CPU_NODES
        specs.append(NodeSpec(name, 10 + i, "training" if mixed else "general",
                              training_group if mixed else "general", zones[i % 3], M6I))
    return specs


def _gpu_labels() -> dict:
    return {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/storage-nonrotationaldisk": "true",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-a100",
        "nvidia.com/cuda.driver-version.full": "570.195.03",
        "nvidia.com/cuda.driver-version.major": "570",
        "nvidia.com/cuda.driver-version.minor": "195",
        "nvidia.com/cuda.driver-version.revision": "03",
        "nvidia.com/cuda.driver.major": "570",
        "nvidia.com/cuda.driver.minor": "195",
        "nvidia.com/cuda.driver.rev": "03",
        "nvidia.com/cuda.runtime-version.full": "12.8",
        "nvidia.com/cuda.runtime-version.major": "12",
        "nvidia.com/cuda.runtime-version.minor": "8",
        "nvidia.com/cuda.runtime.major": "12",
        "nvidia.com/cuda.runtime.minor": "8",
        "nvidia.com/gfd.timestamp": GFD_TIMESTAMP,
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.driver": "pre-installed",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.machine": "p4de.24xlarge",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": GPU_PRODUCT,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.config": "all-disabled",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
        "vpc.amazonaws.com/efa.present": "true",
    }


def node_object(spec: NodeSpec, *, local_nvme: bool = False) -> dict:
    """A v1 Node, Ready, with GFD labels, the GPU taint and GPU/EFA allocatable on GPU nodes.

    `local_nvme`: the node bootstrap assembled the instance-store NVMe into /mnt/nvme and says so.
    """
    created = ago(days=41 - spec.index * 0.2)
    it = spec.instance
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": it.name,
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": spec.nodegroup,
        "eks.amazonaws.com/nodegroup-image": "ami-0c7a1e5d2f3b9a8e4",
        "failure-domain.beta.kubernetes.io/region": REGION, "failure-domain.beta.kubernetes.io/zone": spec.zone,
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": it.name, "pool": spec.pool,
        "topology.k8s.aws/zone-id": spec.zone.replace("us-east-1", "use1-az"),
        "topology.kubernetes.io/region": REGION, "topology.kubernetes.io/zone": spec.zone,
    }
    if spec.is_gpu:
        labels.update(_gpu_labels())
        if local_nvme:
            labels["node.kubernetes.io/local-nvme"] = "true"
    node = obj("v1", "Node", spec.name, created=created, labels=dict(sorted(labels.items())),
               annotations={"alpha.kubernetes.io/provided-node-ip": spec.ip,
                            "node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"})
    instance_id = "i-0" + hex_token("ec2/" + spec.name, 16)
    node["spec"] = {"providerID": f"aws:///{spec.zone}/{instance_id}"}
    if spec.is_gpu:
        node["spec"]["taints"] = [dict(GPU_TAINT)]
    capacity = {"cpu": it.cpu, "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": it.memory, "pods": str(it.max_pods)}
    allocatable = {**capacity, "cpu": it.cpu_allocatable, "ephemeral-storage": "95551679376",
                   "memory": it.memory_allocatable}
    if spec.is_gpu:
        for res in (capacity, allocatable):
            res[GPU] = str(it.gpus)
            res["vpc.amazonaws.com/efa"] = str(it.efa)
    beat = ago(seconds=17 + spec.index % 23)
    node["status"] = {
        "addresses": [{"type": "InternalIP", "address": spec.ip},
                      {"type": "InternalDNS", "address": f"ip-{spec.ip.replace('.', '-')}.ec2.internal"},
                      {"type": "Hostname", "address": spec.name}],
        "allocatable": dict(sorted(allocatable.items())),
        "capacity": dict(sorted(capacity.items())),
        "conditions": [_node_condition(t, s, r, m, beat, created) for t, s, r, m in (
            ("MemoryPressure", False, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", False, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", False, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", True, "KubeletReady", "kubelet is posting ready status"))],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"architecture": "amd64", "bootID": uid_for("Boot", None, spec.name),
                     "containerRuntimeVersion": "containerd://2.1.4",
                     "kernelVersion": "6.12.46-66.121.amzn2023.x86_64", "kubeProxyVersion": "",
                     "kubeletVersion": KUBELET_VERSION, "machineID": hex_token("machine/" + spec.name, 32),
                     "operatingSystem": "linux", "osImage": "Amazon Linux 2023.9.20251117",
                     "systemUUID": "ec2" + hex_token("uuid/" + spec.name, 5) + "-" + hex_token("u2/" + spec.name, 4)
                     + "-" + hex_token("u3/" + spec.name, 4) + "-" + hex_token("u4/" + spec.name, 4)
                     + "-" + hex_token("u5/" + spec.name, 12)},
    }
    return node


def _node_condition(ctype: str, status: bool, reason: str, message: str, beat, created) -> dict:
    c = condition(ctype, status, created, reason=reason, message=message, probe=False)
    return {"type": c["type"], "status": c["status"], "lastHeartbeatTime": rfc3339(beat),
            "lastTransitionTime": c["lastTransitionTime"], "reason": reason, "message": message}


def node_objects(variant: str) -> list[dict]:
    """Every Node of the variant, in a stable order (inference, training, CPU)."""
    return [node_object(s, local_nvme=variant == "clean") for s in node_specs(variant)]
