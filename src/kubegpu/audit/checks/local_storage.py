"""Pitfall 10: local disks bound too early, no IO-wait alert, GPU nodes without local NVMe."""

from __future__ import annotations

from typing import Iterator

import msgspec

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import CLUSTER_OBJECT, Hit, Patch
from kubegpu.storage.volumes import is_local_provisioner
from kubegpu.model.integers import int_or_none
from kubegpu.model.kinds import CSINode, Node, PersistentVolume, StorageClass
from kubegpu.model.objects import NodeSelectorRequirement, VolumeNodeAffinity
from kubegpu.model.quantity import resource_amount
from kubegpu.model.loose import loose
from kubegpu.audit.rules import RuleOptions, prometheus_rule_yaml

LOCAL_NODE_LABEL_HINTS = ("nvme", "local-ssd", "localssd", "local-disk", "instance-store")


def immediate_local_binding(ctx: AuditContext) -> Iterator[Hit]:
    """KG-1001."""
    for sc in ctx.state.of_kind("StorageClass"):
        if isinstance(sc, StorageClass) and is_local_provisioner(sc.provisioner) \
                and (sc.volume_binding_mode or "Immediate") == "Immediate":
            mode = sc.volume_binding_mode or "Immediate (the default)"
            yield Hit(object=sc.ref, message=f"node-local provisioner {sc.provisioner} with volumeBindingMode "
                                             f"{mode}: volumes are placed before the pod's node is chosen")


def _has_iowait_alert(ctx: AuditContext) -> bool:
    for rule in ctx.crds("PrometheusRule"):
        for group in loose(rule).list("spec.groups"):
            for r in (group.get("rules", []) if isinstance(group, dict) else []):
                if isinstance(r, dict) and r.get("alert") and "iowait" in str(r.get("expr", "")):
                    return True
    return any("iowait" in v and "alert" in v for cm in ctx.state.of_kind("ConfigMap") for v in cm.data.values())


def no_iowait_alert(ctx: AuditContext) -> Iterator[Hit]:
    """KG-1002: only when the cluster has GPU nodes (that is what the alert protects)."""
    if not ctx.gpu_nodes or _has_iowait_alert(ctx):
        return

    yield Hit(object=CLUSTER_OBJECT, message="no alerting rule watches node iowait: GPUs starved by storage look "
                                             "merely idle",
              patch=Patch(kind="manifest", content=prometheus_rule_yaml(RuleOptions())))


def _requirement_matches(req: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    """upstream NodeSelectorRequirement semantics (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    if req.operator in ("Gt", "Lt") and value is not None and req.values:
        a, b = int_or_none(value), int_or_none(req.values[0])  # upstream ParseInt: not an int64, no match
        if a is None or b is None:
            return False
        return a > b if req.operator == "Gt" else a < b
    return False


def affinity_matches(affinity: VolumeNodeAffinity | None, node: Node) -> bool:
    """A PV's required node affinity (terms ORed, expressions ANDed) against a node's labels."""
    req = affinity.required if affinity else None
    if req is None:
        return False
    labels = {**node.labels, "kubernetes.io/hostname": node.labels.get("kubernetes.io/hostname", node.name)}
    return any(term.match_expressions and all(_requirement_matches(e, labels) for e in term.match_expressions)
               for term in req.node_selector_terms)


def _local_volume_affinities(ctx: AuditContext) -> list[tuple[str, VolumeNodeAffinity | None]]:
    """(evidence, node affinity) of local PVs and of KServe LocalModelNodeGroups' PV templates."""
    out: list[tuple[str, VolumeNodeAffinity | None]] = []
    for pv in ctx.state.of_kind("PersistentVolume"):
        if isinstance(pv, PersistentVolume) and (pv.spec.local is not None or pv.spec.host_path is not None):
            out.append((f"local PV {pv.name}", pv.spec.node_affinity))
    for group in ctx.crds("LocalModelNodeGroup"):
        spec = loose(group).dict("spec.persistentVolumeSpec")
        if isinstance(spec, dict) and isinstance(spec.get("nodeAffinity"), dict):
            try:
                affinity = msgspec.convert(spec["nodeAffinity"], VolumeNodeAffinity, strict=False)
            except msgspec.ValidationError:
                continue
            out.append((f"LocalModelNodeGroup {group.name}", affinity))
    return out


def local_storage_nodes(ctx: AuditContext) -> dict[str, str]:
    """node name -> evidence of node-local storage for weights."""
    out: dict[str, str] = {}
    volumes = _local_volume_affinities(ctx)
    for node in ctx.gpu_nodes:
        for evidence, affinity in volumes:
            if affinity_matches(affinity, node):
                out[node.name] = evidence
                break
    for csi in ctx.state.of_kind("CSINode"):
        if isinstance(csi, CSINode):
            for d in csi.spec.drivers:
                if is_local_provisioner(d.name):
                    out.setdefault(csi.name, f"CSI driver {d.name}")
    return out


def _node_hint(ctx: AuditContext, node: Node) -> str | None:
    for key, value in node.labels.items():
        text = f"{key}={value}".lower()
        if any(h in text for h in LOCAL_NODE_LABEL_HINTS) and value.lower() not in ("false", "0", "none"):
            return f"label {key}={value}"
    minimum = resource_amount("ephemeral-storage", str(ctx.param("KG-1003", "min_ephemeral")))
    eph = ctx.state.allocatable[node.name].get("ephemeral-storage", 0)
    return f"ephemeral-storage {eph // 2**30}Gi" if eph >= minimum else None


def gpu_nodes_without_local_nvme(ctx: AuditContext) -> Iterator[Hit]:
    """KG-1003."""
    local = local_storage_nodes(ctx)
    for node in ctx.gpu_nodes:
        if node.name in local or _node_hint(ctx, node):
            continue
        eph = ctx.state.allocatable[node.name].get("ephemeral-storage", 0)
        yield Hit(object=node.ref, message=f"no local PV, local CSI driver or NVMe label; ephemeral-storage "
                                           f"{eph // 2**30}Gi: weights come over the network on every start")
