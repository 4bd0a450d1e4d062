"""PodTopologySpread: hard (DoNotSchedule) constraints keep the skew of matching pods <= maxSkew.

upstream: domains are the topology values of nodes that pass the pod's node affinity (Honor,
the default nodeAffinityPolicy) and, with nodeTaintsPolicy Honor, its taints; pods counted are
those of the pod's namespace matching the selector (plus matchLabelKeys). A node without the
topology key is UnschedulableAndUnresolvable; too much skew is Unschedulable.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kubegpu.model.objects import LabelSelector, LabelSelectorRequirement
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.filters.nodeaffinity import node_affinity_mask
from kubegpu.scheduling.filters.tainttoleration import first_untolerated
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


def _selector(constraint, pod) -> LabelSelector:
    sel = constraint.label_selector or LabelSelector()
    extra = [LabelSelectorRequirement(key=k, operator="In", values=[pod.labels[k]])
             for k in constraint.match_label_keys if k in pod.labels]
    return LabelSelector(match_labels=dict(sel.match_labels), match_expressions=[*sel.match_expressions, *extra])


class PodTopologySpreadFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        hard = [c for c in ctx.pod.spec.topology_spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return Status(Code.SKIP)
        ctx.data[NAME] = hard
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        snap = ctx.snapshot
        pod = ctx.pod
        labels = snap.labels
        eligible_base = node_affinity_mask(pod, labels)
        missing = np.zeros(labels.n, dtype=bool)
        skewed = np.zeros(labels.n, dtype=bool)
        for c in ctx.data[NAME]:
            col = labels.column(c.topology_key)
            missing |= col < 0
            eligible = eligible_base & (col >= 0)
            if c.node_affinity_policy == "Ignore":
                eligible = col >= 0
            if c.node_taints_policy == "Honor":
                ok = np.asarray([first_untolerated(snap.taint_sets[g], pod.spec.tolerations) is None
                                 for g in snap.taint_group], dtype=bool)
                eligible &= ok
            selector = _selector(c, pod)
            counts: Counter = Counter()
            for i in np.flatnonzero(eligible):
                for other in view.pods_on(int(i)):
                    if (other.namespace == pod.namespace and other.metadata.deletion_timestamp is None
                            and selector_matches(selector, other.labels)):
                        counts[int(col[i])] += 1
            domains = set(col[eligible].tolist())
            min_match = min((counts.get(d, 0) for d in domains), default=0)
            if c.min_domains and len(domains) < c.min_domains:
                min_match = 0
            self_match = 1 if selector_matches(selector, pod.labels) else 0
            per_node = np.asarray([counts.get(int(v), 0) for v in col], dtype=np.int64)
            skewed |= (col >= 0) & (per_node + self_match - min_match > c.max_skew)
        keys = [ERR_REASON_NODE_LABEL_NOT_MATCH if missing[i] else (ERR_REASON_CONSTRAINTS_NOT_MATCH if skewed[i]
                else None) for i in idx]
        return NodeStatuses.from_keys(keys, {
            ERR_REASON_NODE_LABEL_NOT_MATCH: (Code.UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,)),
            ERR_REASON_CONSTRAINTS_NOT_MATCH: (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,))})
