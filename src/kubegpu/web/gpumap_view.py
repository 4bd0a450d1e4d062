"""The GPU map's data: per GPU node and physical device, its state and the pods on it.

The one place the dashboard reads device-level data from, so it can switch to a shared GPU-map
function later. Device states come from `fragmentation.plot.device_categories` (the same
categories `kubegpu frag --plot` draws); which pod sits on which device is replayed with the
NodeTable's own `place_on_devices` in the kubelet's pod order, so the map and the totals never
disagree. Kubernetes does not publish device indices, so the device of a pod is inferred.
"""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np

from kubegpu.fragmentation.plot import FREE, ISOLATED, PARTLY_FREE, STRANDED, USED, device_categories
from kubegpu.fragmentation.shapes import ShapeMix
from kubegpu.model.cluster import ClusterState
from kubegpu.model.nodetable import place_on_devices
from kubegpu.scheduling.placement.state import PlacementState

STATE_NAMES = {USED: "allocated", FREE: "free", PARTLY_FREE: "partly-free", STRANDED: "stranded",
               ISOLATED: "isolated"}

# Workload class from the controller kind: what an operator groups GPU pods by.
TRAINING_KINDS = {"Job", "PyTorchJob", "MPIJob", "TFJob", "RayCluster", "RayJob", "JobSet", "PodGroup"}
SERVING_KINDS = {"ReplicaSet", "Deployment", "StatefulSet", "InferenceService", "LeaderWorkerSet"}


class DevicePod(msgspec.Struct, frozen=True):
    pod: str
    milli: int
    workload: str
    priority: int


class Device(msgspec.Struct, frozen=True):
    index: int
    state: str              # allocated | partly-free | free | stranded | isolated
    used_milli: int
    pods: list[DevicePod]


class MapNode(msgspec.Struct, frozen=True):
    name: str
    pool: str
    gpu_model: str
    schedulable: bool
    devices: list[Device]

    def count(self, state: str) -> int:
        return sum(1 for d in self.devices if d.state == state)


def workload_class(pod) -> str:
    """training | serving | other | bare (no controller)."""
    ref = pod.controller
    if ref is None:
        return "bare"
    if ref.kind in TRAINING_KINDS:
        return "training"
    if ref.kind in SERVING_KINDS:
        return "serving"
    return "other"


def gpu_map(cluster: ClusterState, state: PlacementState, mix: ShapeMix) -> list[MapNode]:
    """Every GPU node with every physical device, in pool then name order."""
    cats = device_categories(state, mix)
    models = state.gpu_models
    out = []
    for i in np.flatnonzero(state.gpu_count > 0).tolist():
        name = state.names[i]
        total = state.dev_total[i].copy()
        used = np.zeros_like(total)
        holders: list[list[DevicePod]] = [[] for _ in range(len(total))]
        for pod in cluster.pods_by_node.get(name, []):
            demand = cluster.gpu_demand(pod, name)
            if not demand.num_gpu:
                continue
            before = used.copy()
            place_on_devices(used, total, demand)
            info = DevicePod(pod=pod.key, milli=0, workload=workload_class(pod), priority=cluster.priority_of(pod))
            for d in np.flatnonzero(used != before).tolist():
                holders[d].append(msgspec.structs.replace(info, milli=int(used[d] - before[d])))
        devices = [Device(index=d, state=STATE_NAMES.get(int(cats[i, d]), "free"),
                          used_milli=int(total[d] - state.dev_free[i, d]), pods=holders[d])
                   for d in range(int(state.gpu_count[i]))]
        model = models[state.gpu_model[i]] if state.gpu_model[i] >= 0 else "unknown"
        out.append(MapNode(name=name, pool=state.pool[i] or "(none)", gpu_model=model,
                           schedulable=bool(state.schedulable[i]), devices=devices))
    out.sort(key=lambda n: (n.pool, n.name))
    return out


def device_counts(nodes: list[MapNode]) -> Counter:
    """Devices per state over the map (what the page's legend counts)."""
    return Counter(d.state for n in nodes for d in n.devices)
