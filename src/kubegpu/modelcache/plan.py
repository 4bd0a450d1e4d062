"""`kubegpu models plan`: what each target node must move, when, and when the rollout may start.

Read-only arithmetic over a ModelCache and a cluster state. Throughputs are the storage classes
of `kubegpu.storage.throughput` (NFS 200 MB/s, local NVMe 3 GB/s, object store 500 MB/s, ...) plus
`peer` (a copy from another node's local disk, bounded by a 10 GbE link: 10 Gbit/s / 8 =
1.25 GB/s), each overridable or replaced by `kubegpu models bench` figures. A node's pull runs
at the slowest of: the source path, the node's local-disk write, and the cache's bandwidth caps
(per node, and the total split among the nodes pulling at once). Nodes pull in name order,
`maxNodesPulling` at a time (the agents take free slots first come, first served).
"""

from __future__ import annotations

import heapq
from typing import Any

import msgspec

from kubegpu.storage.throughput import DEFAULT_THROUGHPUT
from kubegpu.model.cluster import ClusterState
from kubegpu.modelcache import rollout
from kubegpu.modelcache.spec import ModelCache

PEER_THROUGHPUT = 10e9 / 8  # one 10 GbE link, line rate
LOCAL = "local-nvme"


def throughputs(overrides: dict[str, float] | None = None) -> dict[str, float]:
    return {**DEFAULT_THROUGHPUT, "peer": PEER_THROUGHPUT, **(overrides or {})}


def source_path(cache: ModelCache) -> str:
    """The storage path the source is read through: an explicit class, else nfs / object-store."""
    src = cache.spec.source
    if src.storage_class:
        return src.storage_class
    return "nfs" if src.path else "object-store"


class NodePlan(msgspec.Struct):
    name: str
    state: str
    bytes_needed: int
    eta_seconds: float
    holds: str | None
    needs: str
    start_seconds: float
    done_seconds: float
    free_bytes: int | None
    headroom_bytes: int | None   # free space left after the pull, minus the configured headroom
    fits: bool | None
    eta_by_path: dict[str, float]


class WorkloadPlan(msgspec.Struct):
    workload: str
    version: str | None
    restarts: list[str]         # pods the rollout will replace (namespace/name)


class Plan(msgspec.Struct):
    model: str
    version: str
    nodes: list[NodePlan]
    total_bytes: int
    ready_at_seconds: float | None
    source_path: str
    rate_bytes_per_second: float
    max_nodes_pulling: int
    copies: dict[str, int]
    required_nodes: int
    workloads: list[WorkloadPlan]
    notes: list[str]


def _node_dicts(state: ClusterState) -> dict[str, dict]:
    return {n.name: msgspec.to_builtins(n) for n in state.nodes}


def _free_bytes(entry: dict) -> int | None:
    """Free bytes under the node's root, as its agent last reported them."""
    return entry["freeBytes"] if isinstance(entry.get("freeBytes"), int) else None


def _bytes_needed(cache: ModelCache, total: int, state: str, entry: dict) -> int:
    if state == "Verified":
        return 0
    done = entry.get("bytesDone") if entry.get("version") == cache.spec.version else 0
    return max(0, total - int(done or 0))


def node_rate(cache: ModelCache, rates: dict[str, float]) -> float:
    """Bytes/s one node pulls at: the slowest of source path, local write, and the cache's caps."""
    limits = [rates[source_path(cache)] if source_path(cache) in rates else rates["object-store"], rates[LOCAL]]
    cap = cache.node_rate()
    if cap:
        limits.append(cap)
    return min(limits)


def schedule(needs: list[tuple[str, int]], rate: float, slots: int) -> dict[str, tuple[float, float]]:
    """(start, done) seconds per node when `slots` nodes pull at once, in the given order."""
    free = [0.0] * max(1, min(slots, len(needs)))  # more slots than nodes change nothing (1e12 is allowed)
    heapq.heapify(free)
    out: dict[str, tuple[float, float]] = {}
    for name, needed in needs:
        if needed == 0:
            out[name] = (0.0, 0.0)
            continue
        start = heapq.heappop(free)
        done = start + needed / rate
        heapq.heappush(free, done)
        out[name] = (start, done)
    return out


def _restarts(cache: ModelCache, state: ClusterState) -> list[WorkloadPlan]:
    out = []
    for g in cache.spec.workloads:
        obj = state.get(g.kind, g.namespace, g.name)
        body = getattr(obj, "body", None) or (msgspec.to_builtins(obj) if obj is not None else None)
        version = rollout.workload_version(cache, g, body) if body else None
        pods = []
        if version != cache.spec.version:
            pods = sorted(p.key for p in state.pods if not p.is_terminal and p.metadata.namespace == g.namespace
                          and state.top_controller(p) == (g.kind, g.name))
        out.append(WorkloadPlan(f"{g.kind}/{g.namespace}/{g.name}", version, pods))
    return out


def plan(cache: ModelCache, state: ClusterState, overrides: dict[str, float] | None = None) -> Plan:
    rates = throughputs(overrides)
    nodes = _node_dicts(state)
    status_nodes = (cache.status or {}).get("nodes") or {}
    names = rollout.targets(cache, nodes.values())
    rate = node_rate(cache, rates)
    states = {n: rollout.node_state(cache, n, status_nodes, nodes[n]) for n in names}
    total = cache.total_bytes  # once: a manifest may list tens of thousands of files
    needs = [(n, _bytes_needed(cache, total, states[n], status_nodes.get(n) or {})) for n in names]
    timing = schedule(needs, rate, cache.spec.fan_out.max_nodes_pulling)
    headroom = cache.headroom_bytes() or 0
    plans = []
    for name, needed in needs:
        entry = status_nodes.get(name) or {}
        free = _free_bytes(entry)
        left = free - needed - headroom if free is not None else None
        start, done = timing[name]
        plans.append(NodePlan(
            name=name, state=states[name], bytes_needed=needed, eta_seconds=round(done, 1),
            holds=rollout.node_held_version(cache, name, status_nodes, nodes[name]), needs=cache.spec.version,
            start_seconds=round(start, 1), done_seconds=round(done, 1), free_bytes=free, headroom_bytes=left,
            fits=None if left is None else left >= 0,
            eta_by_path={p: round(needed / r, 1) for p, r in sorted(rates.items())}))
    ready = readiness_time(cache, [p.done_seconds for p in plans])
    verdict = rollout.readiness(cache, names, status_nodes, nodes)
    notes = []
    if not names:
        notes.append(f"no node matches spec.nodeSelector {cache.spec.node_selector}")
    elif ready is None:
        notes.append(f"the rule needs {verdict.required} nodes but only {len(names)} are targeted")
    if any(p.fits is False for p in plans):
        notes.append("some nodes lack the disk space: their pull will be refused (spec.storage.headroom)")
    return Plan(model=cache.name, version=cache.spec.version, nodes=plans, total_bytes=sum(n for _, n in needs),
                ready_at_seconds=ready, source_path=source_path(cache), rate_bytes_per_second=rate,
                max_nodes_pulling=cache.spec.fan_out.max_nodes_pulling, copies=verdict.as_copies(),
                required_nodes=verdict.required, workloads=_restarts(cache, state), notes=notes)


def readiness_time(cache: ModelCache, done: list[float]) -> float | None:
    """Seconds until the readiness rule holds: the N-th earliest finish (the last one for 'all')."""
    if not done:
        return None
    need = len(done) if cache.spec.readiness.min_nodes is None else cache.spec.readiness.min_nodes
    if need > len(done):
        return None
    return round(sorted(done)[need - 1], 1)


def caches_in_state(state: ClusterState) -> list[dict[str, Any]]:
    """Bodies of the ModelCache objects a snapshot or live read carried."""
    return [o.body for o in state.of_kind("ModelCache") if getattr(o, "body", None)]
