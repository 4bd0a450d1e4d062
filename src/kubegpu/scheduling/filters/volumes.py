"""Shared reading of a pod's volumes: its PVCs, their PVs and storage classes, from the state."""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass


@dataclass(frozen=True)
class ClaimRef:
    """One PVC a pod mounts, resolved as far as the state allows."""

    name: str
    claim: PersistentVolumeClaim | None
    volume: PersistentVolume | None
    storage_class: StorageClass | None
    ephemeral: bool = False


BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def claim_class(claim: PersistentVolumeClaim) -> str:
    """upstream GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName."""
    ann = claim.metadata.annotations.get(BETA_STORAGE_CLASS)
    if ann is not None:
        return ann
    return claim.spec.storage_class_name or ""


def claim_of(pod: Pod, v) -> tuple[str, bool] | None:
    """(PVC name, is generic ephemeral) of one volume of the pod; None when no claim backs it."""
    if v.persistent_volume_claim is not None:
        return v.persistent_volume_claim.claim_name, False
    if v.ephemeral is not None:
        return f"{pod.name}-{v.name}", True  # upstream ephemeral.VolumeClaimName
    return None


def claim_names(pod: Pod) -> list[tuple[str, bool]]:
    """(PVC name, is generic ephemeral) for every claim-backed volume of the pod."""
    return [found for v in pod.spec.volumes if (found := claim_of(pod, v)) is not None]


def owned_by(claim: PersistentVolumeClaim, pod: Pod) -> bool:
    """The pod is the claim's controller (a generic ephemeral claim made for this pod)."""
    return any(r.controller and r.uid == pod.metadata.uid for r in claim.metadata.owner_references)


def pod_claims(state: ClusterState, pod: Pod) -> list[ClaimRef]:
    out = []
    for name, ephemeral in claim_names(pod):
        pvc = state.get("PersistentVolumeClaim", pod.namespace, name)
        pv = sc = None
        if isinstance(pvc, PersistentVolumeClaim):
            if pvc.spec.volume_name:
                found = state.get("PersistentVolume", None, pvc.spec.volume_name)
                pv = found if isinstance(found, PersistentVolume) else None
            if claim_class(pvc):
                found = state.get("StorageClass", None, claim_class(pvc))
                sc = found if isinstance(found, StorageClass) else None
        out.append(ClaimRef(name, pvc if isinstance(pvc, PersistentVolumeClaim) else None, pv, sc, ephemeral))
    return out
