"""Prometheus samples about ModelCaches, for `kubegpu serve`'s /metrics.

`kubegpu_model_cache_nodes{model,state}` (target nodes by the state of the current version),
`kubegpu_model_cache_copies{model,kind}` (available/total/failed) and
`kubegpu_model_cache_mixed_version_replicas{model,workload}` (replicas of a gated workload not yet
on its current template). Pure: the serve helper passes the objects and writes the exposition.
"""

from __future__ import annotations

from typing import Iterable

import msgspec

from kubegpu.modelcache.overview import cache_rows


class Sample(msgspec.Struct, frozen=True):
    name: str
    labels: dict[str, str]
    value: float


METRIC_HELP = {
    "kubegpu_model_cache_nodes": "Target nodes of a ModelCache by the state of its current version.",
    "kubegpu_model_cache_copies": "Verified, total and failed copies of a ModelCache's current version.",
    "kubegpu_model_cache_mixed_version_replicas": "Replicas of a gated workload not yet on its current template.",
}


def metric_samples(caches: Iterable[dict], nodes: Iterable[dict],
                   workloads: dict[tuple[str, str, str], dict] | None = None) -> list[Sample]:
    """Prometheus samples for `kubegpu serve` (names in METRIC_HELP)."""
    out = []
    for row in cache_rows(caches, nodes, workloads):
        if row.error:
            continue
        for state, count in row.nodes.items():
            out.append(Sample("kubegpu_model_cache_nodes", {"model": row.model, "state": state}, count))
        for kind, count in row.copies.items():
            out.append(Sample("kubegpu_model_cache_copies", {"model": row.model, "kind": kind}, count))
        for w in row.workloads:
            if w["mixed_replicas"] is not None:
                out.append(Sample("kubegpu_model_cache_mixed_version_replicas",
                                  {"model": row.model, "workload": w["workload"]}, w["mixed_replicas"]))
    return out
