"""Pitfall 6: distributed pods reached through load-balanced Services instead of headless ones."""

from __future__ import annotations

from typing import Iterator

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit
from kubegpu.audit.workloads import env_value
from kubegpu.model.kinds import Service
from kubegpu.model.selectors import map_selector_matches


def _service(ctx: AuditContext, namespace: str, name: str) -> Service | None:
    obj = ctx.state.get("Service", namespace, name)
    return obj if isinstance(obj, Service) else None


def load_balanced_service(ctx: AuditContext) -> Iterator[Hit]:
    """KG-601: a ClusterIP (non-headless) Service whose selector picks distributed training pods."""
    for svc in ctx.state.of_kind("Service"):
        if svc.is_headless or not svc.spec.selector or svc.spec.type == "ExternalName":
            continue
        for w in ctx.distributed_training:
            if w.namespace == svc.namespace and any(map_selector_matches(svc.spec.selector, labels)
                                                    for labels in w.pod_labels):
                yield Hit(object=svc.ref,
                          message=f"load-balances across the {w.replicas} pods of {w.ref}: each connection "
                                  "reaches an arbitrary rank")
                break


def master_addr_not_headless(ctx: AuditContext) -> Iterator[Hit]:
    """KG-602: MASTER_ADDR = `svc[.ns...]` or `pod.svc[.ns...]` where svc has a cluster IP."""
    for w in ctx.distributed_training:
        value = env_value(w.specs, "MASTER_ADDR")
        if not value or "$(" in value:
            continue
        labels = value.strip().rstrip(".").split(".")

        def ns_of(i: int) -> str:
            """The namespace label at position i of `svc.ns.svc...`, else the workload's."""
            return labels[i] if len(labels) > i and labels[i] != "svc" else w.namespace

        svc = _service(ctx, ns_of(1), labels[0])
        via_pod = False
        if svc is None and len(labels) >= 2:
            svc = _service(ctx, ns_of(2), labels[1])
            via_pod = True
        if svc is None or svc.is_headless:
            continue
        what = (f"pod name {labels[0]} under Service {svc.name}, which is not headless, does not resolve"
                if via_pod else f"Service {svc.name} has cluster IP {svc.spec.cluster_ip or '(assigned)'} and "
                                "load-balances the rendezvous")
        yield Hit(object=w.ref, message=f"MASTER_ADDR={value}: {what}")


def statefulset_without_headless(ctx: AuditContext) -> Iterator[Hit]:
    """KG-603 (kube-score statefulset-has-servicename, for GPU StatefulSets)."""
    for w in ctx.workloads:
        if w.kind != "StatefulSet" or w.obj is None:
            continue
        name = getattr(w.obj.spec, "service_name", None)
        if not name:
            yield Hit(object=w.ref, message="spec.serviceName is empty: the pods get no stable DNS names")
            continue
        svc = _service(ctx, w.namespace, name)
        if svc is None:
            yield Hit(object=w.ref, message=f"its governing Service {name} does not exist")
        elif not svc.is_headless:
            yield Hit(object=w.ref, message=f"its governing Service {name} is not headless (clusterIP "
                                            f"{svc.spec.cluster_ip or 'assigned'})")
