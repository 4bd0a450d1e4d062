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
        names = ctx.snapshot.names
        try:
            attachable(state, ctx.pod, None, True)  # a missing / foreign claim fails every node alike
        except ClaimError as e:
            return NodeStatuses.where(np.ones(len(idx), dtype=bool), Code.UNRESOLVABLE, (str(e),))
        known = _attached(state)
        failed = np.zeros(len(idx), dtype=bool)
        wants: dict[str, str] | None = None  # the pod's volumes on a node with a CSINode (all that do work)
        for k, i in enumerate(idx):  # only nodes whose CSINode reports limits do any work
            name = names[int(i)]
            limits = known.limits.get(name)
            if not limits:
                continue
            csinode = known.csinodes[name]
            if wants is None:
                wants = attachable(state, ctx.pod, csinode, True)
            new = dict(wants)
            if not new:
                continue
            attached = known.on_node(view, int(i), name, csinode)
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
            failed[k] = any(d in limits and counts.get(d, 0) + c > limits[d] for d, c in wanted.items())
        return NodeStatuses.where(failed, Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT,))
