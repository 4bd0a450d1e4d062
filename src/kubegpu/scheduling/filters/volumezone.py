"""VolumeZone: a bound PV labelled with zones/regions admits only nodes in one of them.

upstream volume_zone.go: PV label values may list several zones joined by "__"; a node with no
zone or region label at all passes. For each PV label the node's same key is read, and only when
the node lacks it the GA form of a beta key; a missing key or another value fails. PreFilter
rejects a missing claim / PV / class, a claim with neither volume nor class, and an unbound claim
whose class is not WaitForFirstConsumer. All UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.kinds import PersistentVolume, PersistentVolumeClaim, StorageClass
from kubegpu.scheduling.filters.volumes import claim_class
from kubegpu.scheduling.framework import Code, CycleContext, FilterPlugin, NodeStatuses, Status

NAME = "VolumeZone"
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
TOPOLOGY_LABELS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
                   "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
_GA = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
       "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


def _unresolvable(msg: str) -> Status:
    return Status(Code.UNRESOLVABLE, (msg,))


def _pv_topologies(pv: PersistentVolume) -> list[tuple[str, set[str]]]:
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        zones = {z.strip() for z in value.split("__")}
        if "" not in zones:  # upstream LabelZonesToSet fails on an empty zone: the label is ignored
            out.append((key, zones))
    return out


def pv_topologies(ctx: CycleContext) -> list[tuple[str, set[str]]] | Status:
    """upstream getPVbyPod: the zone constraints of the pod's claims, or the rejection."""
    state = ctx.snapshot.state
    strict = ctx.version.volume_zone_checks_unbound_claims
    out: list[tuple[str, set[str]]] = []
    for v in ctx.pod.spec.volumes:
        if v.persistent_volume_claim is None:
            continue
        name = v.persistent_volume_claim.claim_name
        if not name:
            return _unresolvable("PersistentVolumeClaim had no name")
        claim = state.get("PersistentVolumeClaim", ctx.pod.namespace, name)
        if not isinstance(claim, PersistentVolumeClaim):
            if strict:
                return _unresolvable(f'persistentvolumeclaim "{name}" not found')
            continue
        if not claim.spec.volume_name:
            if not strict:
                continue
            sc_name = claim_class(claim)
            if not sc_name:
                return _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
            sc = state.get("StorageClass", None, sc_name)
            if not isinstance(sc, StorageClass):
                return _unresolvable(f'storageclasses.storage.k8s.io "{sc_name}" not found')
            if sc.volume_binding_mode is None:
                return _unresolvable(f'VolumeBindingMode not set for StorageClass "{sc_name}"')
            if sc.volume_binding_mode == "WaitForFirstConsumer":
                continue
            return _unresolvable("PersistentVolume had no name")
        pv = state.get("PersistentVolume", None, claim.spec.volume_name)
        if not isinstance(pv, PersistentVolume):
            if strict:
                return _unresolvable(f'persistentvolume "{claim.spec.volume_name}" not found')
            continue
        out.extend(_pv_topologies(pv))
    return out


class VolumeZoneFilter(FilterPlugin):
    name = NAME

    def pre_filter(self, ctx: CycleContext):
        constraints = pv_topologies(ctx)
        if isinstance(constraints, Status):
            return constraints
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
            own = labels.column(key)
            hit = np.isin(own, [labels.code_of(key, v) for v in values])
            ga = _GA.get(key, key)
            if ga != key:  # the node's own key when it has it, else the GA form of a beta key
                hit = np.where(own >= 0, hit, np.isin(labels.column(ga), [labels.code_of(ga, v) for v in values]))
            ok &= hit
        failed = (has_any & ~ok)[idx]
        return NodeStatuses.where(failed, Code.UNRESOLVABLE, (ERR_REASON_CONFLICT,))
