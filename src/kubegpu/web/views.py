"""Everything `kubegpu serve` answers, computed once per cluster state and cached.

Each view is the result of the same engine call the CLI command makes (status, frag, why,
defrag, audit), so `/api/X` is byte-for-byte `kubegpu X -o json` of the same cluster.
Parameterised views (one pod's why, a defrag plan) are computed on first request and kept
until the next cluster change replaces the whole object.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Callable


from kubegpu.cli.render import dump_json
from kubegpu.model.cluster import ClusterState
from kubegpu.model.nodetable import NodeTable
from kubegpu.web.gpumap_view import MapNode, gpu_map

# The blocker class of a pending pod: the filter that rejects most nodes, or these.
GANG_BLOCKER = "Gang"
FITS_BLOCKER = "none"
MAX_CACHED_PLANS = 64


def gang_blocked(report) -> bool:
    """The pod would fit alone, but its gang cannot reach minMember together."""
    g = report.gang
    return g is not None and g.bound + g.fit_together < g.min_member


def is_blocked(report) -> bool:
    return not report.schedulable or gang_blocked(report)


def blocker_of(report) -> str:
    """The kube-scheduler plugin that rejects the most nodes for this pod (bounded label set)."""
    if report.schedulable:
        return GANG_BLOCKER if gang_blocked(report) else FITS_BLOCKER
    counts = Counter(n.plugin for n in report.nodes if not n.fits and n.plugin)
    return counts.most_common(1)[0][0] if counts else "Unknown"


class ClusterViews:
    """The views of one ClusterState. Immutable after construction, except the lazy caches."""

    def __init__(self, state: ClusterState, *, k8s_version: str | None = None, namespace: str | None = None) -> None:
        from kubegpu.audit.engine import run_audit
        from kubegpu.explain.report import explain_all
        from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement
        from kubegpu.fragmentation.report import frag_report
        from kubegpu.scheduling.versions import version_of
        from kubegpu.status import cluster_status

        self.state = state
        self.version = version_of(state.server_version, k8s_version)
        table = NodeTable.from_cluster(state)
        self.status = cluster_status(state, table)
        self.mix = cluster_mix(state)
        self.placement = cluster_placement(state, table)
        self.frag = frag_report(self.placement, self.mix)
        # the audit first: its own explain pass is freed before the why reports are built (peak memory)
        self.audit = run_audit(state, table=table, frag=self.frag)
        self.why = explain_all(state, namespace=namespace, version=self.version)   # as `why --all [-n NS]`
        self.gpumap: list[MapNode] = gpu_map(state, self.placement, self.mix)
        self.pending_gpu = [r for r in self.why if self._wants_gpu(r.pod)]
        self._lock = threading.Lock()
        self._cache: dict[tuple, Any] = {}

    def _wants_gpu(self, key: str) -> bool:
        ns, _, name = key.partition("/")
        pod = self.state.pod(ns, name)
        return pod is not None and self.state.gpu_demand(pod).is_gpu

    def cached(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """Compute once per state; parameterised results are bounded in number."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._lock:
            if len(self._cache) >= MAX_CACHED_PLANS:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = value
        return value

    # ---- JSON bodies, exactly as the CLI's -o json ---------------------------------------------
    def json(self, name: str) -> bytes:
        data = {"status": lambda: self.status, "frag": lambda: self.frag, "why": lambda: self.why,
                "audit": lambda: self.audit}[name]
        return self.cached(("json", name), lambda: dump_json(data()).encode())

    def why_pod(self, namespace: str, name: str):
        """The why report of one pod (any phase), or None when the cluster has no such pod."""
        pod = self.state.pod(namespace, name)
        if pod is None:
            return None

        def compute():
            from kubegpu.explain.report import explain_pod
            from kubegpu.scheduling.gang import find_gangs
            from kubegpu.scheduling.snapshot import SchedulingSnapshot

            return explain_pod(SchedulingSnapshot.from_cluster(self.state), pod, version=self.version,
                               gangs=find_gangs(self.state))
        return self.cached(("why", namespace, name), compute)

    def defrag_plan(self, *, size: int | None = None, pod: str | None = None):
        """`kubegpu defrag --size K` or `--for POD`: a plan, never applied."""
        from kubegpu.defrag import EvictionPolicy, Goal, plan_defrag

        goal = Goal(kind="size", size=size) if size is not None else Goal(kind="pod", pod=pod)
        return self.cached(("defrag", size, pod),
                           lambda: plan_defrag(self.state, goal, policy=EvictionPolicy(), exact="auto",
                                               milp_time_limit=20.0))

    def defrag_after_map(self, plan) -> list[MapNode]:
        """The GPU map after the plan's moves (for the before/after preview)."""
        def compute():
            from kubegpu.defrag import after_state
            from kubegpu.fragmentation.cluster import cluster_placement

            after = after_state(self.state, plan)
            return gpu_map(after, cluster_placement(after), self.mix)
        goal = plan.goal
        return self.cached(("after", goal.kind, goal.size, goal.pod, goal.gang), compute)

    def pending_by_blocker(self) -> Counter:
        """(namespace, blocker) -> pending GPU pods (schedulable ones are not counted)."""
        return Counter((r.pod.partition("/")[0], blocker_of(r)) for r in self.pending_gpu if is_blocked(r))
