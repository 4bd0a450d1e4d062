"""The rollout gate's decisions, as pure functions over plain API objects (dicts).

Which nodes a cache targets, how many hold the version verified, whether the readiness rule
holds, which version a gated workload's pods are pointed at, the merge patch that points them
at another one, and which versions the pods of a node still use (so the agent never deletes
those). Pods are pointed at a version by a pod-template annotation (value: the version) or an
env var (value: ROOT/<model>/<version>), as the ModelCache names.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable

from kubegpu.modelcache.spec import HOLDS_ANNOTATION_PREFIX, NOT_READY_TAINT, GatedWorkload, ModelCache

STATES = ("Pending", "Downloading", "Verified", "Error")


def _labels(node: dict) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def targets(cache: ModelCache, nodes: Iterable[dict]) -> list[str]:
    """Names of the nodes the cache's nodeSelector picks (every node when it is empty), sorted."""
    sel = cache.spec.node_selector
    return sorted(n["metadata"]["name"] for n in nodes if all(_labels(n).get(k) == v for k, v in sel.items()))


def node_held_version(cache: ModelCache, node: str, status_nodes: dict, node_obj: dict | None = None) -> str | None:
    """The verified version `current` points at on a node: from the status, else the node annotation."""
    entry = status_nodes.get(node) or {}
    if entry.get("current"):
        return entry["current"]
    annotations = ((node_obj or {}).get("metadata") or {}).get("annotations") or {}
    return annotations.get(HOLDS_ANNOTATION_PREFIX + cache.name)


def node_state(cache: ModelCache, node: str, status_nodes: dict, node_obj: dict | None = None) -> str:
    """Pending | Downloading | Verified | Error for the cache's *current* spec.version on one node."""
    if node_held_version(cache, node, status_nodes, node_obj) == cache.spec.version:
        return "Verified"
    entry = status_nodes.get(node) or {}
    if entry.get("version") == cache.spec.version and entry.get("state") in ("Downloading", "Error"):
        return entry["state"]
    return "Pending"


@dataclass(frozen=True)
class Readiness:
    available: int
    total: int
    failed: int
    required: int

    @property
    def holds(self) -> bool:
        return self.total > 0 and self.available >= self.required

    def as_copies(self) -> dict[str, int]:
        return {"available": self.available, "total": self.total, "failed": self.failed}


def readiness(cache: ModelCache, target_nodes: list[str], status_nodes: dict,
              node_objs: dict[str, dict] | None = None) -> Readiness:
    """copies{available,total,failed} for spec.version and the number the rule requires (N of M, or all)."""
    states = [node_state(cache, n, status_nodes, (node_objs or {}).get(n)) for n in target_nodes]
    total = len(target_nodes)
    required = total if cache.spec.readiness.min_nodes is None else cache.spec.readiness.min_nodes
    return Readiness(states.count("Verified"), total, states.count("Error"), required)


# -- workloads -------------------------------------------------------------------------------------

def _template_paths(kind: str) -> list[tuple[str, ...]]:
    if kind == "LeaderWorkerSet":
        return [("spec", "leaderWorkerTemplate", "workerTemplate"), ("spec", "leaderWorkerTemplate", "leaderTemplate")]
    return [("spec", "template")]


def _dig(obj: dict, path: tuple[str, ...]) -> Any:
    cur: Any = obj
    for key in path:
        cur = cur.get(key) if isinstance(cur, dict) else None
    return cur


def version_path(cache: ModelCache, version: str) -> str:
    return f"{cache.spec.root.rstrip('/')}/{cache.name}/{version}"


def _version_from_path(cache: ModelCache, value: str | None) -> str | None:
    prefix = f"{cache.spec.root.rstrip('/')}/{cache.name}/"
    if value and value.startswith(prefix):
        return value[len(prefix):].split("/", 1)[0] or None
    return None


def _containers(pod_spec: dict, gated: GatedWorkload) -> list[dict]:
    items = (pod_spec or {}).get("containers") or []
    return [c for c in items if gated.env and (gated.env.container is None or c.get("name") == gated.env.container)]


def template_version(cache: ModelCache, gated: GatedWorkload, template: dict | None) -> str | None:
    """The version a pod template points at (annotation first, else the env var)."""
    if not template:
        return None
    if gated.annotation:
        value = ((template.get("metadata") or {}).get("annotations") or {}).get(gated.annotation)
        if value:
            return value
    if gated.env:
        for c in _containers(template.get("spec") or {}, gated):
            for e in c.get("env") or []:
                if e.get("name") == gated.env.name:
                    return _version_from_path(cache, e.get("value"))
    return None


def workload_version(cache: ModelCache, gated: GatedWorkload, workload: dict) -> str | None:
    return template_version(cache, gated, _dig(workload, _template_paths(gated.kind)[0]))


def point_template(cache: ModelCache, gated: GatedWorkload, template: dict, version: str) -> dict:
    """The merge-patch fragment that points one pod template at `version`."""
    frag: dict[str, Any] = {}
    if gated.annotation:
        frag["metadata"] = {"annotations": {gated.annotation: version}}
    if gated.env:
        containers = copy.deepcopy((template.get("spec") or {}).get("containers") or [])
        for c in containers:
            if gated.env.container is not None and c.get("name") != gated.env.container:
                continue
            env = [e for e in c.get("env") or [] if e.get("name") != gated.env.name]
            c["env"] = env + [{"name": gated.env.name, "value": version_path(cache, version)}]
        frag["spec"] = {"containers": containers}  # merge patch replaces lists whole: send them all
    return frag


def workload_patch(cache: ModelCache, gated: GatedWorkload, workload: dict, version: str) -> dict:
    """A JSON merge patch (RFC 7386) pointing every pod template of the workload at `version`.

    It carries the resourceVersion it was computed from, so a concurrent edit answers 409.
    """
    patch: dict[str, Any] = {"metadata": {"resourceVersion": workload["metadata"].get("resourceVersion")}}
    for path in _template_paths(gated.kind):
        template = _dig(workload, path)
        if template is None:
            continue
        cur = patch
        for key in path[:-1]:
            cur = cur.setdefault(key, {})
        cur[path[-1]] = point_template(cache, gated, template, version)
    return patch


def mixed_replicas(workload: dict) -> int:
    """Replicas not yet on the workload's current template (the rollout is in progress)."""
    status = workload.get("status") or {}
    spec_replicas = (workload.get("spec") or {}).get("replicas")
    replicas = status.get("replicas", spec_replicas or 0) or 0
    if status.get("observedGeneration", 0) < (workload.get("metadata") or {}).get("generation", 0):
        return replicas
    return max(0, replicas - (status.get("updatedReplicas") or 0))


# -- pods of a node ----------------------------------------------------------------------------------

def versions_used_by_pods(cache: ModelCache, pods: Iterable[dict]) -> set[str]:
    """Versions of this model that running pods reference: gated annotations, env values, hostPath paths."""
    keys = {g.annotation for g in cache.spec.workloads if g.annotation}
    used: set[str] = set()
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        used |= {annotations[k] for k in keys if annotations.get(k)}
        spec = pod.get("spec") or {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            for e in c.get("env") or []:
                v = _version_from_path(cache, e.get("value"))
                if v:
                    used.add(v)
        for vol in spec.get("volumes") or []:
            v = _version_from_path(cache, (vol.get("hostPath") or {}).get("path"))
            if v:
                used.add(v)
    return used  # "current" in it: a pod mounted the pointer, so the version it resolved is unknown


def has_not_ready_taint(node: dict) -> bool:
    return any(t.get("key") == NOT_READY_TAINT for t in (node.get("spec") or {}).get("taints") or [])
