"""GPU workloads as the audit sees them: pods grouped by their outermost controller.

A live cluster or a dump holds pods, their controllers (Deployments, Jobs...) and CRDs
(PyTorchJob, JobSet, InferenceService...). Lesson from Popeye #1: read pod templates of *all*
of them, not only Deployments, or GPU pools produce false positives. A workload is classified
as training (Jobs, training CRDs, torchrun env) or inference (long-running servers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import pod_gpu_demand

from kubegpu.model.integers import int_or_none
from kubegpu.model.kinds import GenericObject, KubeObject, Pod, Workload
from kubegpu.model.objects import ObjectMeta, PodSpec
from kubegpu.model.resources import pod_requests
from kubegpu.model.loose import loose
from kubegpu.model.workload_class import DISTRIBUTED_KINDS, RENDEZVOUS_ENV, workload_class



@dataclass(frozen=True)
class PodTemplate:
    """One pod shape of a workload: its labels, annotations, spec and how many pods use it."""

    labels: dict[str, str]
    annotations: dict[str, str]
    spec: PodSpec
    replicas: int = 1


@dataclass
class GpuWorkload:
    """Pods of one outermost controller (or one bare pod) and the templates they come from."""

    kind: str
    namespace: str
    name: str
    obj: KubeObject | None
    templates: list[PodTemplate] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    gpus_per_pod: int = 0

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    @property
    def replicas(self) -> int:
        """Pods the workload asks for (templates), or the pods seen when no template is known."""
        declared = sum(t.replicas for t in self.templates) if self.obj is not None and self.obj.kind != "Pod" \
            else 0
        return max(declared, len(self.pods))

    @property
    def specs(self) -> list[PodSpec]:
        """Every pod spec of the workload: templates first, then pods (pods carry admission defaults)."""
        return [t.spec for t in self.templates] + [p.spec for p in self.pods]

    @property
    def role(self) -> str:
        """'training', 'inference' or 'other' (kubegpu.model.workload_class)."""
        return workload_class(self.kind, [(t.spec, t.labels) for t in self.templates])

    @property
    def is_distributed(self) -> bool:
        """Several pods that form one job (rendezvous env, a distributed-training CRD, torchrun --nnodes>1).

        A plain Job with parallelism 12 of independent trials is not distributed: its pods never talk.
        """
        if self.replicas < 2:
            return False
        if self.kind in DISTRIBUTED_KINDS or any(has_env(self.specs, name) for name in RENDEZVOUS_ENV):
            return True
        for spec in self.specs:
            for c in spec.containers:
                line = [*c.command, *c.args]
                for flag in ("--nnodes", "--num_nodes", "--num-nodes"):
                    for i, token in enumerate(line):
                        value = token.split("=", 1)[1] if token.startswith(flag + "=") else (
                            line[i + 1] if token == flag and i + 1 < len(line) else None)
                        if value is not None and (int_or_none(value.split(":")[-1]) or 0) > 1:
                            return True
        return False

    @property
    def pod_labels(self) -> list[dict[str, str]]:
        return [t.labels for t in self.templates] + [p.labels for p in self.pods]


def spec_gpu_count(spec: PodSpec, *, name: str = "template") -> int:
    """GPU devices a pod of this template takes (its GpuDemand, read without a node)."""
    pod = Pod(metadata=ObjectMeta(name=name), spec=spec)
    return pod_gpu_demand(pod, pod_requests(pod)).num_gpu


def env_value(specs: list[PodSpec], name: str) -> str | None:
    """The first literal value of env `name` in any app container of the specs."""
    for spec in specs:
        for c in spec.containers:
            for e in c.env:
                if e.name == name and e.value is not None:
                    return e.value
    return None


def has_env(specs: list[PodSpec], name: str) -> bool:
    return any(e.name == name for spec in specs for c in spec.containers for e in c.env)


# ---------------------------------------------------------------- templates of controllers and CRDs

def _as_int(value: Any, default: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _decode_template(raw: dict[str, Any], replicas: int) -> PodTemplate | None:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    spec = raw.get("spec")
    try:
        decoded = msgspec.convert(spec, PodSpec, strict=False)
    except (msgspec.ValidationError, TypeError):
        return None  # a CRD field shaped like a template but not one: skip, never fatal
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    return PodTemplate(labels={str(k): str(v) for k, v in labels.items()},
                       annotations={str(k): str(v) for k, v in annotations.items()},
                       spec=decoded, replicas=max(replicas, 0))


def _is_pod_spec(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("containers"), list) and all(
        isinstance(c, dict) for c in value["containers"])


def crd_templates(body: Any, multiplier: int = 1, depth: int = 0) -> Iterator[PodTemplate]:
    """Pod templates anywhere in a CRD body, with replicas multiplied along the path.

    PyTorchJob `pytorchReplicaSpecs.Worker{replicas, template}`, JobSet `replicatedJobs[]{replicas,
    template.spec{parallelism, template}}`, KServe `predictor{minReplicas, containers}`...
    """
    if depth > 12:
        return
    if isinstance(body, list):
        for item in body:
            yield from crd_templates(item, multiplier, depth + 1)
        return
    if not isinstance(body, dict):
        return
    count = multiplier * _as_int(body.get("replicas", body.get("parallelism", body.get("minReplicas"))))
    template = body.get("template")
    if isinstance(template, dict) and _is_pod_spec(template.get("spec")):
        t = _decode_template(template, count)
        if t is not None:
            yield t
    elif _is_pod_spec(body) and depth > 0:
        t = _decode_template({"spec": body}, count)
        if t is not None:
            yield t
        return
    for key, value in body.items():
        if key in ("metadata", "status"):
            continue
        if key == "template" and isinstance(value, dict) and _is_pod_spec(value.get("spec")):
            continue  # already yielded above
        yield from crd_templates(value, count, depth + 1)


def controller_templates(obj: KubeObject) -> list[PodTemplate]:
    """The pod templates of a controller object (built-in workloads, CronJobs and CRDs)."""
    if isinstance(obj, Workload):
        spec = obj.spec
        if obj.kind == "Job":
            replicas = spec.parallelism if spec.parallelism is not None else 1
        elif obj.kind == "DaemonSet":
            replicas = 1
        else:
            replicas = spec.replicas if spec.replicas is not None else 1
        t = spec.template
        return [PodTemplate(labels=t.metadata.labels, annotations=t.metadata.annotations, spec=t.spec,
                            replicas=replicas)]
    if isinstance(obj, GenericObject):
        return list(crd_templates(loose(obj).get("spec", dict, {}), 1, 1))
    return []


# ---------------------------------------------------------------- grouping

def _is_controller(obj: KubeObject) -> bool:
    return isinstance(obj, Workload) or (isinstance(obj, GenericObject) and obj.kind != "List")


def gpu_workloads(state: ClusterState) -> list[GpuWorkload]:
    """Every workload with at least one GPU-requesting pod or template, in a stable order."""
    groups: dict[tuple[str, str, str], GpuWorkload] = {}
    owned: set[tuple[str, str, str]] = set()  # ReplicaSets / Jobs whose parent is in the state
    for obj in state.objects:
        if _is_controller(obj) and obj.kind != "Pod":
            if state.controller_of(obj) is not None:
                owned.add((obj.kind, obj.namespace, obj.name))
    for obj in state.objects:
        if not _is_controller(obj) or (obj.kind, obj.namespace, obj.name) in owned:
            continue
        templates = controller_templates(obj)
        if not templates:
            continue
        groups[(obj.kind, obj.namespace, obj.name)] = GpuWorkload(
            kind=obj.kind, namespace=obj.namespace, name=obj.name, obj=obj, templates=templates)
    for pod in state.live_pods:
        top = state.top_controller(pod)
        key = (top[0], pod.namespace, top[1]) if top else ("Pod", pod.namespace, pod.name)
        group = groups.get(key)
        if group is None:
            obj = state.get(key[0], key[1], key[2]) if top else pod
            group = groups[key] = GpuWorkload(kind=key[0], namespace=key[1], name=key[2], obj=obj)
        group.pods.append(pod)
    out = []
    for group in groups.values():
        from_pods = not group.templates
        # templates made from the group's own pods count as those pods: their requests are parsed already
        declared = 0 if from_pods else max(spec_gpu_count(t.spec) for t in group.templates)
        group.gpus_per_pod = max(declared, max((state.gpu_demand(p).num_gpu for p in group.pods), default=0))
        if group.gpus_per_pod <= 0:
            continue  # not a GPU workload: no templates made for it (most groups of a big cluster are CPU pods)
        if from_pods:
            seen: set[tuple] = set()
            for pod in group.pods:
                shape = tuple((c.image, c.name) for c in pod.spec.containers)
                if shape not in seen:
                    seen.add(shape)
                    group.templates.append(PodTemplate(labels=pod.labels, annotations=pod.annotations,
                                                       spec=pod.spec, replicas=1))
        out.append(group)
    return out


def all_pod_templates(state: ClusterState) -> Iterator[tuple[str, PodTemplate]]:
    """(owner kind, template) for every pod and every controller/CRD template in the state."""
    for pod in state.live_pods:
        top = state.top_controller(pod)
        yield (top[0] if top else "Pod"), PodTemplate(labels=pod.labels, annotations=pod.annotations, spec=pod.spec)
    for obj in state.objects:
        if _is_controller(obj):
            for t in controller_templates(obj):
                yield obj.kind, t
