"""A kube-scheduler stand-in that calls an extender exactly as upstream's HTTPExtender does.

Sources (facts: ../shared/reference/live-scheduling-facts.md section 1): pkg/scheduler/extender.go
(HTTPExtender.send/Filter/Prioritize/ProcessPreemption/IsInterested), schedule_one.go
(numFeasibleNodesToFind, findNodesThatPassExtenders, prioritizeNodes, selectHost).

* transport: POST <urlPrefix without trailing "/">/<verb>, Content-Type application/json, the
  client timeout `httpTimeout` (default 5 s); any status but 200 is the error
  "failed <verb> with extender at URL <url>, code <status>";
* who is sent: pods requesting or limiting a managed resource (containers or initContainers);
* filter: NodeNames only when nodeCacheCapable, else the full NodeList; a reply name not in
  the input is an error; `Error` fails the attempt unless the extender is ignorable (skipped);
  FailedAndUnresolvableNodes wins over FailedNodes;
* sampling: numFeasibleNodesToFind (all below 100 nodes; else N x p / 100, p adaptive
  50 - N/125 with floor 5 when percentageOfNodesToScore is 0, at least 100), scanning from a
  rotating start index;
* prioritize: skipped with one feasible node; an error is ignored (no score); each Score is
  added as Score x weight x (100 / 10) to the stand-in's own plugin total;
* selectHost: the highest total, ties broken uniformly at random (seeded here).

The stand-in's own filters are kubegpu's scheduling core (run_filters); its own scores are
kube-scheduler's default resource scores: NodeResourcesFit LeastAllocated and
NodeResourcesBalancedAllocation on cpu and memory (weight 1 each).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
import msgspec
import numpy as np

from kubegpu.scheduling.cycle import run_filters
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import version_of

DEFAULT_EXTENDER_TIMEOUT = 5.0     # upstream DefaultExtenderTimeout
MAX_NODE_SCORE = 100
MAX_EXTENDER_PRIORITY = 10
MIN_FEASIBLE_NODES = 100           # minFeasibleNodesToFind
MIN_FEASIBLE_PERCENTAGE = 5        # minFeasibleNodesPercentageToFind


class ExtenderError(Exception):
    pass


@dataclass
class ExtenderConfig:
    """KubeSchedulerConfiguration extenders[] (the keys the stand-in honours)."""

    url_prefix: str
    filter_verb: str = "filter"
    prioritize_verb: str = "prioritize"
    preempt_verb: str = ""
    weight: int = 1
    node_cache_capable: bool = True
    ignorable: bool = False
    http_timeout: float = 0.0
    managed_resources: list[str] = field(default_factory=list)


def num_feasible_nodes_to_find(num_all: int, percentage: int = 0) -> int:
    """upstream numFeasibleNodesToFind."""
    if num_all < MIN_FEASIBLE_NODES:
        return num_all
    adaptive = percentage
    if adaptive <= 0:
        adaptive = max(50 - num_all // 125, MIN_FEASIBLE_PERCENTAGE)
    num = num_all * adaptive // 100
    return max(num, MIN_FEASIBLE_NODES)


def is_interested(pod: dict, managed: list[str]) -> bool:
    """upstream IsInterested: any container or init container requests or limits a managed resource."""
    if not managed:
        return True
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        for part in ("requests", "limits"):
            if any(r in managed for r in (res.get(part) or {})):
                return True
    return False


class HTTPExtender:
    def __init__(self, config: ExtenderConfig, client: httpx.Client) -> None:
        self.config = config
        self.client = client

    def send(self, verb: str, args) -> object:
        url = self.config.url_prefix.rstrip("/") + "/" + verb
        timeout = self.config.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        resp = self.client.post(url, content=msgspec.json.encode(args),
                                headers={"Content-Type": "application/json"}, timeout=timeout)
        if resp.status_code != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status_code}")
        return msgspec.json.decode(resp.content)

    def _args(self, pod: dict, nodes: list[dict]) -> dict:
        if self.config.node_cache_capable:
            return {"Pod": pod, "Nodes": None, "NodeNames": [n["metadata"]["name"] for n in nodes]}
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}

    def filter(self, pod: dict, nodes: list[dict]) -> tuple[list[dict], dict, dict]:
        result = self.send(self.config.filter_verb, self._args(pod, nodes))
        if result.get("Error"):
            raise ExtenderError(result["Error"])
        by_name = {n["metadata"]["name"]: n for n in nodes}
        out: list[dict] = []
        if self.config.node_cache_capable and result.get("NodeNames") is not None:
            for name in result["NodeNames"]:
                if name not in by_name:
                    raise ExtenderError(f'extender "{self.config.url_prefix}" claims a filtered node "{name}" '
                                        "which is not found in the input node list")
                out.append(by_name[name])
        elif result.get("Nodes") is not None:
            out = list(result["Nodes"].get("items") or [])
        return out, result.get("FailedNodes") or {}, result.get("FailedAndUnresolvableNodes") or {}

    def prioritize(self, pod: dict, nodes: list[dict]) -> dict[str, int]:
        result = self.send(self.config.prioritize_verb, self._args(pod, nodes))
        return {h["Host"]: h["Score"] for h in result}


def own_scores(snap: SchedulingSnapshot, pod_vec: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """LeastAllocated + BalancedAllocation on cpu and memory (upstream default weights 1 and 1)."""
    cols = [snap.column["cpu"], snap.column["memory"]]
    alloc = snap.alloc[nodes][:, cols].astype(np.float64)
    req = (snap.requested[nodes][:, cols] + pod_vec[cols]).astype(np.float64)
    safe = np.where(alloc > 0, alloc, 1.0)
    least = np.where(alloc > 0, np.maximum(alloc - req, 0) * MAX_NODE_SCORE // safe, 0).sum(axis=1) // 2
    frac = np.minimum(req / safe, 1.0)
    balanced = ((1.0 - np.abs(frac[:, 0] - frac[:, 1]) / 2) * MAX_NODE_SCORE).astype(np.int64)
    return least.astype(np.int64) + balanced


@dataclass
class Attempt:
    node: str | None
    error: str = ""
    feasible: list[str] = field(default_factory=list)
    extender_scores: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)


class StandIn:
    """Schedules pods one at a time over its own snapshot, calling the extenders like kube-scheduler."""

    def __init__(self, snapshot: SchedulingSnapshot, node_objects: dict[str, dict], extenders: list[HTTPExtender],
                 *, percentage: int = 0, seed: int = 0) -> None:
        self.snap = snapshot
        self.node_objects = node_objects
        self.extenders = sorted(extenders, key=lambda e: e.config.ignorable)   # ignorable ones last
        self.percentage = percentage
        self.next_start = 0
        self.rng = np.random.default_rng(seed)
        self.version = version_of(snapshot.state.server_version)

    def schedule(self, pod_doc: dict, pod_obj) -> Attempt:
        snap = self.snap
        info = snap.pod_info(pod_obj)
        outcome = run_filters(snap, pod_obj, self.version, info=info)
        n = len(snap.names)
        want = num_feasible_nodes_to_find(n, self.percentage)
        order = (np.arange(n) + self.next_start) % n
        fits = outcome.fits[order]
        feasible_pos = np.flatnonzero(fits)[:want]
        feasible = order[feasible_pos]
        if len(feasible_pos):
            self.next_start = (self.next_start + int(feasible_pos[-1]) + 1) % n
        nodes = [self.node_objects[snap.names[i]] for i in feasible.tolist()]
        for ext in self.extenders:
            if not nodes:
                break
            if not is_interested(pod_doc, ext.config.managed_resources) or not ext.config.filter_verb:
                continue
            try:
                nodes, _, _ = ext.filter(pod_doc, nodes)
            except (ExtenderError, httpx.HTTPError) as err:
                if ext.config.ignorable:
                    continue
                return Attempt(None, error=str(err))
        names = [nd["metadata"]["name"] for nd in nodes]
        if not names:
            return Attempt(None, error="unschedulable")
        if len(names) == 1:
            return self._bind(info, names[0], Attempt(names[0], feasible=names))
        idx = np.asarray([snap.index[nm] for nm in names])
        totals = dict(zip(names, own_scores(snap, info.vector, idx).tolist()))
        ext_scores: dict[str, int] = {}
        for ext in self.extenders:
            if not ext.config.prioritize_verb or not is_interested(pod_doc, ext.config.managed_resources):
                continue
            try:
                scores = ext.prioritize(pod_doc, nodes)
            except (ExtenderError, httpx.HTTPError):
                continue          # upstream: a prioritize error is ignored
            for host, score in scores.items():
                ext_scores[host] = score
                if host in totals:
                    totals[host] += score * ext.config.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        best = max(totals.values())
        tied = [h for h in names if totals[h] == best]
        chosen = tied[int(self.rng.integers(len(tied)))]
        return self._bind(info, chosen, Attempt(chosen, feasible=names, extender_scores=ext_scores, totals=totals))

    def _bind(self, info, node: str, attempt: Attempt) -> Attempt:
        self.snap.assume(info, node)
        return attempt
