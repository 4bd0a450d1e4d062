"""What every check reads: the cluster state, the config, and derived views computed once.

Views (GPU workloads, free whole GPUs per node, pending GPU pods, cluster-autoscaler flags) are
cached on the context so ten families of checks do not each rebuild them.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any

import numpy as np

from kubegpu.audit.catalog import CATALOG_BY_ID
from kubegpu.audit.config import AuditConfig
from kubegpu.audit.workloads import GpuWorkload, gpu_workloads
from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import MILLI
from kubegpu.model.kinds import GenericObject, Node, Pod, Workload
from kubegpu.model.nodetable import NodeTable
from kubegpu.explain.batch import filter_key
from kubegpu.explain.summary import pending_summary
from kubegpu.fragmentation.cluster import cluster_frag_report
from kubegpu.scheduling.filters.noderesources import NAME as RESOURCE_FILTER
from kubegpu.scheduling.fit import devices_with_room
from kubegpu.scheduling.nodeready import table_takes_new_pods
from kubegpu.scheduling.cycle import filter_pod
from kubegpu.scheduling.snapshot import SchedulingSnapshot


class AuditContext:
    """`table`, `pending` and `frag` let a caller that computed them already (doctor) hand them in
    instead of having the checks compute the same NodeTable, why-summaries and frag report again."""

    def __init__(self, state: ClusterState, config: AuditConfig | None = None, *, table: NodeTable | None = None,
                 pending: list | None = None, frag: Any = None) -> None:
        self.state = state
        self.config = config or AuditConfig()
        self._resource_only: dict[bytes, np.ndarray] = {}  # filter key -> mask: replicas are filtered once
        if table is not None:
            self.table = table
        if pending is not None:
            self.pending_summaries = pending
        if frag is not None:
            self.frag_report = frag

    def param(self, check_id: str, name: str) -> Any:
        return self.config.param(CATALOG_BY_ID[check_id], name)

    # ---------------------------------------------------------------- workloads
    @cached_property
    def workloads(self) -> list[GpuWorkload]:
        return gpu_workloads(self.state)

    @cached_property
    def training(self) -> list[GpuWorkload]:
        return [w for w in self.workloads if w.role == "training"]

    @cached_property
    def distributed_training(self) -> list[GpuWorkload]:
        return [w for w in self.training if w.is_distributed]

    @cached_property
    def inference(self) -> list[GpuWorkload]:
        return [w for w in self.workloads if w.role == "inference"]

    @cached_property
    def whole_gpu_pod_sizes(self) -> Counter[int]:
        """Pods (replicas) per whole-GPU pod size, over workloads whose every pod takes whole GPUs."""
        sizes: Counter[int] = Counter()
        for w in self.workloads:
            k = w.gpus_per_pod
            if k and all(self.state.gpu_demand(p).gpu_milli >= MILLI for p in w.pods):
                sizes[k] += max(w.replicas, 1)
        return sizes

    # ---------------------------------------------------------------- nodes and GPUs
    @cached_property
    def table(self) -> NodeTable:
        return NodeTable.from_cluster(self.state)

    @cached_property
    def pending_summaries(self) -> list | None:
        """The explain engine's one-line summary per Pending GPU pod."""
        return pending_summary(self.state, version=self.state.k8s_version)

    @cached_property
    def frag_report(self) -> Any:
        """The fragmentation engine's report of this cluster."""
        return cluster_frag_report(self.state, table=self.table)  # the checks' NodeTable, not a second one

    @cached_property
    def gpu_nodes(self) -> list[Node]:
        return [n for n in self.state.nodes if self.state.node_gpus[n.name].physical > 0]

    @cached_property
    def free_whole_gpus(self) -> np.ndarray:
        """int[n]: fully free devices per node; 0 on cordoned or NotReady nodes (nothing lands there)."""
        t = self.table
        if t.n == 0:
            return np.zeros(0, dtype=np.int64)
        free = devices_with_room(t.dev_free, MILLI)
        return np.where(table_takes_new_pods(t), free, 0)

    def model_mask(self, models: frozenset[str] | None) -> np.ndarray:
        """bool[n]: nodes whose GPU model is one of `models` (all GPU nodes when None)."""
        t = self.table
        if models is None:
            return t.gpu_model >= 0
        wanted = [i for i, m in enumerate(t.gpu_models) if m in models]
        return np.isin(t.gpu_model, wanted)

    @cached_property
    def scheduling(self) -> SchedulingSnapshot:
        return SchedulingSnapshot.from_cluster(self.state)

    @cached_property
    def _state_order(self) -> np.ndarray:
        """int[len(state.nodes)]: each node's row in the scheduling snapshot."""
        index = self.scheduling.index
        return np.asarray([index[node.name] for node in self.state.nodes], dtype=np.int64)

    @cached_property
    def _labels_matter(self) -> bool:
        snap = self.scheduling
        return bool((snap.pod_anti & snap.alive).any())  # existing anti-affinity reads every pod's labels

    def resource_only_nodes(self, pod: Pod) -> np.ndarray:
        """bool[n] (state.nodes order): nodes where only resources keep the pod out.

        Every other filter of the scheduling core (taints, affinity, ports, volumes...) passes
        there, and the node has the pod's GPU model. Pods with one filter key (explain.batch: what
        the filters read of a pod) share one answer.
        """
        demand = self.state.gpu_demand(pod)
        key = filter_key(self.state, pod, None, self._labels_matter)
        known = self._resource_only.get(key)
        if known is not None:
            return known
        ok = filter_pod(self.scheduling, pod).mask_except(RESOURCE_FILTER)
        mask = ok[self._state_order] & self.model_mask(demand.models)
        self._resource_only[key] = mask
        return mask

    # ---------------------------------------------------------------- pods
    def pod_gpus(self, pod: Pod) -> int:
        """Whole devices a pod takes (0 for CPU pods and for shares of one device)."""
        d = self.state.gpu_demand(pod)
        return d.num_gpu if d.gpu_milli >= MILLI else 0

    @cached_property
    def pending_gpu_pods(self) -> list[Pod]:
        return [p for p in self.state.unscheduled_pods if self.state.gpu_demand(p).is_gpu]

    # ---------------------------------------------------------------- add-ons
    def deployments_like(self, *needles: str) -> list[Workload]:
        """Workloads whose name or any container image contains one of `needles`."""
        out = []
        for kind in ("Deployment", "StatefulSet", "DaemonSet"):
            for w in self.state.of_kind(kind):
                images = " ".join(c.image or "" for c in w.spec.template.spec.containers)
                if any(n in w.name or n in images for n in needles):
                    out.append(w)
        return out

    def crds(self, *kinds: str) -> list[GenericObject]:
        return [o for k in kinds for o in self.state.of_kind(k) if isinstance(o, GenericObject)]
