"""The GPU model: what a node really has (physical devices) and what a pod really takes.

Kubernetes sees GPUs only as counted extended resources. Sharing schemes change what one unit
means: with time-slicing or MPS a unit is 1/replicas of a device; with MIG it is a slice; with
HAMi a pod names its share in gpucores / gpumem. Fragmentation is about physical devices, so
this module folds every scheme back into "devices of 1000 milli-GPU each".
"""

from __future__ import annotations

import re

import msgspec

from kubegpu.errors import InputError
from kubegpu.model.integers import int_or_none
from kubegpu.model.kinds import Node, Pod

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
HAMI_MEM = "nvidia.com/gpumem"
HAMI_MEM_PCT = "nvidia.com/gpumem-percentage"
HAMI_CORES = "nvidia.com/gpucores"
MIG_PREFIX = "nvidia.com/mig-"
MILLI = 1000

LABEL_PRODUCT = "nvidia.com/gpu.product"
LABEL_COUNT = "nvidia.com/gpu.count"
LABEL_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_STRATEGY = "nvidia.com/gpu.sharing-strategy"
LABEL_MEMORY = "nvidia.com/gpu.memory"
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
# Where a GPU model is named when GPU Feature Discovery is not installed (cloud node labels).
MODEL_LABELS = (LABEL_PRODUCT, "cloud.google.com/gke-accelerator", "k8s.amazonaws.com/accelerator",
                "kubernetes.azure.com/accelerator", "node.kubernetes.io/gpu.product")

# A MIG profile name: "1g.10gb", "3g.40gb", "1g.20gb+me"; the leading number is compute slices of 7.
_MIG_PROFILE = re.compile(r"^(\d+)g\.(\d+)gb")
_MIG_SLICES_PER_GPU = 7


class NodeGpu(msgspec.Struct, frozen=True, kw_only=True):
    """What one node offers, in physical terms."""

    model: str | None          # GFD product label, without the "-SHARED" suffix
    physical: int              # physical GPU devices
    replicas: int = 1          # time-slicing / MPS replicas per device
    sharing: str = "none"      # none | time-slicing | mps | mig-single | mig-mixed
    resource: str = GPU        # the resource name pods ask for
    advertised: int = 0        # allocatable units of `resource`
    memory_mib: int | None = None
    mig: dict[str, int] = {}   # mixed-strategy profile -> allocatable slices


def gpu_number(milli: int | float) -> int | float:
    """Milli-GPU as GPUs: an int when whole, else rounded to 3 decimals (the one format for GPU counts)."""
    milli = int(round(milli))
    return milli // MILLI if milli % MILLI == 0 else round(milli / MILLI, 3)


def is_gpu_resource(name: str) -> bool:
    """A resource whose units are (slices or shares of) GPUs: whole, shared (time-sliced/MPS), MIG."""
    return name in (GPU, GPU_SHARED) or name.startswith(MIG_PREFIX)


class GpuDemand(msgspec.Struct, frozen=True, kw_only=True):
    """What one pod takes: `num_gpu` devices with `gpu_milli` of each (1..1000)."""

    num_gpu: int = 0
    gpu_milli: int = 0
    models: frozenset[str] | None = None

    @property
    def total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli

    @property
    def shape(self) -> str:
        """"k GPUs" (whole devices) or "0.25 GPUs" (a share of one device): what labels print."""
        per = self.num_gpu if self.gpu_milli >= MILLI else gpu_number(self.total_milli)
        return f"{per} GPUs"

    @property
    def is_gpu(self) -> bool:
        return self.num_gpu > 0


# The most GPU devices one node can hold: real servers carry up to 16 (HGX/DGX) and even
# dense PCIe chassis far fewer than this. A larger count is a broken label or resource, and
# per-device arrays are sized by it, so it is refused rather than allocated.
MAX_GPUS_PER_NODE = 256
# nvidia.com/gpu.replicas (time-slicing/MPS) beyond this is not a configuration anyone runs.
MAX_REPLICAS = 1024
# The most GPU units one pod may ask for: far more than any cluster holds (a pod runs on one node
# of at most MAX_GPUS_PER_NODE devices, so beyond 256 it can never run, and `why` says so). Beyond
# this it is a typo or an attack ("1Ei"): refused when the pod is read, so every command agrees,
# and its milli-GPU (units x 1000) fit the int32 placement columns.
MAX_GPUS_PER_POD = 2**20


def _int_label(labels: dict[str, str], key: str) -> int | None:
    """A non-negative integer label as GFD writes it ("8"); anything else is no information."""
    return int_or_none(labels.get(key), lo=0, hi=999_999_999)


def mig_slices(profile: str) -> int:
    """Compute slices (of 7) that a MIG profile such as '3g.40gb' occupies."""
    m = _MIG_PROFILE.match(profile)
    return (int_or_none(m.group(1), lo=0) if m else None) or 1


def node_gpu(node: Node, allocatable: dict[str, int]) -> NodeGpu:
    """Read a node's physical GPUs from its resources and GFD / device-plugin labels.

    Refuses (InputError naming node and field) a node with more than MAX_GPUS_PER_NODE devices.
    """
    info = _node_gpu(node, allocatable)
    if info.physical > MAX_GPUS_PER_NODE:
        labels = node.metadata.labels
        field = (f"metadata.labels[{LABEL_COUNT}]" if _int_label(labels, LABEL_COUNT) == info.physical
                 else f"status.allocatable.{info.resource}")
        raise InputError(f"{info.physical} GPU devices on one node is beyond any real node "
                         f"(at most {MAX_GPUS_PER_NODE})", obj=node.ref, field=field)
    return info


def _node_gpu(node: Node, allocatable: dict[str, int]) -> NodeGpu:
    labels = node.metadata.labels
    product = next((labels[k] for k in MODEL_LABELS if labels.get(k)), None)
    if product and product.endswith("-SHARED"):
        product = product[: -len("-SHARED")]
    count_label = _int_label(labels, LABEL_COUNT)
    replicas = min(max(_int_label(labels, LABEL_REPLICAS) or 1, 1), MAX_REPLICAS)
    strategy = labels.get(LABEL_STRATEGY, "none")
    memory = _int_label(labels, LABEL_MEMORY)
    resource = GPU_SHARED if allocatable.get(GPU_SHARED) else GPU
    advertised = allocatable.get(resource, 0)
    mig = {name[len(MIG_PREFIX):]: n for name, n in allocatable.items()
           if name.startswith(MIG_PREFIX) and n > 0}

    if mig:
        slices = sum(mig_slices(p) * n for p, n in mig.items())
        physical = count_label or -(-slices // _MIG_SLICES_PER_GPU)
        return NodeGpu(model=product, physical=physical, sharing="mig-mixed", resource=resource,
                       advertised=advertised, memory_mib=memory, mig=mig)
    if labels.get(LABEL_MIG_STRATEGY) == "single" and product and "-MIG-" in product:
        # single strategy: every unit of nvidia.com/gpu is one slice; fold slices back to GPUs.
        per_gpu = _MIG_SLICES_PER_GPU // max(mig_slices(product.split("-MIG-", 1)[1]), 1)
        physical = -(-advertised // max(per_gpu, 1)) if advertised else 0
        return NodeGpu(model=product.split("-MIG-", 1)[0], physical=physical, replicas=max(per_gpu, 1),
                       sharing="mig-single", resource=resource, advertised=advertised, memory_mib=memory)
    if replicas > 1 or resource == GPU_SHARED:
        physical = count_label if count_label else advertised // replicas
        sharing = strategy if strategy in ("time-slicing", "mps") else "time-slicing"
        return NodeGpu(model=product, physical=physical, replicas=replicas, sharing=sharing,
                       resource=resource, advertised=advertised, memory_mib=memory)
    physical = advertised if advertised else 0
    return NodeGpu(model=product if physical else None, physical=physical, resource=resource,
                   advertised=advertised, memory_mib=memory)


def pod_gpu_demand(pod: Pod, requests: dict[str, int], node: NodeGpu | None = None) -> GpuDemand:
    """Physical GPU demand of a pod, read on the node it runs on (or would run on).

    Whole GPUs: k devices at 1000. Time-slicing/MPS replicas: each unit is 1000/replicas of a
    device (the device plugin may stack several units on one device). HAMi: gpucores (% of SMs)
    or gpumem sets the share of each device. MIG: a slice is its compute fraction of a GPU.
    """
    models = _pinned_models(pod)
    hami_cores = requests.get(HAMI_CORES)
    hami_mem = requests.get(HAMI_MEM)
    hami_pct = requests.get(HAMI_MEM_PCT)
    units = requests.get(GPU, 0) + requests.get(GPU_SHARED, 0)
    mig_units = {k[len(MIG_PREFIX):]: v for k, v in requests.items() if k.startswith(MIG_PREFIX)}

    if units and (hami_cores or hami_mem or hami_pct):
        share = MILLI
        if hami_cores:
            share = min(hami_cores * 10, MILLI)
        elif hami_pct:
            share = min(hami_pct * 10, MILLI)
        elif hami_mem and node and node.memory_mib:
            share = min(-(-hami_mem * MILLI // node.memory_mib), MILLI)
        return GpuDemand(num_gpu=units, gpu_milli=max(share, 1), models=models)
    if mig_units:
        milli = sum(mig_slices(p) * n for p, n in mig_units.items()) * MILLI // _MIG_SLICES_PER_GPU
        return GpuDemand(num_gpu=1, gpu_milli=min(max(milli, 1), MILLI), models=models)
    if units:
        replicas = node.replicas if node else 1
        if replicas > 1:
            # units replicas of 1/replicas each; shown as one device's share when they fit on one.
            milli = units * MILLI // replicas
            if milli <= MILLI:
                return GpuDemand(num_gpu=1, gpu_milli=max(milli, 1), models=models)
            return GpuDemand(num_gpu=-(-milli // MILLI), gpu_milli=MILLI, models=models)
        return GpuDemand(num_gpu=units, gpu_milli=MILLI, models=models)
    return GpuDemand(models=models)


def _pinned_models(pod: Pod) -> frozenset[str] | None:
    """GPU models a pod is pinned to through nodeSelector or a required In term on the product label."""
    # a pin names the label value, which GFD suffixes with "-SHARED" on shared GPUs: the model is without it
    wanted = next((pod.spec.node_selector[k] for k in MODEL_LABELS if pod.spec.node_selector.get(k)), None)
    if wanted:
        return frozenset({wanted.removesuffix("-SHARED")})
    aff = pod.spec.affinity
    req = aff.node_affinity.required_during_scheduling_ignored_during_execution if aff and aff.node_affinity else None
    if req:
        allowed: set[str] = set()
        for term in req.node_selector_terms:
            values = [e.values for e in term.match_expressions if e.key in MODEL_LABELS and e.operator == "In"]
            if not values:
                return None  # an ORed term without a model pin admits any model
            allowed.update(v.removesuffix("-SHARED") for v in values[0])
        return frozenset(allowed) if allowed else None
    return None
