"""VolumeRestrictions: in-tree disks that cannot be shared, and ReadWriteOncePod claims in use.

upstream PreFilter reads every PVC of the pod (a missing one rejects the pod outright:
`persistentvolumeclaim "x" not found`, UnschedulableAndUnresolvable) and counts other pods that
already use a ReadWriteOncePod claim of this pod; Filter then fails a node for a disk conflict,
or every node while such a claim is in use. Both Unschedulable.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.objects import Volume
from kubegpu.scheduling.filters.volumes import pod_claims
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "VolumeRestrictions"
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access "
                            "mode already in-use by another pod")
ERR_PVC_NOT_FOUND = 'persistentvolumeclaim "{name}" not found'


def _disk_key(v: Volume) -> tuple[str, str, bool] | None:
    """(kind, identity, read-only) of a volume type upstream checks for conflicts."""
    if v.gce_persistent_disk:
        return ("gce", str(v.gce_persistent_disk.get("pdName")), bool(v.gce_persistent_disk.get("readOnly")))
    if v.aws_elastic_block_store:
        return ("aws", str(v.aws_elastic_block_store.get("volumeID")), False)  # EBS: never shared
    if v.iscsi:
        return ("iscsi", str(v.iscsi.get("iqn")), bool(v.iscsi.get("readOnly")))
    if v.rbd:
        ident = f"{sorted(v.rbd.get('monitors') or [])}/{v.rbd.get('pool', 'rbd')}/{v.rbd.get('image')}"
        return ("rbd", ident, bool(v.rbd.get("readOnly")))
    return None


def disk_conflict(mine: list[tuple[str, str, bool]], theirs: list[tuple[str, str, bool]]) -> bool:
    for kind, ident, ro in mine:
        for k2, i2, ro2 in theirs:
            if kind == k2 and ident == i2 and not (ro and ro2 and kind != "aws"):
                return True
    return False


class VolumeRestrictionsFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        pod = ctx.pod
        disks = [k for k in (_disk_key(v) for v in pod.spec.volumes) if k]
        rwop: list[str] = []
        for ref in pod_claims(ctx.snapshot.state, pod):
            if ref.claim is None and not ref.ephemeral:
                return Status(Code.UNRESOLVABLE, (ERR_PVC_NOT_FOUND.format(name=ref.name),))
            if ref.claim is not None and "ReadWriteOncePod" in ref.claim.spec.access_modes:
                rwop.append(ref.name)
        conflicting = 0
        if rwop:
            for info in ctx.snapshot.bound_infos():
                other = info.pod
                if other.namespace == pod.namespace and other.key != pod.key and any(
                        v.persistent_volume_claim and v.persistent_volume_claim.claim_name in rwop
                        for v in other.spec.volumes):
                    conflicting += 1
        if not disks and not conflicting:
            return Status(Code.SKIP)
        ctx.data[NAME] = (disks, conflicting)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        disks, conflicting = ctx.data[NAME]
        if conflicting:
            return NodeStatuses.where(np.ones(len(idx), dtype=bool), Code.UNSCHEDULABLE, (ERR_REASON_RWOP_CONFLICT,))
        failed = np.zeros(len(idx), dtype=bool)
        for k, i in enumerate(idx):
            theirs = [d for p in view.pods_on(int(i)) for d in (_disk_key(v) for v in p.spec.volumes) if d]
            failed[k] = disk_conflict(disks, theirs)
        return NodeStatuses.where(failed, Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))
