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

from weakref import WeakKeyDictionary

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import CSINode, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, VolumeAttachment
from kubegpu.scheduling.filters import csimigration as mig
from kubegpu.scheduling.filters.volumes import claim_class
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
_UNBOUND = "kubegpu-unbound-claim"  # upstream: a random prefix, so placeholders never meet real handles


class ClaimError(Exception):
    """The new pod's claim cannot be read (upstream returns the error as the Filter status)."""


def _controlled_by(claim: PersistentVolumeClaim, pod: Pod) -> bool:
    return any(r.controller and r.uid == pod.metadata.uid for r in claim.metadata.owner_references)


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
        if v.persistent_volume_claim is not None:
            name, ephemeral = v.persistent_volume_claim.claim_name, False
        elif v.ephemeral is not None:
            name, ephemeral = f"{pod.name}-{v.name}", True
        else:
            found = mig.translate(v) if mig.is_inline_migratable(v) else None
            if found is not None and mig.migration_on(csinode, found[0]):
                driver = mig.IN_TREE_TO_CSI[found[0]]
                out[f"{driver}/{found[1]}"] = driver
            continue
        claim = state.get("PersistentVolumeClaim", pod.namespace, name)
        if not isinstance(claim, PersistentVolumeClaim):
            if new:
                raise ClaimError(f'looking up PVC {pod.namespace}/{name}: persistentvolumeclaims "{name}" not found')
            continue
        if ephemeral and not _controlled_by(claim, pod):
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


class _Attached:
    """What a cluster state already attaches, remembered per state: each node's CSINode and limits,
    its VolumeAttachments, and each bound pod's volumes ({"driver/handle": driver}). A pod's volumes
    depend on the node only through whether it has a CSINode (in-tree migration), so the answers
    are shared by every pending pod instead of recomputed per pod and node."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.csinodes = {c.name: c for c in state.of_kind("CSINode") if isinstance(c, CSINode)}
        self.limits = {name: driver_limits(c) for name, c in self.csinodes.items()}
        self.vas = attachments_by_node(state)
        self._pods: dict[tuple[str, bool], tuple[Pod, dict[str, str]]] = {}
        self._by_attachment: dict[str, dict[str, str]] = {}
        self._nodes: dict[str, tuple[tuple, dict[str, str]]] = {}

    def of_pod(self, pod: Pod, csinode: CSINode | None) -> dict[str, str]:
        key = (pod.key, csinode is not None)
        hit = self._pods.get(key)
        if hit is None or hit[0] is not pod:
            hit = self._pods[key] = (pod, attachable(self.state, pod, csinode, False))
        return hit[1]

    def by_attachments(self, name: str, csinode: CSINode | None) -> dict[str, str]:
        hit = self._by_attachment.get(name)
        if hit is None:
            hit = self._by_attachment[name] = attached_by_attachments(self.state, self.vas.get(name, []), csinode)
        return hit

    def on_node(self, view, i: int, name: str, csinode: CSINode | None) -> dict[str, str]:
        """The volumes the node's pods use; remembered while the node's pods are unchanged
        (a snapshot replaces a node's slot tuple when its pods change, never mutates it)."""
        plain = view.excluded is None and not view.extra.get(i)
        slots = view.snapshot.node_slots[i]
        hit = self._nodes.get(name) if plain else None
        if hit is not None and hit[0] is slots:
            return hit[1]
        attached: dict[str, str] = {}
        for p in view.pods_on(i):
            attached.update(self.of_pod(p, csinode))
        if plain:
            self._nodes[name] = (slots, attached)
        return attached


_ATTACHED: "WeakKeyDictionary[ClusterState, _Attached]" = WeakKeyDictionary()


def _attached(state: ClusterState) -> _Attached:
    found = _ATTACHED.get(state)
    if found is None:
        found = _ATTACHED[state] = _Attached(state)
    return found


class _Counts:
    """Per node and driver, as columns over a snapshot's nodes (its own pods, no what-if): the
    distinct volumes attached (pods and VolumeAttachments) and the CSINode limit (-1: none); and
    where each pod-attached volume is, so a new pod's volume already there is not counted twice."""

    def __init__(self, snapshot, known: _Attached) -> None:
        self.slots = list(snapshot.node_slots)
        view = snapshot.view()
        n = len(snapshot.names)
        drivers = sorted({d for lim in known.limits.values() for d in lim})
        self.col = {d: j for j, d in enumerate(drivers)}
        self.attached = np.zeros((n, len(drivers)), dtype=np.int64)
        self.limit = np.full((n, len(drivers)), -1, dtype=np.int64)
        where: dict[str, list[int]] = {}
        for i, name in enumerate(snapshot.names):
            limits = known.limits.get(name)
            if not limits:
                continue
            csinode = known.csinodes[name]
            for d, count in limits.items():
                self.limit[i, self.col[d]] = count
            on_pods = known.on_node(view, i, name, csinode)
            seen = dict(on_pods)
            for unique, driver in known.by_attachments(name, csinode).items():
                seen.setdefault(unique, driver)
            for unique in on_pods:
                where.setdefault(unique, []).append(i)
            for driver in seen.values():
                if driver in self.col:
                    self.attached[i, self.col[driver]] += 1
        self.where = {u: np.asarray(nodes, dtype=np.int64) for u, nodes in where.items()}

    def current(self, snapshot) -> bool:
        """Still this snapshot's pods (a node's slot tuple is replaced when its pods change)."""
        return len(self.slots) == len(snapshot.node_slots) and all(
            a is b for a, b in zip(self.slots, snapshot.node_slots))

    def over(self, new: dict[str, str]) -> np.ndarray:
        """Nodes where a driver's attached volumes plus the pod's new ones exceed its limit."""
        n = len(self.slots)
        failed = np.zeros(n, dtype=bool)
        for driver in set(new.values()):
            j = self.col.get(driver)
            if j is None:
                continue  # no node limits this driver
            mine = [u for u, d in new.items() if d == driver]
            remaining = np.full(n, len(mine), dtype=np.int64)
            for u in mine:
                if u in self.where:
                    remaining[self.where[u]] -= 1  # already attached there by a pod: not new
            failed |= ((self.limit[:, j] >= 0) & (remaining > 0)
                       & (self.attached[:, j] + remaining > self.limit[:, j]))
        return failed


_COUNTS: "WeakKeyDictionary[object, _Counts]" = WeakKeyDictionary()


def _counts(snapshot, known: _Attached) -> _Counts:
    found = _COUNTS.get(snapshot)
    if found is None or not found.current(snapshot):
        found = _COUNTS[snapshot] = _Counts(snapshot, known)
    return found


class NodeVolumeLimitsFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        """upstream PreFilter: Skip unless the pod has a claim, an ephemeral or a migratable volume."""
        if not any(v.persistent_volume_claim is not None or v.ephemeral is not None or mig.is_inline_migratable(v)
                   for v in ctx.pod.spec.volumes):
            return Status(Code.SKIP)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        state = ctx.snapshot.state
        try:
            attachable(state, ctx.pod, None, True)  # a missing / foreign claim fails every node alike
        except ClaimError as e:
            return NodeStatuses.where(np.ones(len(idx), dtype=bool), Code.UNRESOLVABLE, (str(e),))
        known = _attached(state)
        if not any(known.limits.values()):
            return NodeStatuses.where(np.zeros(len(idx), dtype=bool), Code.UNSCHEDULABLE, ())
        # only nodes whose CSINode reports limits do any work, and on those migration is on
        new = attachable(state, ctx.pod, next(iter(known.csinodes.values())), True)
        if not new:
            return NodeStatuses.where(np.zeros(len(idx), dtype=bool), Code.UNSCHEDULABLE, ())
        failed = _counts(ctx.snapshot, known).over(new)
        for i in _what_if_nodes(view):  # nodes whose pods the view changes: counted from its own pods
            failed[i] = _over_on(view, int(i), known, new)
        return NodeStatuses.where(failed[idx], Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT,))


def _what_if_nodes(view) -> np.ndarray:
    """Nodes where the view hides pods or adds ones the snapshot does not hold."""
    snap = view.snapshot
    nodes = [np.asarray(list(view.extra), dtype=np.int64)]
    if view.excluded is not None:
        m = len(snap.alive)
        hidden = view.excluded[:m] & snap.alive[:m]
        nodes.append(snap.pod_node[:m][hidden].astype(np.int64))
    return np.unique(np.concatenate(nodes))


def _over_on(view, i: int, known: _Attached, new: dict[str, str]) -> bool:
    """One node's verdict from the view's own pods (upstream Filter on one NodeInfo)."""
    name = view.snapshot.names[i]
    limits = known.limits.get(name)
    if not limits:
        return False
    csinode = known.csinodes[name]
    new = dict(new)
    attached = known.on_node(view, i, name, csinode)
    counts: dict[str, int] = {}
    for unique, driver in attached.items():
        new.pop(unique, None)
        counts[driver] = counts.get(driver, 0) + 1
    for unique, driver in known.by_attachments(name, csinode).items():
        if unique not in attached:
            counts[driver] = counts.get(driver, 0) + 1
    wanted: dict[str, int] = {}
    for driver in new.values():
        wanted[driver] = wanted.get(driver, 0) + 1
    return any(d in limits and counts.get(d, 0) + c > limits[d] for d, c in wanted.items())
