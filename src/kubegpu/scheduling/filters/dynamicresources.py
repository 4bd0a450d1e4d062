"""DynamicResources (DRA): ResourceClaims are not modelled yet, so this filter is not evaluated.

The why report says so instead of pretending the claims fit. Its PostFilter text
('no new claims to deallocate') still appears in the event message from 1.34 (see message.py).
"""

from __future__ import annotations

import numpy as np

from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status

NAME = "DynamicResources"
NOT_EVALUATED = "not evaluated: ResourceClaims are not read by kubegpu yet"


class DynamicResourcesFilter(FilterPlugin):
    name = NAME
    evaluated = False

    def pre_filter(self, ctx: CycleContext):
        return Status(Code.SKIP)

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        return NodeStatuses.success(len(idx))
