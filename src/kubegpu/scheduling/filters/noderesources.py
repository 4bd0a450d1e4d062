"""NodeResourcesFit: the pod's effective requests must fit in allocatable minus what is requested.

upstream fitsRequest: "Too many pods" when the node is at its pod limit; then for cpu, memory,
ephemeral-storage and every scalar (extended) resource with a non-zero request,
`request > allocatable - requested` gives "Insufficient <name>". All reasons of a node are kept
(a node can say "Insufficient cpu" and "Insufficient nvidia.com/gpu"). From 1.34 the status is
UnschedulableAndUnresolvable when a request exceeds the node's allocatable outright.
Vectorised: one comparison of the request vector against every node's free vector.
"""

from __future__ import annotations

import numpy as np

from kubegpu.scheduling.fit import short_columns
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, small_unique

NAME = "NodeResourcesFit"
ERR_REASON_TOO_MANY_PODS = "Too many pods"
ERR_REASON_INSUFFICIENT = "Insufficient {resource}"


def insufficient(ctx: CycleContext, view, idx: np.ndarray):
    """Per node: (too_many_pods[k], short[k, j] over requested columns, unresolvable[k], names)."""
    snap = ctx.snapshot
    info = ctx.info
    too_many = view.pod_count[idx] + 1 > snap.allowed_pods[idx]
    cols, short = short_columns(snap.alloc[idx] - view.requested[idx], info.vector)
    names = [snap.resources[j] for j in cols]
    unresolvable = (info.vector[cols] > snap.alloc[np.ix_(idx, cols)]) & short
    if info.extra:  # a resource no node offers: allocatable 0 everywhere
        extra_names = sorted(info.extra)
        names = names + extra_names
        ones = np.ones((len(idx), len(extra_names)), dtype=bool)
        short = np.hstack([short, ones])
        unresolvable = np.hstack([unresolvable, ones])
    return too_many, short, unresolvable, names


class NodeResourcesFitFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        too_many, short, unresolvable, names = insufficient(ctx, view, idx)
        k = len(idx)
        width = short.shape[1]
        # bit 0: too many pods; bit 1+j: resource j short; top bit: unresolvable (1.34+)
        mask = too_many.astype(np.int64)
        for j in range(width):
            mask |= short[:, j].astype(np.int64) << (j + 1)
        unres = unresolvable.any(axis=1) if width else np.zeros(k, dtype=bool)
        if ctx.version.unresolvable_when_exceeds_allocatable:
            mask |= unres.astype(np.int64) << (width + 1)
        failed = mask != 0
        if not failed.any():
            return NodeStatuses.success(k)
        uniq, inverse = small_unique(mask)
        table: list[tuple[str, ...]] = []
        codes = np.zeros(len(uniq), dtype=np.int8)
        for u, m in enumerate(uniq.tolist()):
            reasons = []
            if m & 1:
                reasons.append(ERR_REASON_TOO_MANY_PODS)
            for j in range(width):
                if m >> (j + 1) & 1:
                    reasons.append(ERR_REASON_INSUFFICIENT.format(resource=names[j]))
            table.append(tuple(reasons))
            if m:
                codes[u] = Code.UNRESOLVABLE if m >> (width + 1) & 1 else Code.UNSCHEDULABLE
        return NodeStatuses(codes[inverse].astype(np.int8), inverse.astype(np.int32), table)
