"""ClusterState: every object of one cluster, typed and indexed for the engines.

Built once from a source's documents; engines treat it as immutable. Quantities of every pod
and node are parsed here, eagerly, so bad input fails at load time with the object's name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from kubegpu.model.gpu import GpuDemand, NodeGpu, node_gpu, pod_gpu_demand
from kubegpu.model.kinds import (
    Event,
    KubeObject,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
)
from kubegpu.model.resources import Resources, node_allocatable, pod_requests
from kubegpu.model.selectors import selector_matches


class ClusterState:
    """All objects of a cluster plus the indexes the engines use.

    `server_version` is the cluster's gitVersion ("v1.35.2") when known: what reports show.
    `k8s_version` (--k8s-version) overrides it for the wording of kube-scheduler messages only;
    the engines pick the wording with `version_of(server_version, k8s_version)`.
    `captured_at` is when the objects were read.
    """

    def __init__(self, objects: Iterable[KubeObject], *, server_version: str | None = None,
                 source: str = "", captured_at: str | None = None, k8s_version: str | None = None) -> None:
        self.objects: list[KubeObject] = list(objects)
        self.server_version = server_version
        self.k8s_version = k8s_version
        self.source = source
        self.captured_at = captured_at  # RFC3339; "now" for the state (ages, checkpoints)
        by_kind: dict[str, list[KubeObject]] = defaultdict(list)
        for obj in self.objects:
            by_kind[obj.kind].append(obj)
        self._by_kind = dict(by_kind)
        self.nodes: list[Node] = by_kind.get("Node", [])  # type: ignore[assignment]
        self.pods: list[Pod] = by_kind.get("Pod", [])  # type: ignore[assignment]
        self.node_by_name: dict[str, Node] = {n.name: n for n in self.nodes}
        self.allocatable: dict[str, Resources] = {n.name: node_allocatable(n) for n in self.nodes}
        self.requests: dict[str, Resources] = {p.key: pod_requests(p) for p in self.pods}
        self.node_gpus: dict[str, NodeGpu] = {n.name: node_gpu(n, self.allocatable[n.name])
                                              for n in self.nodes}
        pods_by_node: dict[str, list[Pod]] = defaultdict(list)
        for p in self.pods:
            if p.spec.node_name and not p.is_terminal:
                pods_by_node[p.spec.node_name].append(p)
        self.pods_by_node: dict[str, list[Pod]] = dict(pods_by_node)
        self._index = {(o.kind, o.metadata.namespace or "", o.metadata.name): o for o in self.objects}
        # GPU demand: on the pod's own node by id(pod) (the question asked most), on a node named by the
        # caller by (id(pod), node); each entry keeps its pod, so an id is not reused while it is remembered
        self._bound_demand: dict[int, tuple[Pod, GpuDemand]] = {}
        self._demand: dict[tuple[int, str], tuple[Pod, GpuDemand]] = {}
        self._top: dict[int, tuple[KubeObject, tuple[str, str] | None]] = {}  # id(obj): its top controller
        # facts engines derive from this state once (it does not change after it is built), keyed by
        # the deriving module's name: caches live on the object they derive from, never in module globals
        self.derived: dict[str, Any] = {}
        # object ref -> the file it was read from (snapshots), so a later error can name the file
        self.origins: dict[str, str] = {}

    # ------------------------------------------------------------ lookup
    def of_kind(self, kind: str) -> list:
        """Every object of one kind (e.g. "Deployment"), in source order."""
        return self._by_kind.get(kind, [])

    def get(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        return self._index.get((kind, namespace or "", name))

    def pod(self, namespace: str, name: str) -> Pod | None:
        obj = self.get("Pod", namespace, name)
        return obj if isinstance(obj, Pod) else None

    @property
    def kinds(self) -> list[str]:
        return sorted(self._by_kind)

    # ------------------------------------------------------------ pods
    @cached_property
    def live_pods(self) -> list[Pod]:
        """Pods not finished (phase neither Succeeded nor Failed), in source order: what most engines walk."""
        return [p for p in self.pods if not p.is_terminal]

    @cached_property
    def unscheduled_pods(self) -> list[Pod]:
        """Pods waiting for the scheduler (no nodeName, not finished)."""
        return [p for p in self.pods if p.is_unscheduled]

    def pod_requests(self, pod: Pod) -> Resources:
        req = self.requests.get(pod.key)
        return req if req is not None else pod_requests(pod)

    def gpu_demand(self, pod: Pod, node_name: str | None = None) -> GpuDemand:
        """Physical GPU demand of a pod, read on `node_name` (default: the node it is bound to).

        Remembered per (pod, node): the node table, the defrag problem and move costs all ask
        again for the same bound pods (~1.4M times at 20k nodes), and the state does not change
        after it is built.
        """
        own = pod.spec.node_name
        if not node_name or node_name == own:
            hit = self._bound_demand.get(id(pod))
            if hit is not None and hit[0] is pod:
                return hit[1]
            demand = pod_gpu_demand(pod, self.pod_requests(pod), self.node_gpus.get(own or ""))
            self._bound_demand[id(pod)] = (pod, demand)
            return demand
        found = self._demand.get((id(pod), node_name))
        if found is not None and found[0] is pod:
            return found[1]
        demand = pod_gpu_demand(pod, self.pod_requests(pod), self.node_gpus.get(node_name))
        self._demand[(id(pod), node_name)] = (pod, demand)
        return demand

    @cached_property
    def priority_classes(self) -> dict[str, PriorityClass]:
        return {pc.name: pc for pc in self.of_kind("PriorityClass")}

    def priority_of(self, pod: Pod) -> int:
        """spec.priority, else the value of its PriorityClass, else the global default, else 0."""
        if pod.spec.priority is not None:
            return pod.spec.priority
        pcs = self.priority_classes
        if pod.spec.priority_class_name and pod.spec.priority_class_name in pcs:
            return pcs[pod.spec.priority_class_name].value
        for pc in pcs.values():
            if pc.global_default:
                return pc.value
        return 0

    # ------------------------------------------------------------ owners, PDBs, events
    def controller_of(self, obj: KubeObject) -> KubeObject | None:
        """The object named by the controller ownerReference, when it is in the state."""
        for ref in obj.metadata.owner_references:
            if ref.controller:
                return self.get(ref.kind, obj.metadata.namespace, ref.name)
        return None

    def top_controller(self, pod: Pod) -> tuple[str, str] | None:
        """(kind, name) of the outermost controller: a ReplicaSet's Deployment, a Job's CronJob...

        Remembered per pod: the audit's workloads and templates and the money section each ask for every pod."""
        hit = self._top.get(id(pod))
        if hit is not None and hit[0] is pod:
            return hit[1]
        top = self._top_controller(pod)
        self._top[id(pod)] = (pod, top)
        return top

    def _top_controller(self, pod: Pod) -> tuple[str, str] | None:
        ref = pod.controller
        if ref is None:
            return None
        kind, name = ref.kind, ref.name
        current: KubeObject | None = self.get(kind, pod.metadata.namespace, name)
        seen = 0
        while current is not None and seen < 8:
            parent = next((r for r in current.metadata.owner_references if r.controller), None)
            if parent is None:
                break
            kind, name = parent.kind, parent.name
            current = self.get(kind, pod.metadata.namespace, name)
            seen += 1
        return kind, name

    @cached_property
    def _pdbs_by_namespace(self) -> dict[str, list[PodDisruptionBudget]]:
        out: dict[str, list[PodDisruptionBudget]] = defaultdict(list)
        for pdb in self.of_kind("PodDisruptionBudget"):
            out[pdb.namespace].append(pdb)
        return out

    def pdbs_for(self, pod: Pod) -> list[PodDisruptionBudget]:
        """PDBs whose selector matches the pod (same namespace; a nil selector matches nothing)."""
        return [pdb for pdb in self._pdbs_by_namespace.get(pod.namespace, [])
                if selector_matches(pdb.spec.selector, pod.labels)]

    @cached_property
    def _events_by_subject(self) -> dict[tuple[str, str, str], list[Event]]:
        out: dict[tuple[str, str, str], list[Event]] = defaultdict(list)
        for ev in self.of_kind("Event"):
            subj = ev.subject
            out[(subj.kind or "", subj.namespace or "", subj.name or "")].append(ev)
        return out

    def events_for(self, obj: KubeObject) -> list[Event]:
        return self._events_by_subject.get((obj.kind, obj.namespace, obj.name), [])

    # ------------------------------------------------------------ derived states
    def with_pods(self, pods: list[Pod]) -> "ClusterState":
        """The same cluster with its pods replaced (what-if states for defrag and simulate)."""
        others = [o for o in self.objects if o.kind != "Pod"]
        return ClusterState([*others, *pods], server_version=self.server_version, source=self.source,
                            captured_at=self.captured_at, k8s_version=self.k8s_version)
