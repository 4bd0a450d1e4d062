"""Pitfall 3: autoscalers that add and remove GPU nodes faster than GPU workloads can use them."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterator

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import CLUSTER_OBJECT, Hit, Patch
from kubegpu.audit.workloads import controller_templates
from kubegpu.model.kinds import GenericObject
from kubegpu.model.pools import node_pool
from kubegpu.model.timeutil import parse_duration
from kubegpu.model.autoscaler import ClusterAutoscaler, find_cluster_autoscalers
from kubegpu.model.loose import loose

GPU_REQUIREMENT_HINTS = ("gpu", "accelerator")


def cluster_autoscalers(ctx: AuditContext) -> list[ClusterAutoscaler]:
    """Every cluster-autoscaler in the state (model.autoscaler: one reading with the simulator)."""
    return find_cluster_autoscalers(ctx.state)


def _duration_check(ctx: AuditContext, check_id: str, flag: str) -> Iterator[Hit]:
    minimum = parse_duration(str(ctx.param(check_id, "min"))) or 0
    for ca in cluster_autoscalers(ctx):
        dep = ca.workload
        if not ca.enabled("scale-down-enabled"):
            continue
        value, default = ca.value(flag)
        seconds = parse_duration(value)
        if seconds is not None and seconds < minimum:
            shown = f"--{flag}={value}" + (" (the default)" if default else "")
            yield Hit(object=dep.ref, message=f"{shown} is below {ctx.param(check_id, 'min')}",
                      patch=Patch(kind="command", target=dep.ref,
                                  content=f"add the container arg --{flag}={ctx.param(check_id, 'min')}"))


def scale_down_delay_after_add(ctx: AuditContext) -> Iterator[Hit]:
    """KG-301."""
    yield from _duration_check(ctx, "KG-301", "scale-down-delay-after-add")


def scale_down_unneeded_time(ctx: AuditContext) -> Iterator[Hit]:
    """KG-302."""
    yield from _duration_check(ctx, "KG-302", "scale-down-unneeded-time")


def scale_down_utilization(ctx: AuditContext) -> Iterator[Hit]:
    """KG-303: a utilization threshold above the maximum (GPU nodes use the GPU one)."""
    maximum = float(ctx.param("KG-303", "max"))
    for ca in cluster_autoscalers(ctx):
        dep = ca.workload
        if not ca.enabled("scale-down-enabled"):
            continue
        for flag in ("scale-down-utilization-threshold", "scale-down-gpu-utilization-threshold"):
            value, _ = ca.value(flag)
            try:
                number = float(value)
            except ValueError:
                continue
            if number > maximum:
                yield Hit(object=dep.ref,
                          message=f"--{flag}={value}: GPU nodes below {number:.0%} allocated are scale-down "
                                  "candidates and their pods get evicted")


def mixed_node_groups(ctx: AuditContext) -> Iterator[Hit]:
    """KG-304: one node group with GPU and CPU-only nodes."""
    groups: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for node in ctx.state.nodes:
        pool = node_pool(node)
        if pool:
            groups[pool].append((node.name, ctx.state.node_gpus[node.name].physical))
    for pool, members in sorted(groups.items()):
        gpu = [n for n, g in members if g > 0]
        cpu = [n for n, g in members if g == 0]
        if gpu and cpu:
            yield Hit(object=f"NodeGroup/{pool}",
                      message=f"node group {pool} mixes {len(gpu)} GPU nodes and {len(cpu)} CPU-only nodes",
                      evidence=(f"GPU: {', '.join(gpu[:8])}", f"CPU-only: {', '.join(cpu[:8])}"))


def _dig(body: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body


def is_gpu_nodepool(pool: GenericObject) -> bool:
    """A Karpenter NodePool that launches GPU nodes (requirements, taints, limits or labels say so)."""
    reqs = loose(pool).list("spec.template.spec.requirements")
    if any(isinstance(r, dict) and any(h in str(r.get("key", "")).lower() for h in GPU_REQUIREMENT_HINTS)
           for r in reqs):
        return True
    taints = loose(pool).list("spec.template.spec.taints")
    if any(isinstance(t, dict) and "gpu" in str(t.get("key", "")).lower() for t in taints):
        return True
    limits = loose(pool).dict("spec.limits")
    labels = loose(pool).dict("spec.template.metadata.labels")
    return any("gpu" in str(k).lower() for k in [*limits, *labels]) or any(
        "gpu" in str(v).lower() for v in labels.values())


def karpenter_gpu_pools(ctx: AuditContext) -> list[GenericObject]:
    return [p for p in ctx.crds("NodePool") if p.api_version.startswith("karpenter.sh/") and is_gpu_nodepool(p)]


def karpenter_consolidation(ctx: AuditContext) -> Iterator[Hit]:
    """KG-305: GPU NodePools whose consolidateAfter is shorter than the minimum (default 0s)."""
    minimum_text = str(ctx.param("KG-305", "min"))
    minimum = parse_duration(minimum_text) or 0
    for pool in karpenter_gpu_pools(ctx):
        disruption = loose(pool).dict("spec.disruption")
        after = str(disruption.get("consolidateAfter", "0s"))
        policy = disruption.get("consolidationPolicy", "WhenEmptyOrUnderutilized")
        if after == "Never":
            continue
        seconds = parse_duration(after)
        if seconds is not None and seconds < minimum:
            shown = after + ("" if "consolidateAfter" in disruption else " (the default)")
            patch = {"spec": {"disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": minimum_text}}}
            yield Hit(object=pool.ref,
                      message=f"GPU NodePool consolidates after {shown} with policy {policy}",
                      patch=Patch(kind="merge-patch", target=pool.ref, content=json.dumps(patch)))


def _reserved_capacity(ctx: AuditContext) -> bool:
    for obj in ctx.state.objects:
        for t in controller_templates(obj):
            pc = ctx.state.priority_classes.get(t.spec.priority_class_name or "")
            if pc is not None and pc.value < 0 and any("gpu" in r for c in t.spec.containers
                                                       for r in c.resources.requests):
                return True
    for ca in cluster_autoscalers(ctx):
        if any(group.min > 0 for group in ca.node_groups(strict=False)):
            return True
    return any(_dig(p.body, "spec", "replicas") for p in karpenter_gpu_pools(ctx))


def no_baseline_capacity(ctx: AuditContext) -> Iterator[Hit]:
    """KG-306: an autoscaler manages GPU capacity and nothing keeps a warm baseline."""
    managed = bool(karpenter_gpu_pools(ctx)) or (bool(cluster_autoscalers(ctx)) and bool(ctx.gpu_nodes))
    if managed and not _reserved_capacity(ctx):
        yield Hit(object=CLUSTER_OBJECT,
                  message="GPU nodes are autoscaled with no minimum size, static capacity or "
                          "placeholder pods reserving GPUs")
