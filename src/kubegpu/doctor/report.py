"""The doctor report: status, fragmentation, pending GPU pods, defrag preview, audit — one object.

Each section is computed by its own engine; this module only decides the order and hands each
engine the sections computed before it. With a namespace scope (-n NS) the pod-level sections
(status pods, the fragmentation demand, pending pods, audit findings) are narrowed to NS; nodes,
capacity and cluster-scoped findings stay. The defrag preview is cluster-wide: it plans for the
cluster's largest pending GPU pod.
"""

from __future__ import annotations

from typing import Any, Callable

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.namespaces import NamespaceScope
from kubegpu.model.nodetable import NodeTable
from kubegpu.money.cluster import cluster_prices
from kubegpu.money.prices import PriceBook
from kubegpu.money.report import money_section
from kubegpu.sharing.candidates import audit_thresholds, default_replicas
from kubegpu.sharing.report import share_fix, share_report
from kubegpu.status import cluster_status
from kubegpu.fragmentation.cluster import cluster_frag_report
from kubegpu.explain.summary import pending_summary
from kubegpu.defrag.preview import defrag_preview
from kubegpu.audit.engine import run_audit
from kubegpu.modelcache.overview import doctor_section_from_state


class PhaseCounts(msgspec.Struct):
    """What "Pending" counts. kubectl's phase=Pending also holds bound pods whose containers have
    not started (volumes not mounted, images pulling); only unbound ones wait for a scheduler."""

    phase_pending: int             # status.phase == Pending (what `kubectl get pods` calls Pending)
    waiting_for_node: int          # of those, not bound to a node (kube-scheduler's queue)
    waiting_for_node_gpu: int      # ... asking for GPUs (the "pending" section explains these)
    bound_not_started: int         # bound to a node, containers not running (e.g. FailedMount)
    bound_not_started_pods: list[str]


class DoctorReport(msgspec.Struct):
    source: str
    server_version: str | None
    sections: dict[str, Any]
    namespace: str | None = None
    pending_phase: PhaseCounts | None = None   # with the "pending" section: what kubectl's Pending counts


Engine = Callable[[ClusterState, NodeTable, dict[str, Any], NamespaceScope], Any]


def _status(state: ClusterState, table: NodeTable, done: dict[str, Any], scope: NamespaceScope) -> Any:
    report = cluster_status(state, table, scope)
    return {"totals": report.totals, "nodes": report.nodes}


def _fragmentation(state: ClusterState, table: NodeTable, done: dict[str, Any], scope: NamespaceScope) -> Any:
    return cluster_frag_report(state, table=table, scope=scope)


def phase_counts(state: ClusterState, scope: NamespaceScope) -> PhaseCounts:
    pending = [p for p in state.pods if p.status.phase == "Pending" and scope.includes(p.namespace)]
    unbound = [p for p in pending if not p.spec.node_name]
    bound = sorted(p.key for p in pending if p.spec.node_name)
    return PhaseCounts(phase_pending=len(pending), waiting_for_node=len(unbound),
                       waiting_for_node_gpu=sum(1 for p in unbound if state.gpu_demand(p).is_gpu),
                       bound_not_started=len(bound), bound_not_started_pods=bound)


def _pending(state: ClusterState, table: NodeTable, done: dict[str, Any], scope: NamespaceScope) -> Any:
    # by the pods' own namespace, not their printed key
    return pending_summary(state, version=state.k8s_version, namespace=scope.namespace)


def _defrag(state: ClusterState, table: NodeTable, done: dict[str, Any], scope: NamespaceScope) -> Any:
    # the pods the pending section found blocked (whole cluster): the dashboard's default /defrag picks among the same
    blocked = {p.pod for p in done["pending"]} if "pending" in done and scope.all else None
    return defrag_preview(state, among=blocked, table=table)


def _audit(state: ClusterState, table: NodeTable, done: dict[str, Any], scope: NamespaceScope) -> Any:
    # the audit's pitfall-1/2 checks read what the sections above already computed (whole cluster
    # only: a namespace-narrowed section would not describe the cluster the checks judge)
    reuse = scope.all
    return run_audit(state, table=table, pending=done.get("pending") if reuse else None,
                     frag=done.get("fragmentation") if reuse else None, scope=scope)


def _models(state: ClusterState, table: NodeTable, done: dict[str, Any], scope: NamespaceScope) -> Any:
    """ModelCaches (`kubegpu models`), cluster-scoped; None (section omitted) when the cluster has none."""
    section = doctor_section_from_state(state)
    return section if section["caches"] else None


# The doctor's sections, in report order: (key, engine).
SECTIONS: list[tuple[str, Engine]] = [
    ("status", _status),
    ("fragmentation", _fragmentation),
    ("pending", _pending),
    ("defrag", _defrag),
    ("audit", _audit),
    ("models", _models),
]
OMITTED_WHEN_EMPTY = {"models"}   # sections that only appear when the cluster has their objects


def _share_fixes(state: ClusterState, prices, scope: NamespaceScope) -> list:
    """GPU sharing as a fix (kubegpu share's prediction for the cluster), when it frees GPUs."""
    report = share_report(state, prices, pool=None, replicas=default_replicas(), limits=audit_thresholds(),
                          scope=scope)
    fix = share_fix(report, prices)
    return [fix] if fix is not None else []


def doctor_report(state: ClusterState, *, only: set[str] | None = None,
                  scope: NamespaceScope = NamespaceScope(), prices: PriceBook | None = None) -> DoctorReport:
    """Run every section's engine over one state and one NodeTable; with `prices`, the money
    section last (it prices what the sections before it found)."""
    table = NodeTable.from_cluster(state)
    sections: dict[str, Any] = {}
    for key, engine in SECTIONS:
        if only and key not in only:
            continue
        value = engine(state, table, sections, scope)
        if value is None and key in OMITTED_WHEN_EMPTY:
            continue
        sections[key] = value
    if prices is not None and (not only or "money" in only):
        priced = cluster_prices(state, prices)
        sections["money"] = money_section(state, sections, priced, extra_fixes=_share_fixes(state, priced, scope))
    return DoctorReport(source=state.source, server_version=state.server_version, sections=sections,
                        namespace=scope.namespace,
                        pending_phase=phase_counts(state, scope) if "pending" in sections else None)
