"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take only pods that tolerate
node.kubernetes.io/unschedulable:NoSchedule. UnschedulableAndUnresolvable."""

from __future__ import annotations

import numpy as np

from kubegpu.model.objects import Taint
from kubegpu.scheduling.filters.tainttoleration import tolerates
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"  # still defined upstream, unused
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class NodeUnschedulableFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in ctx.pod.spec.tolerations):
            return NodeStatuses.success(len(idx))
        return NodeStatuses.where(ctx.snapshot.unschedulable[idx], Code.UNRESOLVABLE, (ERR_REASON_UNSCHEDULABLE,))
