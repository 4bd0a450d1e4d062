"""Pitfall 7: CoreDNS sized, spread and cached for the cluster, and pods that multiply lookups."""

from __future__ import annotations

import json
import math
from typing import Any, Iterator

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import CLUSTER_OBJECT, Hit, Patch
from kubegpu.audit.workloads import controller_templates
from kubegpu.model.kinds import Workload
from kubegpu.model.selectors import selector_matches
from kubegpu.model.text import counted

DNS_NAMES = ("coredns", "kube-dns")
CPA = "cluster-proportional-autoscaler"


def coredns(ctx: AuditContext) -> Workload | None:
    """The cluster DNS Deployment (kubeadm/EKS/AKS `coredns`, GKE `kube-dns`)."""
    for dep in ctx.state.of_kind("Deployment"):
        if dep.namespace == "kube-system" and dep.name in DNS_NAMES:
            return dep
    for dep in ctx.state.of_kind("Deployment"):
        if dep.spec.template.metadata.labels.get("k8s-app") == "kube-dns" and "autoscaler" not in dep.name:
            return dep
    return None


def _autoscaler_params(ctx: AuditContext) -> dict[str, Any] | None:
    """The CPA ConfigMap's `linear` or `ladder` parameters, when present."""
    for cm in ctx.state.of_kind("ConfigMap"):
        for key in ("linear", "ladder"):
            if key in cm.data and ("autoscaler" in cm.name or "dns" in cm.name):
                try:
                    return {key: json.loads(cm.data[key])}
                except json.JSONDecodeError:
                    return None
    return None


def expected_replicas(nodes: int, cores: float, params: dict[str, Any]) -> int:
    """cluster-proportional-autoscaler: linear max(cores/cpr, nodes/npr) clamped, or the ladder step."""
    if "ladder" in params:
        ladder = params["ladder"]
        steps = []
        for table, value in (("coresToReplicas", cores), ("nodesToReplicas", nodes)):
            best = 0
            for threshold, replicas in ladder.get(table, []):
                if value >= threshold:
                    best = replicas
            steps.append(best)
        return max(steps)
    linear = params.get("linear", params)
    want = max(math.ceil(cores / float(linear.get("coresPerReplica", 256))),
               math.ceil(nodes / float(linear.get("nodesPerReplica", 16))))
    if linear.get("preventSinglePointFailure", True) and nodes > 1:
        want = max(want, 2)
    want = max(want, int(linear.get("min", 1)))
    if linear.get("max"):
        want = min(want, int(linear["max"]))
    return want


def coredns_replicas(ctx: AuditContext) -> Iterator[Hit]:
    """KG-701."""
    dep = coredns(ctx)
    if dep is None or not ctx.state.nodes:
        return
    params = _autoscaler_params(ctx) or {"linear": {
        "coresPerReplica": ctx.param("KG-701", "cores_per_replica"),
        "nodesPerReplica": ctx.param("KG-701", "nodes_per_replica"),
        "min": ctx.param("KG-701", "min"), "preventSinglePointFailure": True}}
    cores = sum(a.get("cpu", 0) for a in ctx.state.allocatable.values()) / 1000
    nodes = len(ctx.state.nodes)
    want = expected_replicas(nodes, cores, params)
    have = dep.spec.replicas if dep.spec.replicas is not None else 1
    if have < want:
        yield Hit(object=dep.ref,
                  message=f"{counted(have, 'replica')} for {counted(nodes, 'node')} and {cores:.0f} cores; the proportional "
                          f"formula asks for {want}",
                  patch=Patch(kind="command", target=dep.ref,
                              content=f"kubectl -n {dep.namespace} scale deployment {dep.name} --replicas={want}"))


def coredns_without_autoscaler(ctx: AuditContext) -> Iterator[Hit]:
    """KG-702: neither an HPA nor cluster-proportional-autoscaler targets the DNS Deployment."""
    dep = coredns(ctx)
    if dep is None:
        return
    for hpa in ctx.state.of_kind("HorizontalPodAutoscaler"):
        if hpa.spec.scale_target_ref.name == dep.name and hpa.namespace == dep.namespace:
            return
    for other in ctx.state.of_kind("Deployment"):
        for c in other.spec.template.spec.containers:
            line = " ".join([c.image or "", *c.command, *c.args]).lower()
            if CPA in line and dep.name in line:
                return
    yield Hit(object=dep.ref, message=f"fixed at {counted(dep.spec.replicas or 1, 'replica')}: no HPA and no "
                                      "cluster-proportional-autoscaler follows the cluster's size")


def coredns_on_one_node(ctx: AuditContext) -> Iterator[Hit]:
    """KG-703."""
    dep = coredns(ctx)
    if dep is None or len(ctx.state.nodes) < 2:
        return
    pods = [p for p in ctx.state.pods if p.namespace == dep.namespace and p.is_bound and not p.is_terminal
            and selector_matches(dep.spec.selector, p.labels)]
    nodes = {p.spec.node_name for p in pods}
    if len(pods) >= 2 and len(nodes) == 1:
        yield Hit(object=dep.ref, message=f"all {len(pods)} replicas run on node {nodes.pop()}")


def no_nodelocal_dns(ctx: AuditContext) -> Iterator[Hit]:
    """KG-704: no node-cache DaemonSet, no Corefile binding a link-local address."""
    if coredns(ctx) is None:
        return
    for ds in ctx.state.of_kind("DaemonSet"):
        if ds.name == "node-local-dns" or any("node-cache" in (c.image or "")
                                              for c in ds.spec.template.spec.containers):
            return
    if any("bind 169.254." in v for cm in ctx.state.of_kind("ConfigMap") for v in cm.data.values()):
        return
    yield Hit(object=CLUSTER_OBJECT, message=f"no NodeLocal DNSCache on {len(ctx.state.nodes)} nodes: every "
                                             "lookup goes through conntrack to CoreDNS")


def default_ndots(ctx: AuditContext) -> Iterator[Hit]:
    """KG-705: many replicas with ClusterFirst DNS and no ndots option."""
    minimum = int(ctx.param("KG-705", "min_replicas"))
    for kind in ("Deployment", "StatefulSet"):
        for obj in ctx.state.of_kind(kind):
            if obj.namespace == "kube-system":
                continue
            for t in controller_templates(obj):
                spec = t.spec
                if t.replicas < minimum or spec.dns_policy not in (None, "ClusterFirst", "ClusterFirstWithHostNet"):
                    continue
                if spec.dns_policy is None and spec.host_network:
                    continue  # hostNetwork pods default to the node's resolv.conf
                options = spec.dns_config.options if spec.dns_config else []
                if any(o.name == "ndots" for o in options):
                    continue
                yield Hit(object=obj.ref, message=f"{t.replicas} replicas resolve with the default ndots:5: "
                                                  "every external name costs up to 5 extra lookups")
