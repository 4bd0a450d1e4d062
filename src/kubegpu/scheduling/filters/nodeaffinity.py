"""NodeAffinity: nodeSelector AND requiredDuringScheduling node affinity (terms ORed).

upstream PreFilter skips pods with neither; when every term pins metadata.name (matchFields
In), it narrows the nodes to look at (PreFilterResult), and terms that pin disjoint names
make the pod unschedulable everywhere ("pod affinity terms conflict").
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, PreFilterResult, Status
from kubegpu.model.labelindex import OBJECT_NAME_FIELD, LabelIndex

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"  # version-dependent, see versions.py
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


def required_terms(pod: Pod):
    aff = pod.spec.affinity
    if aff is None or aff.node_affinity is None:
        return None
    return aff.node_affinity.required_during_scheduling_ignored_during_execution


def node_affinity_mask(pod: Pod, labels: LabelIndex) -> np.ndarray:
    """Nodes that satisfy the pod's nodeSelector and required node affinity."""
    mask = np.ones(labels.n, dtype=bool)
    if pod.spec.node_selector:
        mask &= labels.selector_map(pod.spec.node_selector)
    req = required_terms(pod)
    if req is not None:
        mask &= labels.terms(req.node_selector_terms)
    return mask


class NodeAffinityFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        pod = ctx.pod
        req = required_terms(pod)
        if req is None and not pod.spec.node_selector:
            return Status(Code.SKIP)
        if req is None or not req.node_selector_terms:
            return None
        names: set[str] | None = None
        for term in req.node_selector_terms:
            term_names: set[str] | None = None
            for r in term.match_fields:
                if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                    s = set(r.values)
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None  # a term without a name pin admits every node (terms are ORed)
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return Status(Code.UNRESOLVABLE, (ERR_REASON_CONFLICT,))
        if names:
            return PreFilterResult(frozenset(names))
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        mask = node_affinity_mask(ctx.pod, ctx.snapshot.labels)[idx]
        return NodeStatuses.where(~mask, Code.UNRESOLVABLE, (ctx.version.node_affinity_reason,))
