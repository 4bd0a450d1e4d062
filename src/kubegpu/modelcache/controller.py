"""The rollout gate (`kubegpu models controller`): patch gated workloads only when the nodes are ready.

Each turn, for every ModelCache: count the target nodes holding spec.version verified
(copies{available,total,failed}); when the readiness rule holds (all target nodes, or
readiness.minNodes of them), patch each gated workload so its pods point at the version (the
annotation or env var the cache names) — the workload's own rolling update does the rest, and
until then the old version keeps serving. Workloads whose replicas stay on two versions longer
than readiness.maxMixedSeconds become findings. Target nodes that hold no verified version of
the model at all (new nodes, e.g. from the autoscaler) get the `kubegpu.io/model-not-ready`
NoSchedule taint; the node's agent removes it once its copy verifies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from kubegpu.errors import InputError
from kubegpu.modelcache import rollout
from kubegpu.modelcache.agent import now_rfc3339
from kubegpu.modelcache.kube import Conflict, KubeEdge
from kubegpu.modelcache.loop import run_turns
from kubegpu.modelcache.spec import NOT_READY_TAINT, ModelCache, decode_cache
from kubegpu.model.timeutil import parse_time


@dataclass
class Controller:
    edge: KubeEdge
    taint_new_nodes: bool = True
    log: Callable[[str], None] = print
    findings: list[str] = field(default_factory=list)

    def turn(self) -> list[str]:
        """One pass over every ModelCache; returns the findings of this pass."""
        self.findings = []
        nodes = {n["metadata"]["name"]: n for n in self.edge.list_nodes()}
        caches = []
        for body in self.edge.list_caches():
            try:
                caches.append((decode_cache(body, where="cluster"), body))
            except InputError as err:
                self.log(f"skip ModelCache/{(body.get('metadata') or {}).get('name', '?')}: {err}")
        if self.taint_new_nodes:
            self._taint(caches, nodes)
        for cache, body in caches:
            try:
                self._reconcile(cache, body, nodes)
            except Conflict as err:
                self.log(f"{cache.ref}: {err}; next turn")
        return self.findings

    def _taint(self, caches: list[tuple[ModelCache, dict]], nodes: dict[str, dict]) -> None:
        for name, node in sorted(nodes.items()):
            lacking = [c.name for c, body in caches if name in rollout.targets(c, [node]) and
                       rollout.node_held_version(c, name, c.status.get("nodes") or {}, node) is None]
            if not lacking or rollout.has_not_ready_taint(node):
                continue
            taints = list((node.get("spec") or {}).get("taints") or [])
            taints.append({"key": NOT_READY_TAINT, "value": ",".join(sorted(lacking))[:63], "effect": "NoSchedule"})
            try:
                self.edge.patch_node(name, {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                            "spec": {"taints": taints}})
                self.log(f"node {name}: tainted {NOT_READY_TAINT}:NoSchedule (no copy of {', '.join(lacking)})")
            except Conflict:
                pass

    def _reconcile(self, cache: ModelCache, body: dict, nodes: dict[str, dict]) -> None:
        status = cache.status
        status_nodes = status.get("nodes") or {}  # checked by decode_cache
        names = rollout.targets(cache, nodes.values())
        verdict = rollout.readiness(cache, names, status_nodes, nodes)
        previous = {(w.get("kind"), w.get("namespace"), w.get("name")): w for w in status.get("workloads") or []
                    if isinstance(w, dict)} if isinstance(status.get("workloads"), list) else {}
        now = datetime.now(timezone.utc)
        rows, all_on_version = [], True
        for g in cache.spec.workloads:
            workload = self.edge.get_workload(g.kind, g.namespace, g.name)
            ref = f"{g.kind}/{g.namespace}/{g.name}"
            if workload is None:
                self.findings.append(f"{cache.ref}: gated workload {ref} does not exist")
                all_on_version = False
                continue
            before = previous.get((g.kind, g.namespace, g.name)) or {}
            patched_at = before.get("patchedAt")
            version = rollout.workload_version(cache, g, workload)
            if verdict.holds and version != cache.spec.version:
                workload = self.edge.patch_workload(g.kind, g.namespace, g.name,
                                                    rollout.workload_patch(cache, g, workload, cache.spec.version))
                version, patched_at = cache.spec.version, now_rfc3339()
                self.log(f"{cache.ref}: {verdict.available}/{verdict.total} nodes verified {cache.spec.version}; "
                         f"patched {ref}")
            all_on_version &= version == cache.spec.version
            mixed = rollout.mixed_replicas(workload)
            since = (before.get("mixedSince") or now_rfc3339()) if mixed else None
            started = parse_time(since) if since else None
            if started is not None and (now - started).total_seconds() > cache.spec.readiness.max_mixed_seconds:
                self.findings.append(f"{cache.ref}: {ref} has {mixed} replicas on an older version for "
                                     f"{int((now - started).total_seconds())} s (bound "
                                     f"{cache.spec.readiness.max_mixed_seconds:g} s)")
            spec_replicas = (workload.get("spec") or {}).get("replicas")
            rows.append(_without_nulls({"kind": g.kind, "namespace": g.namespace, "name": g.name, "version": version,
                         "patchedAt": patched_at, "mixedSince": since,
                         "replicas": (workload.get("status") or {}).get("replicas", spec_replicas),
                         "updatedReplicas": (workload.get("status") or {}).get("updatedReplicas")}))
        new_status = {"copies": verdict.as_copies(), "workloads": rows, "findings": self.findings_for(cache)}
        if verdict.holds and all_on_version:
            new_status["rolledOutVersion"] = cache.spec.version
        self.edge.patch_cache_status(cache.name, new_status)

    def findings_for(self, cache: ModelCache) -> list[str]:
        return [f for f in self.findings if f.startswith(cache.ref + ":")]


def _without_nulls(row: dict) -> dict:
    return {k: v for k, v in row.items() if v is not None}


def run(controller: Controller, *, once: bool, interval: float, sleep: Callable[[float], None] = time.sleep) -> int:
    """Turns until stopped (or one with `once`); exit status 1 when the turn had findings.

    In loop mode an unreachable API is retried with back-off (see `loop`), never an exit."""
    def turn() -> int:
        findings = controller.turn()
        for f in findings:
            controller.log(f"finding: {f}")
        return 1 if findings else 0

    return run_turns(turn, once=once, interval=interval, sleep=sleep, log=controller.log, what="controller")
