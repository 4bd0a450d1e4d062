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

from kubegpu.audit.engine import run_audit
from kubegpu.defrag import Goal, after_state, plan_defrag
from kubegpu.defrag.scope import namespace_policy, plan_in_namespace
from kubegpu.explain.batch import explain_one, iter_reports
from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_mix, cluster_placement
from kubegpu.fragmentation.gpumap import GpuMap, NodeMap, gpu_map
from kubegpu.jsontext import json_bytes
from kubegpu.model.cluster import ClusterState
from kubegpu.model.namespaces import NamespaceScope
from kubegpu.model.nodetable import NodeTable
from kubegpu.modelcache.metrics import metric_samples
from kubegpu.modelcache.overview import inputs_from_state
from kubegpu.money.cluster import cluster_prices
from kubegpu.money.prices import LIST_PRICES_BOOK, PriceBook
from kubegpu.money.findings import audit_json
from kubegpu.money.stranded import frag_cost, frag_json
from kubegpu.money.waits import WaitCosts
from kubegpu.money.why import why_json
from kubegpu.scheduling.versions import version_of
from kubegpu.status import cluster_status

# The blocker class of a pending pod: the filter that rejects most nodes, or these.
GANG_BLOCKER = "Gang"
FITS_BLOCKER = "none"
MAX_CACHED_PLANS = 64


def gang_blocked(report) -> bool:
    """The pod would fit alone, but its gang cannot reach minMember together."""
    return report.gang is not None and not report.gang.can_start


def is_blocked(report) -> bool:
    return not report.schedulable or gang_blocked(report)


def blocker_of(report) -> str:
    """The kube-scheduler plugin that rejects the most nodes for this pod (bounded label set)."""
    if report.schedulable:
        return GANG_BLOCKER if gang_blocked(report) else FITS_BLOCKER
    counts: Counter = Counter()
    if report.nodes is None:      # `why --all`: nodes grouped by outcome
        for g in report.node_groups:
            if not g.fits and g.plugin:
                counts[g.plugin] += g.count
    else:
        counts.update(n.plugin for n in report.nodes if not n.fits and n.plugin)
    return counts.most_common(1)[0][0] if counts else "Unknown"


class ClusterViews:
    """The views of one ClusterState. Immutable after construction, except the lazy caches."""

    def __init__(self, state: ClusterState, *, k8s_version: str | None = None, namespace: str | None = None,
                 prices: PriceBook = LIST_PRICES_BOOK) -> None:
        # every call below is the one its CLI command makes (`kubegpu X [-n NS] -o json`)
        self.state = state
        self.namespace = namespace
        self.scope = NamespaceScope(namespace)
        self.version = version_of(state.server_version, k8s_version)
        table = NodeTable.from_cluster(state)
        self.status = cluster_status(state, table, scope=self.scope)                   # status
        self.frag = cluster_frag_report(state, table=table, scope=self.scope)          # frag
        self.mix = cluster_mix(state, self.scope)                                      # frag --plot's mix
        self.placement = cluster_placement(state, table)
        # audit: its own frag report is the unscoped one, so hand ours in only when it is that one
        self.audit = run_audit(state, table=table, frag=None if namespace else self.frag, scope=self.scope)
        self.why = list(iter_reports(state, namespace=namespace, version=self.version))  # why --all
        self.gpumap: GpuMap = gpu_map(state, self.frag, self.mix, table)               # frag --plot
        self.pending_gpu = [r for r in self.why if self._wants_gpu(r.pod)]
        self.prices = cluster_prices(state, prices)                                    # --prices
        self.cost = frag_cost(self.frag, self.prices)                                  # frag's cost
        self.wait_costs = WaitCosts(state, self.prices)                                # why's money
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
        data = {"status": lambda: self.status, "frag": lambda: frag_json(self.frag, self.cost),
                "why": lambda: [why_json(r, self.wait_costs) for r in self.why],
                "audit": lambda: audit_json(self.audit, self.state, self.prices)}[name]
        return self.cached(("json", name), lambda: json_bytes(data()))

    def why_pod(self, namespace: str, name: str):
        """`kubegpu why NAME -n NAMESPACE`: the report of one pod (any phase), or None when there is no such pod."""
        pod = self.state.pod(namespace, name)
        if pod is None:
            return None
        return self.cached(("why", namespace, name), lambda: explain_one(self.state, pod, version=self.version))

    def defrag_plan(self, *, size: int | None = None, pod: str | None = None):
        """`kubegpu defrag [-n NS] --size K` or `--for POD` with the CLI's defaults: a plan, never applied."""
        goal = Goal(kind="size", size=size) if size is not None else Goal(kind="pod", pod=pod)
        return self.cached(("defrag", size, pod), lambda: plan_in_namespace(
            plan_defrag(self.state, goal, policy=namespace_policy(self.namespace)), self.namespace))

    def defrag_after_map(self, plan) -> list[NodeMap]:
        """The GPU map after the plan's moves (for the before/after preview)."""
        def compute():
            after = after_state(self.state, plan)
            return gpu_map(after, cluster_frag_report(after, scope=self.scope), self.mix).nodes
        goal = plan.goal
        return self.cached(("after", goal.kind, goal.size, goal.pod, goal.gang), compute)

    def model_cache_samples(self) -> list:
        """The ModelCache samples of /metrics (`kubegpu.modelcache.metrics`), none without ModelCaches."""
        return self.cached(("model-caches",), lambda: metric_samples(*inputs_from_state(self.state)))

    def pending_by_blocker(self) -> Counter:
        """(namespace, blocker) -> pending GPU pods (schedulable ones are not counted)."""
        return Counter((r.pod.partition("/")[0], blocker_of(r)) for r in self.pending_gpu if is_blocked(r))
