"""VolumeZone: a bound PV labelled with zones/regions admits only nodes in one of them.

upstream: PV label values may list several zones joined by "__"; a node with no zone or region
label at all passes. UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import numpy as np

from kubegpu.scheduling.filters.volumes import pod_claims
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "VolumeZone"
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                   "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")
_GA = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
       "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


class VolumeZoneFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        constraints: list[tuple[str, set[str]]] = []
        for ref in pod_claims(ctx.snapshot.state, ctx.pod):
            if ref.volume is None:
                continue
            for key in TOPOLOGY_LABELS:
                value = ref.volume.metadata.labels.get(key)
                if value:
                    constraints.append((key, set(value.split("__"))))
        if not constraints:
            return Status(Code.SKIP)
        ctx.data[NAME] = constraints
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        labels = ctx.snapshot.labels
        has_any = np.zeros(labels.n, dtype=bool)
        for key in TOPOLOGY_LABELS:
            has_any |= labels.column(key) >= 0
        ok = np.ones(labels.n, dtype=bool)
        for key, values in ctx.data[NAME]:
            hit = np.zeros(labels.n, dtype=bool)
            for k in {key, _GA.get(key, key)}:
                hit |= np.isin(labels.column(k), [labels.code_of(k, v) for v in values])
            ok &= hit
        failed = (has_any & ~ok)[idx]
        return NodeStatuses.where(failed, Code.UNRESOLVABLE, (ERR_REASON_CONFLICT,))
