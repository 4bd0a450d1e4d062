"""NodeVolumeLimits (CSI): a node's CSI driver attaches at most CSINode allocatable.count volumes.

Counts distinct volume handles per driver over the node's pods plus this pod. Unschedulable.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import CSINode, Pod
from kubegpu.scheduling.filters.volumes import pod_claims
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"


def csi_volumes(state: ClusterState, pod: Pod) -> set[tuple[str, str]]:
    """(driver, volume handle) of every CSI volume a pod uses."""
    out = set()
    for ref in pod_claims(state, pod):
        csi = ref.volume.spec.csi if ref.volume is not None else None
        if csi and csi.get("driver"):
            out.add((str(csi["driver"]), str(csi.get("volumeHandle", ref.volume.name))))
    for v in pod.spec.volumes:
        if v.csi and v.csi.get("driver"):
            out.add((str(v.csi["driver"]), f"{pod.key}/{v.name}"))
    return out


def driver_limits(state: ClusterState, node: str) -> dict[str, int]:
    csinode = state.get("CSINode", None, node)
    if not isinstance(csinode, CSINode):
        return {}
    out = {}
    for d in csinode.spec.drivers:
        count = (d.allocatable or {}).get("count")
        if isinstance(count, int):
            out[d.name] = count
    return out


class NodeVolumeLimitsFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        mine = csi_volumes(ctx.snapshot.state, ctx.pod)
        if not mine:
            return Status(Code.SKIP)
        ctx.data[NAME] = mine
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        mine = ctx.data[NAME]
        state = ctx.snapshot.state
        failed = np.zeros(len(idx), dtype=bool)
        for k, i in enumerate(idx):
            limits = driver_limits(state, ctx.snapshot.names[int(i)])
            if not limits:
                continue
            attached = set().union(*(csi_volumes(state, p) for p in view.pods_on(int(i))))
            for driver, limit in limits.items():
                have = {h for d, h in attached if d == driver}
                new = {h for d, h in mine if d == driver} - have
                if new and len(have) + len(new) > limit:
                    failed[k] = True
        return NodeStatuses.where(failed, Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT,))
