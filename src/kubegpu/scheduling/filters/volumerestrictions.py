"""VolumeRestrictions: in-tree disks that cannot be shared, and ReadWriteOncePod claims in use.

upstream PreFilter reads the pod's PersistentVolumeClaim volumes (a missing claim rejects the
pod outright: `persistentvolumeclaim "x" not found`, UnschedulableAndUnresolvable) and counts
its ReadWriteOncePod claims that other pods already use; it skips pods with neither such a
claim in use nor an in-tree disk. Filter checks disk conflicts first, then fails every node
while such a claim is in use. Both Unschedulable.

Disk conflicts (upstream isVolumeConflict): the same GCE PD or iSCSI IQN unless both mounts are
read-only; the same EBS volume always; the same RBD pool/image on overlapping monitors unless
both are read-only. Vectorised: once per cycle the bound pods' disks become one flat table of
interned keys (an RBD disk one row per monitor, so "overlapping monitors" is key equality);
Filter marks clashing rows in one numpy pass and scatters them onto nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.model.objects import Volume
from kubegpu.scheduling.filters.volumes import pod_claims
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status

NAME = "VolumeRestrictions"
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access "
                            "mode already in-use by another pod")
ERR_PVC_NOT_FOUND = 'persistentvolumeclaim "{name}" not found'

DiskKey = tuple[str, bool]  # (interned identity, read-only)


def disk_keys(v: Volume) -> list[DiskKey]:
    """The conflict keys of one volume: equal keys clash unless both mounts are read-only."""
    if v.gce_persistent_disk:
        return [(f"gce\0{v.gce_persistent_disk.get('pdName')}", bool(v.gce_persistent_disk.get("readOnly")))]
    if v.aws_elastic_block_store:  # EBS: never shared, read-only or not
        return [(f"aws\0{v.aws_elastic_block_store.get('volumeID')}", False)]
    if v.iscsi:
        return [(f"iscsi\0{v.iscsi.get('iqn')}", bool(v.iscsi.get("readOnly")))]
    if v.rbd:
        image = f"rbd\0{v.rbd.get('pool') or 'rbd'}\0{v.rbd.get('image')}"  # API default pool "rbd"
        ro = bool(v.rbd.get("readOnly"))
        return [(f"{image}\0{mon}", ro) for mon in dict.fromkeys(v.rbd.get("monitors") or [])]
    return []


def pod_disk_keys(pod: Pod) -> list[DiskKey]:
    return [k for v in pod.spec.volumes for k in disk_keys(v)]


def disk_conflict(mine: list[DiskKey], theirs: list[DiskKey]) -> bool:
    """Plain reading of the rule (the test oracle for the vectorised Filter)."""
    return any(a == b and not (ro_a and ro_b) for a, ro_a in mine for b, ro_b in theirs)


@dataclass(frozen=True)
class _DiskTable:
    """Disk keys of the bound pods in slots [0, slots): one row per (pod, key)."""

    slots: int
    slot: np.ndarray  # int64 pod slot per row
    key: np.ndarray   # object key per row
    ro: np.ndarray    # bool read-only per row


def _disk_table(snapshot) -> _DiskTable:
    slot, key, ro = [], [], []
    n = snapshot.slot_count
    for s in range(n):
        for k, r in pod_disk_keys(snapshot.pod_at(s)):
            slot.append(s)
            key.append(k)
            ro.append(r)
    return _DiskTable(n, np.asarray(slot, dtype=np.int64), np.asarray(key, dtype=object),
                      np.asarray(ro, dtype=bool))


def _table_for(ctx: CycleContext, snapshot) -> _DiskTable:
    """Built once per cycle; slots are append-only, removed pods are masked at Filter time."""
    held = ctx.data.get((NAME, id(snapshot)))  # (snapshot, table): holding it keeps the id unique
    if held is None or held[0] is not snapshot or held[1].slots != snapshot.slot_count:
        held = ctx.data[(NAME, id(snapshot))] = (snapshot, _disk_table(snapshot))
    return held[1]


def _rwop_in_use(ctx: CycleContext, claims: set[str]) -> int:
    """How many of the pod's ReadWriteOncePod claims other bound pods use (upstream IsPVCUsedByPods)."""
    pod, snap = ctx.pod, ctx.snapshot
    used: set[str] = set()
    for s in np.flatnonzero(snap.visible_slots()).tolist():
        other = snap.pod_at(s)
        if other.namespace != pod.namespace or other.key == pod.key:
            continue
        used.update(v.persistent_volume_claim.claim_name for v in other.spec.volumes
                    if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in claims)
    return len(used)


class VolumeRestrictionsFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        pod = ctx.pod
        disks = pod_disk_keys(pod)
        rwop: set[str] = set()
        for ref in pod_claims(ctx.snapshot.state, pod):
            if ref.ephemeral:
                continue  # upstream reads only persistentVolumeClaim volumes here
            if ref.claim is None:
                return Status(Code.UNRESOLVABLE, (ERR_PVC_NOT_FOUND.format(name=ref.name),))
            if "ReadWriteOncePod" in ref.claim.spec.access_modes:
                rwop.add(ref.name)
        conflicting = _rwop_in_use(ctx, rwop) if rwop else 0
        has_disks = any(v.gce_persistent_disk or v.aws_elastic_block_store or v.iscsi or v.rbd
                        for v in pod.spec.volumes)
        if not has_disks and not conflicting:
            return Status(Code.SKIP)
        ctx.data[NAME] = (disks, conflicting)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        disks, conflicting = ctx.data[NAME]
        snap = view.snapshot
        failed = np.zeros(len(snap.nodes), dtype=bool)
        if disks:
            table = _table_for(ctx, snap)
            # a row clashes unless it and every mount of the pod with the same key are read-only
            all_ro: dict[str, bool] = {}
            for k, ro in disks:
                all_ro[k] = all_ro.get(k, True) and ro
            hit = np.isin(table.key, list(all_ro))
            pod_ro = np.asarray([all_ro.get(k, False) for k in table.key[hit]], dtype=bool)
            rows = np.flatnonzero(hit)[~(table.ro[hit] & pod_ro)]
            rows = rows[snap.visible_slots(view)[table.slot[rows]]]
            failed[snap.pod_node[table.slot[rows]]] = True
            for i, infos in view.extra.items():  # nominated pods and gang siblings: few
                if not failed[i]:
                    failed[i] = any(disk_conflict(disks, pod_disk_keys(info.pod)) for info in infos)
        choice = np.where(failed[idx], 1, 2 if conflicting else 0)
        return NodeStatuses.from_choice(choice, [(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,)),
                                                 (Code.UNSCHEDULABLE, (ERR_REASON_RWOP_CONFLICT,))])
