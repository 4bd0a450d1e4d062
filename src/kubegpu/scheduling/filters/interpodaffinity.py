"""InterPodAffinity: required pod affinity / anti-affinity, both the pod's and existing pods'.

upstream Filter order: the pod's affinity (UnschedulableAndUnresolvable), the pod's
anti-affinity (Unschedulable), existing pods' anti-affinity against this pod (Unschedulable).
A pod counts for the incoming pod's affinity only when it matches all terms; the first pod of
a self-affine group may go anywhere its topology keys exist.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.model.objects import PodAffinityTerm
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "InterPodAffinity"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def _required(pod: Pod, anti: bool) -> list[PodAffinityTerm]:
    aff = pod.spec.affinity
    block = (aff.pod_anti_affinity if anti else aff.pod_affinity) if aff else None
    return list(block.required_during_scheduling_ignored_during_execution) if block else []


def term_matches(term: PodAffinityTerm, owner: Pod, other: Pod, ns_labels: dict[str, dict[str, str]]) -> bool:
    """upstream AffinityTerm.Matches: namespace (list, selector, or the owner's own) and labels."""
    in_ns = other.namespace in term.namespaces
    if not in_ns and term.namespace_selector is not None:
        in_ns = selector_matches(term.namespace_selector, ns_labels.get(other.namespace, {}))
    if not term.namespaces and term.namespace_selector is None:
        in_ns = other.namespace == owner.namespace
    if not in_ns:
        return False
    selector = term.label_selector
    if selector is None:
        return False
    if term.match_label_keys or term.mismatch_label_keys:
        from kubegpu.model.objects import LabelSelector, LabelSelectorRequirement

        extra = [LabelSelectorRequirement(key=k, operator="In", values=[owner.labels[k]])
                 for k in term.match_label_keys if k in owner.labels]
        extra += [LabelSelectorRequirement(key=k, operator="NotIn", values=[owner.labels[k]])
                  for k in term.mismatch_label_keys if k in owner.labels]
        selector = LabelSelector(match_labels=dict(selector.match_labels),
                                 match_expressions=[*selector.match_expressions, *extra])
    return selector_matches(selector, other.labels)


def namespace_labels(ctx: CycleContext) -> dict[str, dict[str, str]]:
    cached = ctx.data.get("namespace-labels")
    if cached is None:
        cached = {ns.name: ns.labels for ns in ctx.snapshot.state.of_kind("Namespace")}
        ctx.data["namespace-labels"] = cached
    return cached


class InterPodAffinityFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        has_own = bool(_required(ctx.pod, False) or _required(ctx.pod, True))
        snap = ctx.snapshot
        has_existing = bool((snap.pod_anti & snap.alive).any())
        if not has_own and not has_existing:
            return Status(Code.SKIP)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        snap = ctx.snapshot
        pod = ctx.pod
        labels = snap.labels
        ns = namespace_labels(ctx)
        affinity, anti = _required(pod, False), _required(pod, True)
        aff_counts: Counter = Counter()
        anti_counts: Counter = Counter()
        existing_block: set[tuple[str, int]] = set()
        for i in range(labels.n) if (affinity or anti) else ():
            for other in view.pods_on(i):
                if affinity and all(term_matches(t, pod, other, ns) for t in affinity):
                    for t in affinity:
                        aff_counts[(t.topology_key, int(labels.column(t.topology_key)[i]))] += 1
                for t in anti:
                    if term_matches(t, pod, other, ns):
                        anti_counts[(t.topology_key, int(labels.column(t.topology_key)[i]))] += 1
        m = len(snap._pods)
        anti_slots = np.flatnonzero(snap.pod_anti[:m] & snap.alive[:m]
                                    & (~view.excluded[:m] if view.excluded is not None else True))
        for s in anti_slots:
            other = snap._pods[s]
            i = int(snap.pod_node[s])
            for t in _required(other, True):
                if term_matches(t, other, pod, ns):
                    code = int(labels.column(t.topology_key)[i])
                    if code >= 0:
                        existing_block.add((t.topology_key, code))
        self_ok = not any(v > 0 for (_, c), v in aff_counts.items() if c >= 0) and all(
            term_matches(t, pod, pod, ns) for t in affinity)
        keys = []
        for i in idx:
            i = int(i)
            reason = None
            if affinity:
                vals = [(t.topology_key, int(labels.column(t.topology_key)[i])) for t in affinity]
                if any(v < 0 for _, v in vals):
                    reason = ERR_REASON_AFFINITY
                elif not all(aff_counts.get(v, 0) > 0 for v in vals) and not self_ok:
                    reason = ERR_REASON_AFFINITY
            if reason is None and anti:
                for t in anti:
                    code = int(labels.column(t.topology_key)[i])
                    if code >= 0 and anti_counts.get((t.topology_key, code), 0) > 0:
                        reason = ERR_REASON_ANTI_AFFINITY
                        break
            if reason is None and existing_block:
                for key, code in existing_block:
                    if int(labels.column(key)[i]) == code:
                        reason = ERR_REASON_EXISTING_ANTI_AFFINITY
                        break
            keys.append(reason)
        return NodeStatuses.from_keys(keys, {
            ERR_REASON_AFFINITY: (Code.UNRESOLVABLE, (ERR_REASON_AFFINITY,)),
            ERR_REASON_ANTI_AFFINITY: (Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY,)),
            ERR_REASON_EXISTING_ANTI_AFFINITY: (Code.UNSCHEDULABLE, (ERR_REASON_EXISTING_ANTI_AFFINITY,))})
