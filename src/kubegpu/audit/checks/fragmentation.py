"""Pitfall 1: fragmentation, whole GPUs held by small pods, no gang scheduling, no compaction."""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import yaml

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import CLUSTER_OBJECT, Hit, Patch
from kubegpu.audit.workloads import GpuWorkload
from kubegpu.model.gpu import MILLI
from kubegpu.model.quantity import resource_amount

GANG_SCHEDULERS = ("volcano", "kai-scheduler", "scheduler-plugins", "coscheduling", "kueue")
GANG_SCHEDULER_NAMES = frozenset({"volcano", "kai-scheduler", "scheduler-plugins-scheduler", "coscheduling"})
GANG_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io", "kueue.x-k8s.io/queue-name",
               "kueue.x-k8s.io/pod-group-name", "kai.scheduler/queue", "volcano.sh/job-name")
GANG_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name", "pod-group-name")
COMPACTORS = ("descheduler", "kai-scheduler")


def _fgd_rate(ctx: AuditContext) -> str:
    """The fragmentation engine's FGD rate and stranded GPUs."""
    report = ctx.frag_report
    rate = float(report.fragmentation.rate)
    sizes = ", ".join(f"{k}-GPU: {float(v):g}" for k, v in report.stranded_by_size.items() if float(v))
    return f"FGD fragmentation rate {rate:.0%}" + (f"; stranded GPUs by pod size: {sizes}" if sizes else "")


def typical_sizes(ctx: AuditContext) -> list[int]:
    """Whole-GPU pod sizes that make up at least `typical_min_share` of the GPU pods, largest first."""
    sizes = ctx.whole_gpu_pod_sizes  # two checks ask: counted once per audit
    total = sum(sizes.values())
    share = float(ctx.param("KG-101", "typical_min_share"))
    return sorted((k for k, n in sizes.items() if total and n / total >= share), reverse=True)


def _free_line(ctx: AuditContext, free: np.ndarray) -> str:
    names = ctx.table.names
    parts = [f"{names[i]}={int(free[i])}" for i in np.argsort(-free, kind="stable") if free[i] > 0]
    return "free GPUs per node: " + (", ".join(parts[:12]) + (" ..." if len(parts) > 12 else "") or "none")


def stranded_gpus(ctx: AuditContext) -> Iterator[Hit]:
    """KG-101: a k-GPU pod fits nowhere while the free total is at least k."""
    reported: set[int] = set()
    rate = _fgd_rate(ctx)
    for pod in ctx.pending_gpu_pods:
        demand = ctx.state.gpu_demand(pod)
        if demand.gpu_milli < MILLI or pod.spec.scheduling_gates:
            continue
        k = demand.num_gpu
        free = np.where(ctx.resource_only_nodes(pod), ctx.free_whole_gpus, 0)
        total, largest = int(free.sum()), int(free.max(initial=0))
        if largest < k <= total:
            reported.add(k)
            nodes = int((free > 0).sum())
            yield Hit(object=pod.ref,
                      message=f"needs {k} GPUs on one node; {total} GPUs are free on {nodes} nodes but no node "
                              f"has more than {largest} free",
                      evidence=tuple(x for x in (_free_line(ctx, free), rate) if x))
    free = ctx.free_whole_gpus
    total, largest = int(free.sum()), int(free.max(initial=0))
    for k in typical_sizes(ctx):
        if k not in reported and largest < k <= total:
            yield Hit(object=CLUSTER_OBJECT,
                      message=f"{total} GPUs are free but a {k}-GPU pod (a common shape here) fits on no node "
                              f"(largest free on one node: {largest})",
                      evidence=tuple(x for x in (_free_line(ctx, free), rate) if x))


def _small(ctx: AuditContext, pod) -> bool:
    req = ctx.state.pod_requests(pod)
    max_cpu = resource_amount("cpu", str(ctx.param("KG-102", "max_cpu")))
    max_mem = resource_amount("memory", str(ctx.param("KG-102", "max_memory")))
    return req.get("cpu", 0) <= max_cpu and req.get("memory", 0) <= max_mem


def time_slicing_configmap(product: str, replicas: int) -> tuple[str, str]:
    """(config key, ConfigMap YAML) for GPU Operator time-slicing of one GPU product."""
    key = product.lower().replace("nvidia-", "") + "-shared"
    config = {"version": "v1", "flags": {"migStrategy": "none"},
              "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
          "data": {key: yaml.safe_dump(config, sort_keys=False)}}
    return key, yaml.safe_dump(cm, sort_keys=False)


def whole_gpus_for_small_pods(ctx: AuditContext) -> Iterator[Hit]:
    """KG-102: inference replicas of 1 whole GPU each, small in CPU and memory, on unshared GPUs."""
    replicas = int(ctx.param("KG-102", "replicas"))
    for w in ctx.inference:
        pods = [p for p in w.pods if p.is_bound and ctx.pod_gpus(p) == 1
                and ctx.state.node_gpus.get(p.spec.node_name or "") is not None
                and ctx.state.node_gpus[p.spec.node_name].sharing == "none" and _small(ctx, p)]
        if len(pods) < int(ctx.param("KG-102", "min_pods")):
            continue
        nodes = sorted({p.spec.node_name for p in pods})
        product = ctx.state.node_gpus[nodes[0]].model or "gpu"
        needed = math.ceil(len(pods) / replicas)
        freed = len(pods) - needed
        key, manifest = time_slicing_configmap(product, replicas)
        label = f"kubectl label node {' '.join(nodes)} nvidia.com/device-plugin.config={key} --overwrite"
        policy = ("kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p "
                  "'{\"spec\":{\"devicePlugin\":{\"config\":{\"name\":\"time-slicing-config\"}}}}'")
        yield Hit(object=w.ref,
                  message=f"{len(pods)} small pods each hold a whole {product} GPU; time-slicing x{replicas} "
                          f"would run them on {needed} GPU{'s' if needed != 1 else ''} and free {freed}",
                  evidence=(f"nodes: {', '.join(nodes)}", f"then: {policy}", f"then: {label}"),
                  patch=Patch(kind="manifest", content=manifest))


def _uses_gang(w: GpuWorkload, pod_groups: set[tuple[str, str]]) -> bool:
    for t in w.templates:
        if (t.spec.scheduler_name or "") in GANG_SCHEDULER_NAMES:
            return True
        if any(k in t.labels for k in GANG_LABELS) or any(k in t.annotations for k in GANG_ANNOTATIONS):
            return True
        if any("kueue" in g.name for g in t.spec.scheduling_gates):
            return True
    for p in w.pods:
        if (p.spec.scheduler_name or "") in GANG_SCHEDULER_NAMES or any(k in p.labels for k in GANG_LABELS) \
                or any(k in p.annotations for k in GANG_ANNOTATIONS):
            return True
    if w.obj is not None and (w.namespace, w.name) in pod_groups:
        return True
    body = getattr(w.obj, "body", None)
    run_policy = body.get("spec", {}).get("runPolicy", {}) if isinstance(body, dict) else {}
    return isinstance(run_policy, dict) and bool(run_policy.get("schedulingPolicy"))


def no_gang_scheduler(ctx: AuditContext) -> Iterator[Hit]:
    """KG-103: multi-pod GPU training placed pod by pod."""
    installed = [w.name for w in ctx.deployments_like(*GANG_SCHEDULERS)]
    pod_groups = {(g.namespace, g.name) for g in ctx.state.of_kind("PodGroup")}
    for w in ctx.distributed_training:
        if _uses_gang(w, pod_groups):
            continue
        where = (f"a gang scheduler is installed ({', '.join(installed)}) but this job does not use it"
                 if installed else "no gang scheduler is installed")
        group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": w.name, "namespace": w.namespace},
                 "spec": {"minMember": w.replicas, "scheduleTimeoutSeconds": 600}}
        yield Hit(object=w.ref,
                  message=f"{w.replicas} pods x {w.gpus_per_pod} GPUs are scheduled one by one: {where}",
                  evidence=(f"with scheduler-plugins coscheduling: label the pod template "
                            f"scheduling.x-k8s.io/pod-group={w.name} and set its schedulerName to the "
                            "coscheduling scheduler",),
                  patch=Patch(kind="manifest", content=yaml.safe_dump(group, sort_keys=False)))


def no_compaction(ctx: AuditContext) -> Iterator[Hit]:
    """KG-104: stranded GPUs (free, but unusable by the shapes in demand) and nothing that compacts."""
    compactors = [w.name for w in ctx.deployments_like(*COMPACTORS)]
    compactors += [o.name for k in ("CronJob", "Job") for o in ctx.state.of_kind(k)
                   if "descheduler" in o.name or "defrag" in o.name]
    if compactors:
        return
    sizes = set(typical_sizes(ctx))
    sizes |= {d.num_gpu for p in ctx.pending_gpu_pods
              if (d := ctx.state.gpu_demand(p)).gpu_milli >= MILLI}
    free = ctx.free_whole_gpus
    for k in sorted(sizes, reverse=True):
        stranded = int(free[free < k].sum())
        if k > 1 and stranded >= k:
            yield Hit(object=CLUSTER_OBJECT,
                      message=f"{stranded} free GPUs sit on nodes with fewer than {k} free, where no {k}-GPU pod "
                              "can use them, and no descheduler or defragmentation job runs",
                      evidence=(_free_line(ctx, free),))
            return
