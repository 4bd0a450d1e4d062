"""PodTopologySpread: hard (DoNotSchedule) constraints keep the skew of matching pods <= maxSkew.

upstream PreFilter counts matching pods per topology domain once per cycle: only nodes that
carry every constraint's topology key and pass the constraint's inclusion policies (node
affinity Honor by default, taints Ignore by default) count; pods counted are the pod's
namespace, not terminating, matching the selector (plus matchLabelKeys). Filter walks the
constraints in order: a node without the key is UnschedulableAndUnresolvable; `matching +
self - global minimum > maxSkew` is Unschedulable (the minimum is 0 while fewer than
minDomains domains exist). Counts are numpy bincounts over the pod columns.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.objects import LabelSelector, LabelSelectorRequirement
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.filters.nodeaffinity import node_affinity_mask
from kubegpu.scheduling.filters.tainttoleration import first_untolerated
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_STATUSES = [(Code.UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,)),
             (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,))]


def _selector(constraint, pod) -> LabelSelector | None:
    """The constraint's selector with matchLabelKeys merged in; None (matches no pod, not even the
    incoming one) when labelSelector is unset: upstream converts a nil selector to labels.Nothing(),
    and merging keys into Nothing leaves it Nothing (filtering_test.go "existing pods do not match
    null selector")."""
    sel = constraint.label_selector
    if sel is None:
        return None
    extra = [LabelSelectorRequirement(key=k, operator="In", values=[pod.labels[k]])
             for k in constraint.match_label_keys if k in pod.labels]
    return LabelSelector(match_labels=dict(sel.match_labels), match_expressions=[*sel.match_expressions, *extra])


class _Constraint:
    """One hard constraint's PreFilter state: domains, matching counts, the global minimum."""

    def __init__(self, ctx: CycleContext, view, c, all_keys: np.ndarray) -> None:
        snap = ctx.snapshot
        pod = ctx.pod
        labels = snap.labels
        self.c = c
        self.col = labels.column(c.topology_key)
        eligible = all_keys.copy()
        if c.node_affinity_policy != "Ignore":
            eligible &= node_affinity_mask(pod, labels)
        if c.node_taints_policy == "Honor":
            ok_group = np.asarray([first_untolerated(t, pod.spec.tolerations) is None for t in snap.taint_sets],
                                  dtype=bool)
            eligible &= ok_group[snap.taint_group]
        self.eligible = eligible
        selector = _selector(c, pod)
        m = snap.slot_count
        cols = snap.pod_columns
        slots = snap.visible_slots(view) & ~cols.terminating[:m] & cols.selector(selector, m)
        slots &= cols.namespaces([pod.namespace], m)
        slots &= eligible[np.maximum(snap.pod_node[:m], 0)]
        self.slots = slots
        dom = self.col[snap.pod_node[:m][slots]]
        extra = [i for i, infos in view.extra.items() for info in infos if eligible[i]
                 and info.pod.namespace == pod.namespace and info.pod.metadata.deletion_timestamp is None
                 and selector_matches(selector, info.pod.labels)]
        if extra:
            dom = np.concatenate([dom, self.col[np.asarray(extra, dtype=np.int64)]])
        size = int(self.col.max()) + 1 if len(self.col) else 0
        self.counts = np.bincount(dom, minlength=size) if size else np.zeros(0, dtype=np.int64)
        seen = self.col[eligible]
        self.domains = np.flatnonzero(np.bincount(seen, minlength=size)) if len(seen) else seen  # codes are small
        self.min_match = int(self.counts[self.domains].min()) if len(self.domains) else 0
        self.few_domains = bool(c.min_domains) and len(self.domains) < c.min_domains
        self.self_match = 1 if selector_matches(selector, pod.labels) else 0

    def skewed(self, idx: np.ndarray, removed_here: np.ndarray | None) -> np.ndarray:
        d = self.col[idx]
        match = np.where(d >= 0, self.counts[np.maximum(d, 0)] if len(self.counts) else 0, 0)
        low = np.full(len(idx), 0 if self.few_domains else self.min_match, dtype=np.int64)
        if removed_here is not None:
            r = np.where(self.eligible[idx], removed_here, 0)
            match = match - r
            if not self.few_domains:
                low = np.where(self.eligible[idx], np.minimum(low, match), low)
        return (d >= 0) & (match + self.self_match - low > self.c.max_skew)


class PodTopologySpreadFilter(FilterPlugin):
    name = NAME
    node_local = False  # a node's verdict depends on pods of every domain

    def pre_filter(self, ctx: CycleContext):
        hard = [c for c in ctx.pod.spec.topology_spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return Status(Code.SKIP)
        ctx.data[NAME] = hard
        return None

    def _verdicts(self, ctx: CycleContext, view, idx: np.ndarray, removed: np.ndarray | None) -> np.ndarray:
        snap = ctx.snapshot
        hard = ctx.data[NAME]
        all_keys = np.ones(len(snap.nodes), dtype=bool)
        for c in hard:
            all_keys &= snap.labels.column(c.topology_key) >= 0
        k = len(idx)
        verdict = np.zeros(k, dtype=np.int8)  # 0 pass, 1 missing label, 2 skew
        for c in hard:
            prep = _Constraint(ctx, view, c, all_keys)
            removed_here = None
            if removed is not None:
                hit = prep.slots & removed[: len(prep.slots)]
                removed_here = np.bincount(snap.pod_node[: len(hit)][hit], minlength=len(snap.nodes))[idx]
            open_ = verdict == 0
            verdict[open_ & (prep.col[idx] < 0)] = 1
            verdict[(verdict == 0) & prep.skewed(idx, removed_here)] = 2
        return verdict

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        return NodeStatuses.from_choice(self._verdicts(ctx, view, idx, None), _STATUSES)

    def filter_removed(self, ctx: CycleContext, view, removed: np.ndarray, idx: np.ndarray) -> NodeStatuses:
        """Per node i of idx: the verdict once the `removed` pod slots on node i alone are gone."""
        return NodeStatuses.from_choice(self._verdicts(ctx, view, idx, removed), _STATUSES)
