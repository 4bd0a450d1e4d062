"""NodeName: a pod that names a node (spec.nodeName) fits only there. UnschedulableAndUnresolvable."""

from __future__ import annotations

import numpy as np

from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeNameFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        wanted = ctx.pod.spec.node_name
        if not wanted:
            return NodeStatuses.success(len(idx))
        names = np.asarray(ctx.snapshot.names, dtype=object)[idx]
        return NodeStatuses.where(names != wanted, Code.UNRESOLVABLE, (ERR_REASON,))
