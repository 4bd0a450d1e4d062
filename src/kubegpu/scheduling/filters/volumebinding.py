"""VolumeBinding: the pod's claims must be bound, or bindable on the node.

upstream volume_binding.go + binder.go. PreFilter reads every claim (a PVC or a generic ephemeral
volume's claim) and rejects a missing, lost, deleting or foreign one; a claim counts as bound only
with volumeName and the pv.kubernetes.io/bind-completed annotation; an unbound claim whose class
is not WaitForFirstConsumer (or a pre-bound one) rejects the pod ("pod has unbound immediate
PersistentVolumeClaims"). Filter (FindPodVolumes), in upstream's reason order:
- bound claims, in pod order until the first problem: PV node affinity must match the node
  (NodeConflict), the PV must exist (PVNotExist);
- WaitForFirstConsumer claims: one selected for another node fails; the rest take the smallest
  fitting available PV; those left over (and selected-node ones) need a class with a provisioner
  whose allowedTopologies admit the node (BindConflict otherwise).
All UnschedulableAndUnresolvable. A class with no volumeBindingMode (only in hand-written files: the
API server defaults it to Immediate) is upstream's error status, reported here as UAU. Not modelled: CSIStorageCapacity (NotEnoughSpace), the
PreFilterResult that narrows nodes for bound local PVs, volume attributes classes.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.kinds import PersistentVolume, PersistentVolumeClaim, StorageClass
from kubegpu.scheduling.filters import volumematch
from kubegpu.scheduling.filters.volumes import claim_class, claim_names, owned_by
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status
from kubegpu.model.labelindex import LabelIndex

NAME = "VolumeBinding"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"  # versioned in versions.py
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_PVC_DELETING = 'persistentvolumeclaim "{name}" is being deleted'
NO_PROVISIONER = "kubernetes.io/no-provisioner"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def _unresolvable(msg: str) -> Status:
    return Status(Code.UNRESOLVABLE, (msg,))


def _read_claims(ctx: CycleContext) -> list[PersistentVolumeClaim] | Status:
    """upstream podHasPVCs: every claim of the pod, or the PreFilter rejection."""
    state, pod = ctx.snapshot.state, ctx.pod
    out = []
    for name, ephemeral in claim_names(pod):
        claim = state.get("PersistentVolumeClaim", pod.namespace, name)
        if not isinstance(claim, PersistentVolumeClaim):
            if ephemeral:
                return _unresolvable("waiting for ephemeral volume controller to create the persistentvolumeclaim "
                                     f'"{name}"')
            return _unresolvable(f'persistentvolumeclaim "{name}" not found')
        if claim.status.phase == "Lost":
            return _unresolvable(f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                                 f'"{claim.spec.volume_name or ""}"')
        if claim.metadata.deletion_timestamp:
            return _unresolvable(ERR_PVC_DELETING.format(name=name))
        if ephemeral and not owned_by(claim, pod):
            return _unresolvable(f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} "
                                 "(pod is not owner)")
        out.append(claim)
    return out


def _class(ctx: CycleContext, claim: PersistentVolumeClaim) -> StorageClass | None:
    name = claim_class(claim)
    sc = ctx.snapshot.state.get("StorageClass", None, name) if name else None
    return sc if isinstance(sc, StorageClass) else None


def _topology_mask(sc: StorageClass, labels: LabelIndex) -> np.ndarray:
    """upstream MatchTopologySelectorTerms: no terms match every node; terms are ORed."""
    if not sc.allowed_topologies:
        return np.ones(labels.n, dtype=bool)
    out = np.zeros(labels.n, dtype=bool)
    for term in sc.allowed_topologies:
        hit = np.ones(labels.n, dtype=bool)
        for e in term.match_label_expressions:
            hit &= np.isin(labels.column(e.key), [labels.code_of(e.key, v) for v in e.values])
        out |= hit
    return out


def _can_provision(ctx: CycleContext, claims: list[PersistentVolumeClaim]) -> np.ndarray:
    """upstream checkVolumeProvisions: every claim's class provisions, on a node its topology admits."""
    labels = ctx.snapshot.labels
    ok = np.ones(labels.n, dtype=bool)
    for claim in claims:
        sc = _class(ctx, claim)
        if sc is None or not sc.provisioner or sc.provisioner == NO_PROVISIONER:
            return np.zeros(labels.n, dtype=bool)
        ok &= _topology_mask(sc, labels)
    return ok


class VolumeBindingFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        claims = _read_claims(ctx)
        if isinstance(claims, Status):
            return claims
        if not claims:
            return Status(Code.SKIP)
        bound, delayed, immediate = [], [], False
        for claim in claims:
            if claim.spec.volume_name and BIND_COMPLETED in claim.metadata.annotations:
                bound.append(claim)
                continue
            sc = _class(ctx, claim)
            if sc is not None and sc.volume_binding_mode is None:
                return _unresolvable(f'VolumeBindingMode not set for StorageClass "{sc.name}"')
            if sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer" and not claim.spec.volume_name:
                delayed.append(claim)
            else:
                immediate = True  # an immediate claim, or one pre-bound to a PV, not yet bound
        if immediate:
            code = Code.UNRESOLVABLE if ctx.version.unbound_pvc_prefilter_code_unresolvable else Code.UNSCHEDULABLE
            return Status(code, (ERR_REASON_UNBOUND_IMMEDIATE,))
        ctx.data[NAME] = (bound, delayed)
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        snapshot = ctx.snapshot
        n = len(snapshot.names)
        bound, delayed = ctx.data[NAME]
        node_conflict = np.zeros(n, dtype=bool)
        missing_pv = np.zeros(n, dtype=bool)
        pending = np.ones(n, dtype=bool)  # checkBoundClaims stops at a node's first problem
        for claim in bound:
            pv = snapshot.state.get("PersistentVolume", None, claim.spec.volume_name)
            if not isinstance(pv, PersistentVolume):
                missing_pv |= pending
                break
            mask = volumematch.pv_node_mask(snapshot, pv)
            node_conflict |= pending & ~mask
            pending &= mask
        bind_conflict = np.zeros(n, dtype=bool)
        if delayed:
            selected = [c for c in delayed if SELECTED_NODE in c.metadata.annotations]
            to_match = [c for c in delayed if SELECTED_NODE not in c.metadata.annotations]
            wrong_node = np.zeros(n, dtype=bool)
            for claim in selected:
                wrong_node |= np.asarray(snapshot.names, dtype=object) != claim.metadata.annotations[SELECTED_NODE]
            groups = volumematch.unmatched_claims(snapshot, to_match) if to_match else [(np.ones(n, dtype=bool), [])]
            for nodes, left in groups:
                provision = [*selected, *left]
                if provision:
                    bind_conflict |= nodes & ~_can_provision(ctx, provision)
            bind_conflict |= wrong_node
        node_conflict, bind_conflict, missing_pv = node_conflict[idx], bind_conflict[idx], missing_pv[idx]
        affinity = ctx.version.volume_node_affinity_reason
        choice = (node_conflict.astype(np.int32) + 2 * bind_conflict + 4 * missing_pv)
        statuses = []
        for key in range(1, 8):
            reasons = tuple(r for bit, r in ((1, affinity), (2, ERR_REASON_BIND_CONFLICT),
                                             (4, ERR_REASON_PV_NOT_EXIST)) if key & bit)
            statuses.append((Code.UNRESOLVABLE, reasons))
        return NodeStatuses.from_choice(choice, statuses)
