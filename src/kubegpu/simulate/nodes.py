"""The simulated cluster's nodes: node groups, node slots in one PlacementState, and node lifetimes.

Every group gets `max(max, initial)` slots up front, so the PlacementState never changes shape;
a slot is ABSENT until the autoscaler creates a node in it. A node is billed from creation,
becomes Ready after its provisioning time, and takes pods only once its GPUs are allocatable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import MILLI
from kubegpu.simulate.scenario import NodeGroupSpec
from kubegpu.simulate.scenario_checks import quantity, seconds
from kubegpu.simulate.workload import Selector

ABSENT, PROVISIONING, READY, DELETING = 0, 1, 2, 3


@dataclass
class NodeGroup:
    index: int
    name: str
    spec: NodeGroupSpec
    slots: range
    cpu_milli: int
    mem_bytes: int
    provision_s: float
    jitter_s: float
    gpu_lag_s: float
    target: int = 0                 # nodes that exist or are being created (the cloud's target size)
    last_scale_up: float = float("-inf")
    last_scale_down: float = float("-inf")
    last_scale_down_fail: float = float("-inf")
    backoff_until: float = float("-inf")
    backoff_s: float = 0.0
    last_failure: float = float("-inf")

    @property
    def gpus(self) -> int:
        return self.spec.gpus


@dataclass
class NodeRecord:
    """One node's life, for billing and cycles: created -> ready -> deleted (None while alive)."""

    name: str
    group: str
    created: float
    ready: float | None = None
    deleted: float | None = None
    scale_up: int = -1              # id of the scale-up that created it (-1: present at start)
    reserved: bool = False
    failed: bool = False


@dataclass
class ClusterNodes:
    groups: list[NodeGroup]
    state: PlacementState
    group_of: np.ndarray
    status: np.ndarray
    record_of: list[int]            # slot -> index in records (-1 when absent)
    records: list[NodeRecord] = field(default_factory=list)
    pods_on: list[dict[tuple[int, int], tuple[int, ...]]] = field(default_factory=list)
    _masks: dict[Selector, np.ndarray] = field(default_factory=dict)

    def allowed(self, sel: Selector) -> np.ndarray:
        """Slots whose group labels match the nodeSelector and whose NoSchedule/NoExecute taints are tolerated."""
        mask = self._masks.get(sel)
        if mask is None:
            ok = np.array([matches(g.spec, sel) for g in self.groups] + [False], dtype=bool)
            mask = ok[self.group_of]
            self._masks[sel] = mask
        return mask

    def alive(self) -> np.ndarray:
        return self.status != ABSENT

    def count(self, group: NodeGroup, *statuses: int) -> int:
        s = self.status[group.slots.start:group.slots.stop]
        return int(np.isin(s, statuses).sum())

    def free_slot(self, group: NodeGroup) -> int | None:
        s = self.status[group.slots.start:group.slots.stop]
        idx = np.flatnonzero(s == ABSENT)
        return int(group.slots.start + idx[0]) if idx.size else None


def toleration_matches(toleration: str, taint: str) -> bool:
    """'key=value:Effect', 'key:Effect', 'key' (Exists) against a taint 'key=value:Effect' (kube semantics)."""
    t_kv, _, t_effect = taint.partition(":")
    t_key, _, t_value = t_kv.partition("=")
    kv, _, effect = toleration.partition(":")
    key, eq, value = kv.partition("=")
    if key and key != t_key:
        return False
    if eq and value != t_value:
        return False
    return not effect or effect == t_effect


def matches(spec: NodeGroupSpec, sel: Selector) -> bool:
    if any(spec.labels.get(k) != v for k, v in sel.node_selector):
        return False
    for taint in spec.taints:
        effect = taint.partition(":")[2]
        if effect in ("NoSchedule", "NoExecute") and not any(toleration_matches(t, taint) for t in sel.tolerations):
            return False
    return True


def build_cluster(specs: dict[str, NodeGroupSpec], *, where: str) -> ClusterNodes:
    groups: list[NodeGroup] = []
    names: list[str] = []
    cpu: list[int] = []
    mem: list[int] = []
    gpus: list[int] = []
    models: list[str] = []
    pods: list[int] = []
    start = 0
    for i, (name, spec) in enumerate(specs.items()):
        f = f"cluster.node_groups.{name}"
        n = max(spec.max, spec.initial)
        g = NodeGroup(index=i, name=name, spec=spec, slots=range(start, start + n),
                      cpu_milli=int(round(quantity(spec.cpu, where=where, field=f"{f}.cpu") * 1000)),
                      mem_bytes=int(quantity(spec.memory, where=where, field=f"{f}.memory")),
                      provision_s=seconds(spec.provision_time, where=where, field=f"{f}.provision_time"),
                      jitter_s=seconds(spec.provision_jitter, where=where, field=f"{f}.provision_jitter"),
                      gpu_lag_s=seconds(spec.gpu_ready_lag, where=where, field=f"{f}.gpu_ready_lag") if spec.gpus else 0.0)
        groups.append(g)
        for k in range(n):
            names.append(f"{name}-{k}")
            cpu.append(g.cpu_milli)
            mem.append(g.mem_bytes)
            gpus.append(spec.gpus)
            models.append(spec.gpu_model)
            pods.append(spec.max_pods)
        start += n
    width = max([1, *gpus])
    g_arr = np.asarray(gpus, dtype=np.int32)
    dev_total = np.where(np.arange(width)[None, :] < g_arr[:, None], MILLI, 0).astype(np.int32)
    model_names = sorted({m for m, k in zip(models, gpus) if m and k})
    index = {m: i for i, m in enumerate(model_names)}
    state = PlacementState(names=names, cpu_alloc=cpu, mem_alloc=mem, dev_total=dev_total.reshape(len(names), width),
                           gpu_model=[index.get(m, -1) for m in models], gpu_models=model_names, pods_alloc=pods,
                           schedulable=np.zeros(len(names), dtype=bool),
                           pool=[groups_name for g in groups for groups_name in [g.name] * len(g.slots)])
    group_of = np.asarray([g.index for g in groups for _ in g.slots], dtype=np.int32)
    return ClusterNodes(groups=groups, state=state, group_of=group_of, status=np.zeros(len(names), dtype=np.int8),
                        record_of=[-1] * len(names), pods_on=[{} for _ in names])
