"""InterPodAffinity: required pod affinity / anti-affinity, both the pod's and existing pods'.

upstream PreFilter counts, once per cycle, matching pods per topology pair (key, value):
`affinityCounts` (pods matching every affinity term of the pod), `antiAffinityCounts` (per
anti-affinity term) and `existingAntiAffinityCounts` (existing pods whose required
anti-affinity matches the incoming pod). Filter then reads one pair per term and node, in this
order: the pod's affinity (UnschedulableAndUnresolvable), the pod's anti-affinity
(Unschedulable), existing pods' anti-affinity (Unschedulable). The first pod of a self-affine
group may go anywhere its topology keys exist. Here the counts are numpy bincounts over the
snapshot's pod columns, per topology domain, so nothing loops over pods x nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.model.objects import LabelSelector, LabelSelectorRequirement, PodAffinityTerm
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status

NAME = "InterPodAffinity"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_STATUSES = [(Code.UNRESOLVABLE, (ERR_REASON_AFFINITY,)), (Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY,)),
             (Code.UNSCHEDULABLE, (ERR_REASON_EXISTING_ANTI_AFFINITY,))]  # in upstream's Filter order


def _required(pod: Pod, anti: bool) -> list[PodAffinityTerm]:
    aff = pod.spec.affinity
    block = (aff.pod_anti_affinity if anti else aff.pod_affinity) if aff else None
    return list(block.required_during_scheduling_ignored_during_execution) if block else []


def term_selector(term: PodAffinityTerm, owner: Pod) -> LabelSelector | None:
    """The term's label selector with matchLabelKeys / mismatchLabelKeys merged in (upstream)."""
    selector = term.label_selector
    if selector is None or not (term.match_label_keys or term.mismatch_label_keys):
        return selector
    extra = [LabelSelectorRequirement(key=k, operator="In", values=[owner.labels[k]])
             for k in term.match_label_keys if k in owner.labels]
    extra += [LabelSelectorRequirement(key=k, operator="NotIn", values=[owner.labels[k]])
              for k in term.mismatch_label_keys if k in owner.labels]
    return LabelSelector(match_labels=dict(selector.match_labels),
                         match_expressions=[*selector.match_expressions, *extra])


def _in_namespaces(term: PodAffinityTerm, owner: Pod, namespace: str, ns_labels: dict[str, dict[str, str]]) -> bool:
    if not term.namespaces and term.namespace_selector is None:
        return namespace == owner.namespace
    if namespace in term.namespaces:
        return True
    return term.namespace_selector is not None and selector_matches(term.namespace_selector,
                                                                    ns_labels.get(namespace, {}))


def term_matches(term: PodAffinityTerm, owner: Pod, other: Pod, ns_labels: dict[str, dict[str, str]]) -> bool:
    """upstream AffinityTerm.Matches: namespace (list, selector, or the owner's own) and labels."""
    if not _in_namespaces(term, owner, other.namespace, ns_labels):
        return False
    selector = term_selector(term, owner)
    return selector is not None and selector_matches(selector, other.labels)


def namespace_labels(ctx: CycleContext) -> dict[str, dict[str, str]]:
    cached = ctx.data.get("namespace-labels")
    if cached is None:
        cached = {ns.name: ns.labels for ns in ctx.snapshot.state.of_kind("Namespace")}
        ctx.data["namespace-labels"] = cached
    return cached


def matching_slots(ctx: CycleContext, term: PodAffinityTerm, owner: Pod, m: int) -> np.ndarray:
    """bool[m]: pod slots the term (owned by `owner`) selects, namespaces and labels."""
    cols = ctx.snapshot.pod_columns
    ns_labels = namespace_labels(ctx)
    names = [ns for ns in cols.namespace_codes() if _in_namespaces(term, owner, ns, ns_labels)]
    return cols.namespaces(names, m) & cols.selector(term_selector(term, owner), m)


@dataclass
class _TermCounts:
    """Matching pods per topology domain of one term, and per node (for per-node removal)."""

    col: np.ndarray       # node -> domain code of the term's topology key (-1 = no key)
    counts: np.ndarray    # domain -> matching pods
    slots: np.ndarray     # bool[m] matching visible slots

    def at(self, idx: np.ndarray) -> np.ndarray:
        d = self.col[idx]
        return np.where(d >= 0, self.counts[np.maximum(d, 0)] if len(self.counts) else 0, 0)


def _domain_counts(snap, key: str, slots: np.ndarray, extra_nodes: list[int]) -> _TermCounts:
    col = snap.labels.column(key)
    size = int(col.max()) + 1 if len(col) else 0
    dom = col[snap.pod_node[: len(slots)][slots]]
    dom = np.concatenate([dom, col[np.asarray(extra_nodes, dtype=np.int64)]]) if extra_nodes else dom
    counts = np.bincount(dom[dom >= 0], minlength=size) if size else np.zeros(0, dtype=np.int64)
    return _TermCounts(col, counts, slots)


class _Prepared:
    """upstream preFilterState for one view: the three count tables, as arrays."""

    def __init__(self, ctx: CycleContext, view) -> None:
        snap = ctx.snapshot
        pod = ctx.pod
        m = snap.slot_count
        visible = snap.visible_slots(view)
        extras = [(i, info.pod) for i, infos in view.extra.items() for info in infos]
        ns = namespace_labels(ctx)
        self.affinity, self.anti = _required(pod, False), _required(pod, True)
        self.aff: list[_TermCounts] = []
        self.aff_any = False
        if self.affinity:
            match_all = visible.copy()
            for t in self.affinity:
                match_all &= matching_slots(ctx, t, pod, m)
            extra_nodes = [i for i, o in extras if all(term_matches(t, pod, o, ns) for t in self.affinity)]
            self.aff = [_domain_counts(snap, t.topology_key, match_all, extra_nodes) for t in self.affinity]
            self.aff_any = any(bool((c.counts > 0).any()) for c in self.aff)
            self.self_match = all(term_matches(t, pod, pod, ns) for t in self.affinity)
        self.anti_counts = []
        for t in self.anti:
            slots = visible & matching_slots(ctx, t, pod, m)
            extra_nodes = [i for i, o in extras if term_matches(t, pod, o, ns)]
            self.anti_counts.append(_domain_counts(snap, t.topology_key, slots, extra_nodes))
        # existing pods' anti-affinity: (topology key, node of the owner) per matching term
        self.blocks: list[tuple[str, int, int]] = []   # (key, domain code, owner slot or -1)
        anti_slots = np.flatnonzero(snap.pod_anti[:m] & visible)
        owners = [(int(s), snap.pod_at(s), int(snap.pod_node[s])) for s in anti_slots]
        owners += [(-1, o, i) for i, o in extras if _required(o, True)]
        for s, other, i in owners:
            for t in _required(other, True):
                if term_matches(t, other, pod, ns):
                    code = int(snap.labels.column(t.topology_key)[i])
                    if code >= 0:
                        self.blocks.append((t.topology_key, code, s))

    def verdicts(self, ctx: CycleContext, idx: np.ndarray, removed: np.ndarray | None = None) -> np.ndarray:
        """First failing check per node (1-based index into _STATUSES, 0 = pass); with `removed`,
        as if that node's removed slots were gone."""
        snap = ctx.snapshot
        k = len(idx)
        fail_aff = np.zeros(k, dtype=bool)
        fail_anti = np.zeros(k, dtype=bool)
        fail_existing = np.zeros(k, dtype=bool)
        node_of = snap.pod_node

        def removed_here(slots: np.ndarray) -> np.ndarray:
            if removed is None:
                return np.zeros(k, dtype=np.int64)
            hit = slots & removed[: len(slots)]
            return np.bincount(node_of[: len(slots)][hit], minlength=len(snap.nodes))[idx]

        if self.affinity:
            has_keys = np.ones(k, dtype=bool)
            all_positive = np.ones(k, dtype=bool)
            gone = np.zeros(k, dtype=np.int64)  # positive pairs that the removal empties
            for c in self.aff:
                has_keys &= c.col[idx] >= 0
                before = c.at(idx)
                after = before - removed_here(c.slots)
                all_positive &= after > 0
                gone += (before > 0) & (after <= 0)
            positive_pairs = sum(int((c.counts > 0).sum()) for c in self.aff)
            no_pairs_left = (positive_pairs - gone) == 0
            fail_aff = ~has_keys | (~all_positive & ~(no_pairs_left & self.self_match))
        for c in self.anti_counts:
            fail_anti |= (c.col[idx] >= 0) & (c.at(idx) - removed_here(c.slots) > 0)
        if self.blocks:
            by_pair: dict[tuple[str, int], list[int]] = {}
            for key, code, s in self.blocks:
                by_pair.setdefault((key, code), []).append(s)
            for (key, code), owners in by_pair.items():
                on_domain = snap.labels.column(key)[idx] == code
                left = np.full(k, len(owners), dtype=np.int64)
                if removed is not None:
                    for s in owners:
                        if s >= 0 and removed[s]:
                            left -= idx == node_of[s]
                fail_existing |= on_domain & (left > 0)
        return np.where(fail_aff, 1, np.where(fail_anti, 2, np.where(fail_existing, 3, 0)))


class InterPodAffinityFilter(FilterPlugin):
    name = NAME
    node_local = False  # a node's verdict depends on pods of its whole topology domain

    def pre_filter(self, ctx: CycleContext):
        has_own = bool(_required(ctx.pod, False) or _required(ctx.pod, True))
        snap = ctx.snapshot
        has_existing = bool((snap.pod_anti & snap.alive).any())
        if not has_own and not has_existing:
            return Status(Code.SKIP)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        return NodeStatuses.from_choice(_Prepared(ctx, view).verdicts(ctx, idx), _STATUSES)

    def filter_removed(self, ctx: CycleContext, view, removed: np.ndarray, idx: np.ndarray) -> NodeStatuses:
        """Per node i of idx: the verdict once the `removed` pod slots on node i alone are gone
        (upstream's preemption dry run removes one node's victims and re-runs Filter there)."""
        return NodeStatuses.from_choice(_Prepared(ctx, view).verdicts(ctx, idx, removed), _STATUSES)
