"""NodeVolumeLimits (CSI): a node's CSI driver attaches at most CSINode allocatable.count volumes.

upstream nodevolumelimits/csi.go: volumes are counted as unique "driver/handle" names over the
pod's claims (bound PV, else a per-claim placeholder on the class's provisioner), generic
ephemeral claims (owned by the pod) and migratable in-tree volumes (EBS, GCE PD, Azure Disk),
translated to their CSI driver. The node's pods and its VolumeAttachments count as attached; a
volume already attached is not new. Unschedulable when attached + new exceeds a driver's count.
A claim of the new pod that cannot be found is UnschedulableAndUnresolvable on every node; so is
an ephemeral claim the pod does not own (upstream: code Error, which kubegpu's Status lacks).
"""

from __future__ import annotations


import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import CSINode, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, VolumeAttachment
from kubegpu.scheduling.filters import csimigration as mig
from kubegpu.scheduling.filters.volumes import claim_class, claim_of, owned_by
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
_UNBOUND = "kubegpu-unbound-claim"  # upstream: a random prefix, so placeholders never meet real handles


class ClaimError(Exception):
    """The new pod's claim cannot be read (upstream returns the error as the Filter status)."""


def _from_class(state: ClusterState, claim: PersistentVolumeClaim, csinode: CSINode | None) -> tuple[str, str] | None:
    """upstream getCSIDriverInfoFromSC: the provisioner's driver and a placeholder handle."""
    name = claim_class(claim)
    sc = state.get("StorageClass", None, name) if name else None
    if not isinstance(sc, StorageClass):
        return None
    handle = f"{_UNBOUND}-{claim.namespace}/{claim.name}"
    if sc.provisioner in mig.IN_TREE_TO_CSI:
        if not mig.migration_on(csinode, sc.provisioner):
            return None
        return mig.IN_TREE_TO_CSI[sc.provisioner], handle
    return sc.provisioner, handle


def _claim_driver(state: ClusterState, claim: PersistentVolumeClaim, csinode: CSINode | None):
    if not claim.spec.volume_name:
        return _from_class(state, claim, csinode)
    pv = state.get("PersistentVolume", None, claim.spec.volume_name)
    if not isinstance(pv, PersistentVolume):
        return _from_class(state, claim, csinode)  # PV gone or not created yet: count by class
    return mig.pv_driver_handle(pv, csinode)


def attachable(state: ClusterState, pod: Pod, csinode: CSINode | None, new: bool) -> dict[str, str]:
    """upstream filterAttachableVolumes: {"driver/handle": driver} of one pod's volumes."""
    out: dict[str, str] = {}
    for v in pod.spec.volumes:
        backing = claim_of(pod, v)
        if backing is None:
            found = mig.translate(v) if mig.is_inline_migratable(v) else None
            if found is not None and mig.migration_on(csinode, found[0]):
                driver = mig.IN_TREE_TO_CSI[found[0]]
                out[f"{driver}/{found[1]}"] = driver
            continue
        name, ephemeral = backing
        claim = state.get("PersistentVolumeClaim", pod.namespace, name)
        if not isinstance(claim, PersistentVolumeClaim):
            if new:
                raise ClaimError(f'looking up PVC {pod.namespace}/{name}: persistentvolumeclaims "{name}" not found')
            continue
        if ephemeral and not owned_by(claim, pod):
            if new:
                raise ClaimError(f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} "
                                 "(pod is not owner)")
            continue
        found = _claim_driver(state, claim, csinode)
        if found and found[0] and found[1]:
            out[f"{found[0]}/{found[1]}"] = found[0]
    return out


def driver_limits(csinode: CSINode | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in csinode.spec.drivers if csinode is not None else ():
        count = (d.allocatable or {}).get("count")
        if isinstance(count, int):
            out[d.name] = count
    return out


def attachments_by_node(state: ClusterState) -> dict[str, list[VolumeAttachment]]:
    out: dict[str, list[VolumeAttachment]] = {}
    for va in state.of_kind("VolumeAttachment"):
        out.setdefault(va.spec.node_name, []).append(va)
    return out


def attached_by_attachments(state: ClusterState, vas: list[VolumeAttachment], csinode) -> dict[str, str]:
    """The node's VolumeAttachments of a PV as {"attacher/handle": attacher}."""
    out: dict[str, str] = {}
    for va in vas:
        name = va.spec.source.persistent_volume_name
        pv = state.get("PersistentVolume", None, name) if name else None
        if not va.spec.attacher or not isinstance(pv, PersistentVolume):
            continue
        found = mig.pv_driver_handle(pv, csinode)
        if found and found[1]:
            out[f"{va.spec.attacher}/{found[1]}"] = va.spec.attacher
    return out


class _StateVolumes:
    """What a cluster state attaches, numbered once per state: each CSINode's limits, the
    VolumeAttachments per node, and each pod's volumes. Volumes are interned ("driver/handle" ->
    int), so a node's counts are array operations. A pod's volumes depend on its node only through
    whether the node has a CSINode (in-tree migration); only nodes with a CSINode have limits, so
    pods are read as on such a node."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.csinodes = {c.name: c for c in state.of_kind("CSINode") if isinstance(c, CSINode)}
        self.limits = {name: driver_limits(c) for name, c in self.csinodes.items()}
        self.any_csinode = next(iter(self.csinodes.values()), None)
        self.vas = attachments_by_node(state)
        self.ids: dict[str, int] = {}       # "driver/handle" -> volume id
        self.driver_of: list[str] = []      # volume id -> driver
        drivers = sorted({d for lim in self.limits.values() for d in lim})
        self.col = {d: j for j, d in enumerate(drivers)}  # limited driver -> column
        self._vol_col = np.zeros(0, dtype=np.int64)
        self._pods: dict[str, tuple[Pod, np.ndarray]] = {}

    def intern(self, volumes: dict[str, str]) -> np.ndarray:
        out = []
        for unique, driver in volumes.items():
            vid = self.ids.get(unique)
            if vid is None:
                vid = self.ids[unique] = len(self.driver_of)
                self.driver_of.append(driver)
            out.append(vid)
        return np.asarray(out, dtype=np.int64)

    def vol_col(self) -> np.ndarray:
        """Per volume id, its driver's column (-1: a driver no node limits)."""
        if len(self._vol_col) != len(self.driver_of):
            extra = [self.col.get(d, -1) for d in self.driver_of[len(self._vol_col):]]
            self._vol_col = np.concatenate([self._vol_col, np.asarray(extra, dtype=np.int64)])
        return self._vol_col

    def of_pod(self, pod: Pod) -> np.ndarray:
        """Ids of the volumes a bound pod holds (upstream filterAttachableVolumes, existing pod)."""
        hit = self._pods.get(pod.key)
        if hit is None or hit[0] is not pod:
            hit = self._pods[pod.key] = (pod, self.intern(attachable(self.state, pod, self.any_csinode, False)))
        return hit[1]


class _SnapshotVolumes:
    """Per snapshot: the limits as a node x driver table and (pod slot, volume) rows for every
    bound pod, plus each node's VolumeAttachments as (node, volume) pairs."""

    def __init__(self, snapshot, known: _StateVolumes) -> None:
        self.slots = list(snapshot.node_slots)
        self.n_slots = len(snapshot.alive)
        n = len(snapshot.names)
        self.col = known.col
        self.limit = np.full((n, len(self.col)), -1, dtype=np.int64)
        va_nodes, va_ids = [], []
        for i, name in enumerate(snapshot.names):
            for d, count in known.limits.get(name, {}).items():
                self.limit[i, self.col[d]] = count
            if name in known.limits and known.vas.get(name):
                ids = known.intern(attached_by_attachments(known.state, known.vas[name], known.csinodes[name]))
                va_nodes.append(np.full(len(ids), i, dtype=np.int64))
                va_ids.append(ids)
        self.va_node = np.concatenate(va_nodes) if va_nodes else np.zeros(0, dtype=np.int64)
        self.va_vol = np.concatenate(va_ids) if va_ids else np.zeros(0, dtype=np.int64)
        limited = (self.limit >= 0).any(axis=1)
        row_slot, row_vol = [], []
        m = len(snapshot.alive)
        for s in np.flatnonzero(snapshot.alive[:m] & limited[np.maximum(snapshot.pod_node[:m], 0)]):
            ids = known.of_pod(snapshot.pod_at(int(s)))
            row_slot.append(np.full(len(ids), s, dtype=np.int64))
            row_vol.append(ids)
        self.row_slot = np.concatenate(row_slot) if row_slot else np.zeros(0, dtype=np.int64)
        self.row_vol = np.concatenate(row_vol) if row_vol else np.zeros(0, dtype=np.int64)
        self.limited = limited
        self.plain: tuple[np.ndarray, np.ndarray] | None = None  # the snapshot's own view, once counted

    def current(self, snapshot) -> bool:
        """Still this snapshot's pods: the same slots on every node (compared in C, not per node)."""
        return self.n_slots == len(snapshot.alive) and self.slots == snapshot.node_slots


def _state_volumes(state: ClusterState) -> _StateVolumes:
    """Remembered on the state (`ClusterState.derived`)."""
    found = state.derived.get(NAME)
    if found is None:
        found = state.derived[NAME] = _StateVolumes(state)
    return found


def _snapshot_volumes(snapshot, known: _StateVolumes) -> _SnapshotVolumes:
    """Remembered on the snapshot (`SchedulingSnapshot.derived`), rebuilt when its pods changed."""
    found = snapshot.derived.get(NAME)
    if found is None or not found.current(snapshot):
        found = snapshot.derived[NAME] = _SnapshotVolumes(snapshot, known)
    return found


_PAIR = np.int64(1) << 32  # a (node, volume) pair as one integer: node * _PAIR + volume id


def _attached_now(view, known: _StateVolumes, table: _SnapshotVolumes) -> tuple[np.ndarray, np.ndarray]:
    """(the (node, volume) pairs a pod of the view holds, node x driver count of distinct attached
    volumes: the view's pods and the node's VolumeAttachments)."""
    snap = view.snapshot
    n = len(snap.names)
    visible = snap.alive.copy()
    if view.excluded is not None:
        visible[: len(view.excluded)] &= ~view.excluded[: len(visible)]
    keep = visible[table.row_slot]
    pod_node = [snap.pod_node[table.row_slot[keep]].astype(np.int64)]
    pod_vol = [table.row_vol[keep]]
    for i, infos in view.extra.items():  # pods the view adds (nominated, gang siblings)
        if table.limited[i]:
            for info in infos:
                ids = known.of_pod(info.pod)
                pod_node.append(np.full(len(ids), i, dtype=np.int64))
                pod_vol.append(ids)
    held = np.unique(np.concatenate(pod_node) * _PAIR + np.concatenate(pod_vol))
    every = np.unique(np.concatenate([held, table.va_node * _PAIR + table.va_vol]))
    vol_driver = known.vol_col()[every % _PAIR] if len(every) else np.zeros(0, dtype=np.int64)
    counted = vol_driver >= 0
    width = max(len(table.col), 1)
    attached = np.bincount((every // _PAIR)[counted] * width + vol_driver[counted],
                           minlength=n * width).reshape(n, width)
    return held, attached


def over_limit(view, known: _StateVolumes, table: _SnapshotVolumes, new: dict[str, str]) -> np.ndarray:
    """Per node: does a driver's distinct attached volumes (the view's pods and the node's
    VolumeAttachments) plus the pod's volumes not already held by a pod there exceed its limit?
    The snapshot's own view is counted once and remembered; a what-if view is counted afresh."""
    if view.excluded is None and not view.extra:
        if table.plain is None:
            table.plain = _attached_now(view, known, table)
        held, attached = table.plain
    else:
        held, attached = _attached_now(view, known, table)
    n = len(view.snapshot.names)
    new_ids = known.intern(new)
    failed = np.zeros(n, dtype=bool)
    for driver in set(new.values()):
        j = table.col.get(driver)
        if j is None:
            continue  # no node limits this driver
        mine = [vid for vid, d in zip(new_ids.tolist(), new.values()) if d == driver]
        remaining = np.full(n, len(mine), dtype=np.int64)
        for vid in mine:
            there = held[held % _PAIR == vid] // _PAIR
            remaining[there] -= 1  # a pod on that node holds it already: not new
        failed |= (table.limit[:, j] >= 0) & (remaining > 0) & (attached[:, j] + remaining > table.limit[:, j])
    return failed


class NodeVolumeLimitsFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        """upstream PreFilter: Skip unless the pod has a claim, an ephemeral or a migratable volume."""
        if not any(v.persistent_volume_claim is not None or v.ephemeral is not None or mig.is_inline_migratable(v)
                   for v in ctx.pod.spec.volumes):
            return Status(Code.SKIP)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        state = ctx.snapshot.state
        known = _state_volumes(state)
        try:  # read as on a node with a CSINode: only such nodes have limits
            new = attachable(state, ctx.pod, known.any_csinode, True)
        except ClaimError as e:  # a missing / foreign claim fails every node alike
            return NodeStatuses.where(np.ones(len(idx), dtype=bool), Code.UNRESOLVABLE, (str(e),))
        if not new or not any(known.limits.values()):
            return NodeStatuses.where(np.zeros(len(idx), dtype=bool), Code.UNSCHEDULABLE, ())
        failed = over_limit(view, known, _snapshot_volumes(ctx.snapshot, known), new)
        return NodeStatuses.where(failed[idx], Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT,))
