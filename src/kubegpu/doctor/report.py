"""The doctor report: status, fragmentation, pending GPU pods, defrag preview, audit — one object.

Each section is computed by its own engine; this module only decides the order and keeps a
failing optional section from hiding the others (its error is reported in the section).
"""

from __future__ import annotations

from typing import Any, Callable

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.model.nodetable import NodeTable
from kubegpu.status import cluster_status


class DoctorReport(msgspec.Struct):
    source: str
    server_version: str | None
    sections: dict[str, Any]


def _status(state: ClusterState, table: NodeTable, done: dict[str, Any]) -> Any:
    report = cluster_status(state, table)
    return {"totals": report.totals, "nodes": report.nodes}


def _fragmentation(state: ClusterState, table: NodeTable, done: dict[str, Any]) -> Any:
    from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement
    from kubegpu.fragmentation.report import frag_report

    return frag_report(cluster_placement(state, table), cluster_mix(state))


def _pending(state: ClusterState, table: NodeTable, done: dict[str, Any]) -> Any:
    from kubegpu.explain.summary import pending_summary

    return pending_summary(state)


def _defrag(state: ClusterState, table: NodeTable, done: dict[str, Any]) -> Any:
    from kubegpu.defrag.preview import defrag_preview

    return defrag_preview(state)


def _audit(state: ClusterState, table: NodeTable, done: dict[str, Any]) -> Any:
    from kubegpu.audit.engine import run_audit

    # the audit's pitfall-1/2 checks read what the sections above already computed
    return run_audit(state, table=table, pending=done.get("pending"), frag=done.get("fragmentation"))


# The doctor's sections, in report order: (key, engine). Each engine also sees the sections
# computed before it, so nothing is computed twice.
SECTIONS: list[tuple[str, Callable[[ClusterState, NodeTable, dict[str, Any]], Any]]] = [
    ("status", _status),
    ("fragmentation", _fragmentation),
    ("pending", _pending),
    ("defrag", _defrag),
    ("audit", _audit),
]


def doctor_report(state: ClusterState, *, only: set[str] | None = None) -> DoctorReport:
    """Run every section's engine over one state and one NodeTable."""
    table = NodeTable.from_cluster(state)
    sections: dict[str, Any] = {}
    for key, engine in SECTIONS:
        if only and key not in only:
            continue
        sections[key] = engine(state, table, sections)
    return DoctorReport(source=state.source, server_version=state.server_version, sections=sections)
