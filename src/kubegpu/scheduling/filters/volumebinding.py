"""VolumeBinding: the pod's claims must be bound, or bindable on the node.

upstream PreFilter: an unbound claim whose StorageClass binds Immediately rejects the pod
("pod has unbound immediate PersistentVolumeClaims"); claims of WaitForFirstConsumer classes are
bound per node in Filter. Filter: a bound claim's PV node affinity must match the node; an
unbound WaitForFirstConsumer claim needs an available PV that matches, or a provisioner whose
allowedTopologies admit the node. All UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.quantity import resource_amount
from kubegpu.scheduling.filters.volumes import ClaimRef, pod_claims
from kubegpu.scheduling.framework import Code, CycleContext, NodeStatuses, Status
from kubegpu.scheduling.labels import LabelIndex

NAME = "VolumeBinding"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"  # versioned in versions.py
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_PVC_DELETING = 'persistentvolumeclaim "{name}" is being deleted'
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def _wait_for_first_consumer(ref: ClaimRef) -> bool:
    return ref.storage_class is not None and ref.storage_class.volume_binding_mode == "WaitForFirstConsumer"


def _pv_node_mask(pv, labels: LabelIndex) -> np.ndarray:
    req = pv.spec.node_affinity.required if pv.spec.node_affinity else None
    if req is None or not req.node_selector_terms:
        return np.ones(labels.n, dtype=bool)
    return labels.terms(req.node_selector_terms)


def _topology_mask(sc, labels: LabelIndex) -> np.ndarray:
    if not sc.allowed_topologies:
        return np.ones(labels.n, dtype=bool)
    out = np.zeros(labels.n, dtype=bool)
    for term in sc.allowed_topologies:
        hit = np.ones(labels.n, dtype=bool)
        for e in term.match_label_expressions:
            col = labels.column(e.key)
            hit &= np.isin(col, [labels.code_of(e.key, v) for v in e.values])
        out |= hit
    return out


def _bindable_mask(ctx: CycleContext, ref: ClaimRef) -> np.ndarray:
    """Nodes where an unbound WaitForFirstConsumer claim could get a volume."""
    labels = ctx.snapshot.labels
    state = ctx.snapshot.state
    claim = ref.claim
    want = claim.spec.resources.requests.get("storage")
    size = resource_amount("storage", want) if want is not None else 0
    modes = set(claim.spec.access_modes)
    out = np.zeros(labels.n, dtype=bool)
    for pv in state.of_kind("PersistentVolume"):
        if pv.spec.claim_ref is not None and pv.spec.claim_ref.name != claim.name:
            continue
        if (pv.spec.storage_class_name or "") != (claim.spec.storage_class_name or ""):
            continue
        cap = pv.spec.capacity.get("storage")
        if cap is not None and resource_amount("storage", cap) < size:
            continue
        if not modes <= set(pv.spec.access_modes):
            continue
        out |= _pv_node_mask(pv, labels)
    sc = ref.storage_class
    if sc is not None and sc.provisioner and sc.provisioner != NO_PROVISIONER:
        out |= _topology_mask(sc, labels)
    return out


class VolumeBindingFilter:
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        refs = pod_claims(ctx.snapshot.state, ctx.pod)
        if not refs:
            return Status(Code.SKIP)
        unbound_immediate = False
        for ref in refs:
            if ref.claim is None:
                return Status(Code.UNRESOLVABLE, (f'persistentvolumeclaim "{ref.name}" not found',))
            if ref.claim.metadata.deletion_timestamp:
                return Status(Code.UNRESOLVABLE, (ERR_PVC_DELETING.format(name=ref.name),))
            if not ref.claim.spec.volume_name and not _wait_for_first_consumer(ref):
                unbound_immediate = True
        if unbound_immediate:
            code = Code.UNRESOLVABLE if ctx.version.unbound_pvc_prefilter_code_unresolvable else Code.UNSCHEDULABLE
            return Status(code, (ERR_REASON_UNBOUND_IMMEDIATE,))
        ctx.data[NAME] = refs
        return None

    def filter(self, ctx: CycleContext, view, idx: np.ndarray) -> NodeStatuses:
        labels = ctx.snapshot.labels
        n = labels.n
        node_conflict = np.zeros(n, dtype=bool)
        bind_conflict = np.zeros(n, dtype=bool)
        missing_pv = False
        for ref in ctx.data[NAME]:
            if ref.claim.spec.volume_name:
                if ref.volume is None:
                    missing_pv = True
                else:
                    node_conflict |= ~_pv_node_mask(ref.volume, labels)
            else:
                bind_conflict |= ~_bindable_mask(ctx, ref)
        node_conflict, bind_conflict = node_conflict[idx], bind_conflict[idx]
        keys = []
        for k in range(len(idx)):
            reasons = []
            if missing_pv:
                reasons.append(ERR_REASON_PV_NOT_EXIST)
            if node_conflict[k]:
                reasons.append(ctx.version.volume_node_affinity_reason)
            if bind_conflict[k]:
                reasons.append(ERR_REASON_BIND_CONFLICT)
            keys.append(tuple(reasons) or None)
        return NodeStatuses.from_keys(keys, {key: (Code.UNRESOLVABLE, key) for key in set(keys) if key})
