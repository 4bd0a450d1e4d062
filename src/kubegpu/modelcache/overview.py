"""Each ModelCache's state at a glance: the `models` section of `kubegpu doctor`.

Pure functions over the ModelCache objects (as read from a snapshot or the API), the nodes and
the gated workloads. A cache that does not decode is reported with its error, never dropped.

Wiring (for the doctor's owner): `section = doctor_section_from_state(state)` gives plain data
`{"caches": [{model, version, rolled_out_version, nodes{state: count}, copies, ready,
workloads[{workload, version, mixed_replicas}], error}], "summary": {caches, ready, invalid}}`;
an empty `caches` list means the cluster has no ModelCache (omit the section).
"""

from __future__ import annotations

from typing import Iterable

import msgspec

from kubegpu.errors import InputError
from kubegpu.model.cluster import ClusterState
from kubegpu.modelcache import rollout
from kubegpu.modelcache.spec import decode_cache


class CacheRow(msgspec.Struct):
    model: str
    version: str | None
    rolled_out_version: str | None
    nodes: dict[str, int]                 # state -> count of target nodes
    copies: dict[str, int]
    ready: bool                           # the readiness rule holds for spec.version
    workloads: list[dict]                 # {workload, version, mixed_replicas}
    error: str | None = None


def cache_rows(caches: Iterable[dict], nodes: Iterable[dict],
               workloads: dict[tuple[str, str, str], dict] | None = None) -> list[CacheRow]:
    """One row per ModelCache. `workloads` maps (kind, namespace, name) to the workload object."""
    node_list = list(nodes)
    by_name = {n["metadata"]["name"]: n for n in node_list}
    rows = []
    for body in caches:
        name = (body.get("metadata") or {}).get("name", "?")
        try:
            cache = decode_cache(body)
        except InputError as err:
            rows.append(CacheRow(name, None, None, {}, {}, False, [], error=str(err)))
            continue
        status = cache.status
        status_nodes = status.get("nodes") or {}  # checked by decode_cache
        names = rollout.targets(cache, node_list)
        counts = dict.fromkeys(rollout.STATES, 0)
        for n in names:
            counts[rollout.node_state(cache, n, status_nodes, by_name.get(n))] += 1
        verdict = rollout.readiness(cache, names, status_nodes, by_name)
        rows_w = []
        for g in cache.spec.workloads:
            obj = (workloads or {}).get((g.kind, g.namespace, g.name))
            rows_w.append({"workload": f"{g.kind}/{g.namespace}/{g.name}",
                           "version": rollout.workload_version(cache, g, obj) if obj else None,
                           "mixed_replicas": rollout.mixed_replicas(obj) if obj else None})
        rows.append(CacheRow(cache.name, cache.spec.version, status.get("rolledOutVersion"), counts,
                             verdict.as_copies(), verdict.holds, rows_w))
    return rows


def doctor_section(caches: Iterable[dict], nodes: Iterable[dict],
                   workloads: dict[tuple[str, str, str], dict] | None = None) -> dict:
    """The `models` section of `kubegpu doctor`: each ModelCache's state, as plain data."""
    rows = cache_rows(caches, nodes, workloads)
    return {"caches": msgspec.to_builtins(rows),
            "summary": {"caches": len(rows), "ready": sum(r.ready for r in rows),
                        "invalid": sum(r.error is not None for r in rows)}}


def _workload_bodies(state: ClusterState) -> dict[tuple[str, str, str], dict]:
    out = {}
    for kind in ("Deployment", "StatefulSet", "LeaderWorkerSet"):
        for obj in state.of_kind(kind):
            body = getattr(obj, "body", None) or msgspec.to_builtins(obj)
            out[(kind, obj.namespace, obj.name)] = body
    return out


def inputs_from_state(state: ClusterState) -> tuple[list[dict], list[dict], dict[tuple[str, str, str], dict]]:
    """(caches, nodes, workloads) of a ClusterState, as `cache_rows` and `metric_samples` read them;
    nodes and workloads are left empty when the state has no ModelCache."""
    caches = [o.body for o in state.of_kind("ModelCache") if getattr(o, "body", None)]
    if not caches:
        return [], [], {}
    return caches, [msgspec.to_builtins(n) for n in state.nodes], _workload_bodies(state)


def doctor_section_from_state(state: ClusterState) -> dict:
    """doctor_section over a ClusterState (snapshot, demo or live read that carried ModelCaches)."""
    return doctor_section(*inputs_from_state(state))
