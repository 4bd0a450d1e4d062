"""One scheduling attempt of one pod: PreFilter, then every Filter on every node.

kube-scheduler stops at the first failing filter per node; the `FilterOutcome` keeps every
plugin's verdict so `why` can list all blockers, and derives the first failing one (what the
event reports) from the registry order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, NodeView, PodInfo, PreFilterResult, Status
from kubegpu.scheduling.registry import DEFAULT_FILTERS
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion, version_of

OUTSIDE_PREFILTER = -2  # node left out by a PreFilterResult
FITS = -1


@dataclass
class FilterOutcome:
    """Every filter's verdict on every node for one pod."""

    pod: Pod
    info: PodInfo
    version: KubeVersion
    num_nodes: int
    prefilter: Status | None = None          # a PreFilter rejection (the whole cycle stops)
    narrowed_by: tuple[str, ...] = ()        # plugins whose PreFilterResult narrowed the nodes
    allowed: np.ndarray | None = None        # nodes inside the PreFilterResult
    skipped: frozenset[str] = frozenset()
    plugins: list[str] = field(default_factory=list)
    results: list[NodeStatuses] = field(default_factory=list)
    first: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int16))

    @property
    def fits(self) -> np.ndarray:
        return self.first == FITS

    @property
    def feasible(self) -> np.ndarray:
        return np.flatnonzero(self.fits)

    @property
    def schedulable(self) -> bool:
        return self.prefilter is None and bool(self.fits.any())

    def mask_except(self, *plugins: str) -> np.ndarray:
        """bool[n]: nodes where every filter but `plugins` passes (inside the PreFilterResult, no rejection).

        "Where only room keeps the pod out" is `mask_except("NodeResourcesFit")`: the defrag
        planner and the audit then apply their own what-if room with `scheduling.fit`.
        """
        if self.prefilter is not None:
            return np.zeros(self.num_nodes, dtype=bool)
        ok = np.ones(self.num_nodes, dtype=bool) if self.allowed is None else self.allowed.copy()
        for name, res in zip(self.plugins, self.results):
            if name not in plugins:
                ok &= res.code == 0
        return ok

    def outside_reason(self) -> str:
        return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(self.narrowed_by))}]"

    def first_status(self, i: int) -> Status:
        """The status kube-scheduler records for node i (first failing filter)."""
        if self.prefilter is not None:
            return self.prefilter
        p = int(self.first[i])
        if p == FITS:
            return Status()
        if p == OUTSIDE_PREFILTER:
            return Status(Code.UNRESOLVABLE, (self.outside_reason(),), None)
        return self.results[p].status(i, self.plugins[p])

    def all_statuses(self, i: int) -> list[Status]:
        """Every failing filter on node i, in profile order (what the event never shows)."""
        out = []
        if self.allowed is not None and not self.allowed[i]:
            out.append(Status(Code.UNRESOLVABLE, (self.outside_reason(),), None))
        for p, res in enumerate(self.results):
            if res.code[i]:
                out.append(res.status(i, self.plugins[p]))
        return out

    def codes(self) -> np.ndarray:
        """The first-failing status code per node (0 where the pod fits)."""
        if self.prefilter is not None:
            return np.full(self.num_nodes, int(self.prefilter.code), dtype=np.int8)
        out = np.zeros(self.num_nodes, dtype=np.int8)
        out[self.first == OUTSIDE_PREFILTER] = Code.UNRESOLVABLE
        for p, res in enumerate(self.results):
            sel = self.first == p
            out[sel] = res.code[sel]
        return out

    def reason_counts(self, among: np.ndarray | None = None) -> Counter:
        """The event's histogram input: first-failing reasons counted over nodes (or the `among` mask)."""
        counts: Counter = Counter()
        if self.prefilter is not None:
            return counts
        within = np.ones(self.num_nodes, dtype=bool) if among is None else among
        outside = int(((self.first == OUTSIDE_PREFILTER) & within).sum())
        if outside:
            counts[self.outside_reason()] += outside
        for p, res in enumerate(self.results):
            sel = (self.first == p) & within
            if not sel.any():
                continue
            rids, n = np.unique(res.rid[sel], return_counts=True)
            for rid, c in zip(rids.tolist(), n.tolist()):
                for reason in res.table[rid]:
                    counts[reason] += c
        return counts


def make_context(snapshot: SchedulingSnapshot, pod: Pod, version: KubeVersion, info: PodInfo | None) -> CycleContext:
    return CycleContext(pod=pod, info=info or snapshot.pod_info(pod), snapshot=snapshot, version=version)


def run_prefilters(ctx: CycleContext) -> tuple[Status | None, frozenset[str], np.ndarray | None, tuple[str, ...]]:
    """upstream RunPreFilterPlugins: (rejection, skipped plugins, allowed-node mask, narrowing plugins).

    An UnschedulableAndUnresolvable rejection stops at once; an Unschedulable one lets the rest
    run (kubernetes#119770); an empty intersection of PreFilterResults rejects the pod.
    """
    skipped: set[str] = set()
    rejection: Status | None = None
    names: frozenset[str] | None = None
    narrowing: list[str] = []
    for plugin in DEFAULT_FILTERS:
        res = plugin.pre_filter(ctx)
        if isinstance(res, Status):
            if res.code == Code.SKIP:
                skipped.add(plugin.name)
                continue
            if res.rejected:
                status = Status(res.code, res.reasons, plugin.name)
                if res.code == Code.UNRESOLVABLE:
                    return status, frozenset(skipped), None, ()
                rejection = rejection or status
                continue
        if isinstance(res, PreFilterResult):
            narrowing.append(plugin.name)
            names = res.node_names if names is None else names & res.node_names
    if rejection is not None:
        return rejection, frozenset(skipped), None, ()
    allowed = None
    if names is not None:
        if not names & set(ctx.snapshot.index):
            # upstream: the PreFilterResult names no existing node
            msg = (f"node(s) didn't satisfy plugin {narrowing[0]}" if len(narrowing) == 1
                   else f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}] simultaneously")
            return Status(Code.UNRESOLVABLE, (msg,), None), frozenset(skipped), None, tuple(narrowing)
        allowed = np.isin(np.asarray(ctx.snapshot.names, dtype=object), list(names))
    return None, frozenset(skipped), allowed, tuple(narrowing)


def run_filters(snapshot: SchedulingSnapshot, pod: Pod, version: KubeVersion, *, info: PodInfo | None = None,
                view: NodeView | None = None, ctx: CycleContext | None = None,
                removed_per_node: np.ndarray | None = None) -> FilterOutcome:
    """PreFilter + every Filter of the default profile for `pod`, over all nodes of `view`.

    `removed_per_node` (a mask over pod slots) answers, for every node at once, "would the pod
    fit on node i once the masked pods on node i alone are gone" (preemption's per-node dry
    run): node-local filters read the view without them; filters that count pods across a
    topology domain subtract only node i's share.
    """
    ctx = ctx or make_context(snapshot, pod, version, info)
    n = len(snapshot.nodes)
    out = FilterOutcome(pod=pod, info=ctx.info, version=version, num_nodes=n)
    rejection, skipped, allowed, narrowing = run_prefilters(ctx)
    out.skipped = skipped
    if rejection is not None:
        out.prefilter = rejection
        out.narrowed_by = narrowing
        out.first = np.full(n, 0, dtype=np.int16)
        return out
    out.allowed, out.narrowed_by = allowed, narrowing
    view = view or snapshot.view(ctx.info)
    idx = np.arange(n)
    first = np.full(n, FITS, dtype=np.int16)
    if allowed is not None:
        first[~allowed] = OUTSIDE_PREFILTER
    emptied = view.without(removed_per_node) if removed_per_node is not None else view
    for plugin in DEFAULT_FILTERS:
        if plugin.name in skipped:
            continue
        if removed_per_node is not None and not plugin.node_local:
            res = plugin.filter_removed(ctx, view, removed_per_node, idx)
        else:
            res = plugin.filter(ctx, emptied, idx)
        p = len(out.plugins)
        out.plugins.append(plugin.name)
        out.results.append(res)
        first[(first == FITS) & (res.code != 0)] = p
    out.first = first
    return out


def filter_pod(snapshot: SchedulingSnapshot, pod: Pod, *, version: KubeVersion | None = None) -> FilterOutcome:
    """PreFilter and every Filter of the default profile for `pod` on every node of `snapshot`
    (the version: the snapshot's cluster's, unless given)."""
    return run_filters(snapshot, pod, version if version is not None else version_of(snapshot.state.server_version, snapshot.state.k8s_version))
