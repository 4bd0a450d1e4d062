"""TaintToleration: a node's NoSchedule / NoExecute taints must be tolerated by the pod.

upstream: the first untolerated taint (node order) decides; UnschedulableAndUnresolvable.
The reason's wording depends on the version (see versions.KubeVersion.taint_reason).
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.objects import Taint, Toleration
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses

NAME = "TaintToleration"
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"  # 1.34.2+; older wordings in versions.py
FILTER_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(tol: Toleration, taint: Taint) -> bool:
    """upstream Toleration.ToleratesTaint."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    op = tol.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (tol.value or "") == (taint.value or "")
    return False


def first_untolerated(taints, tolerations, effects=FILTER_EFFECTS) -> Taint | None:
    """upstream FindMatchingUntoleratedTaint with the NoSchedule/NoExecute filter."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


class TaintTolerationFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        return None

    def untolerated_by_group(self, ctx: CycleContext) -> list[Taint | None]:
        snap = ctx.snapshot
        tolerations = ctx.pod.spec.tolerations
        return [first_untolerated(taints, tolerations) for taints in snap.taint_sets]

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        per_group = self.untolerated_by_group(ctx)
        table: list[tuple[str, ...]] = []
        reason_ids: dict[str, int] = {}
        group_rid = np.full(len(per_group), -1, dtype=np.int32)
        for g, taint in enumerate(per_group):
            if taint is not None:
                reason = ctx.version.taint_reason(taint.key, taint.value)
                if reason not in reason_ids:
                    reason_ids[reason] = len(table)
                    table.append((reason,))
                group_rid[g] = reason_ids[reason]
        rid = group_rid[ctx.snapshot.taint_group[idx]]
        code = np.where(rid >= 0, np.int8(Code.UNRESOLVABLE), np.int8(0)).astype(np.int8)
        return NodeStatuses(code, np.maximum(rid, 0), table)
