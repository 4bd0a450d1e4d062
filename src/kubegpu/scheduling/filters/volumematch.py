"""VolumeBinding's per-node questions about PVs, answered for all nodes at once.

- `pv_node_mask`: upstream CheckNodeAffinity (a required selector with no terms matches nothing),
  with the in-tree -> CSI topology translation the binder applies on nodes whose CSINode lists the
  plugin as migrated (tryTranslatePVToCSI).
- `unmatched_claims`: upstream findMatchingVolumes / FindMatchingVolume: claims by increasing
  request each take the smallest fitting PV not yet chosen. The answer depends on a node only
  through which PVs' node affinity it matches, so nodes are grouped by that signature and the
  greedy match runs once per group, not once per node.
"""

from __future__ import annotations

import numpy as np

from kubegpu.model.kinds import CSINode, PersistentVolume, PersistentVolumeClaim
from kubegpu.model.objects import NodeSelectorRequirement, NodeSelectorTerm
from kubegpu.model.quantity import resource_amount
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.filters.volumes import claim_class
from kubegpu.scheduling.labels import LabelIndex

MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
# in-tree plugin -> (PV source field, CSI driver's zone topology key)
_TOPOLOGY = {"kubernetes.io/gce-pd": ("gce_persistent_disk", "topology.gke.io/zone"),
             "kubernetes.io/aws-ebs": ("aws_elastic_block_store", "topology.ebs.csi.aws.com/zone"),
             "kubernetes.io/azure-disk": ("azure_disk", "topology.disk.csi.azure.com/zone")}
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


def _storage(q) -> int:
    return resource_amount("storage", q) if q is not None else 0


def _raw_mask(pv: PersistentVolume, labels: LabelIndex, extra: NodeSelectorRequirement | None = None) -> np.ndarray:
    req = pv.spec.node_affinity.required if pv.spec.node_affinity else None
    if req is None:
        if extra is None:
            return np.ones(labels.n, dtype=bool)
        return labels.terms([NodeSelectorTerm(match_expressions=[extra])])
    terms = req.node_selector_terms
    if extra is not None:  # the translation adds the zone requirement to every term
        terms = [NodeSelectorTerm(match_expressions=[*t.match_expressions, extra], match_fields=t.match_fields)
                 for t in terms]
    return labels.terms(terms) if terms else np.zeros(labels.n, dtype=bool)


def _translated_zone(pv: PersistentVolume) -> tuple[str, NodeSelectorRequirement] | None:
    for plugin, (field, key) in _TOPOLOGY.items():
        if getattr(pv.spec, field) is None:
            continue
        zone = next((pv.metadata.labels[k] for k in _ZONE_LABELS if pv.metadata.labels.get(k)), "")
        if not zone:
            return None
        return plugin, NodeSelectorRequirement(key=key, operator="In", values=sorted(set(zone.split("__"))))
    return None


def migrated_nodes(snapshot, plugin: str) -> np.ndarray:
    """Nodes whose CSINode names `plugin` in its migrated-plugins annotation."""
    out = np.zeros(len(snapshot.names), dtype=bool)
    for obj in snapshot.state.of_kind("CSINode"):
        if isinstance(obj, CSINode) and obj.name in snapshot.index:
            listed = obj.metadata.annotations.get(MIGRATED_PLUGINS, "")
            out[snapshot.index[obj.name]] = plugin in listed.split(",")
    return out


def pv_node_mask(snapshot, pv: PersistentVolume) -> np.ndarray:
    labels = snapshot.labels
    mask = _raw_mask(pv, labels)
    if pv.spec.csi is None:
        found = _translated_zone(pv)
        if found is not None:
            on = migrated_nodes(snapshot, found[0])
            if on.any():
                mask = np.where(on, _raw_mask(pv, labels, found[1]), mask)
    return mask


def _bound_to(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    ref = pv.spec.claim_ref
    return (ref is not None and ref.name == claim.name and (ref.namespace or "") == claim.namespace
            and (not ref.uid or ref.uid == claim.metadata.uid))


def _static_ok(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """FindMatchingVolume's node-independent checks for a PV not bound to this claim."""
    if pv.status.phase != "Available":
        return False
    if claim.spec.selector is not None and not selector_matches(claim.spec.selector, pv.metadata.labels):
        return False
    if (pv.spec.storage_class_name or "") != claim_class(claim):
        return False
    return set(claim.spec.access_modes) <= set(pv.spec.access_modes)


def candidates(state, claims: list[PersistentVolumeClaim]) -> list[PersistentVolume]:
    """The PVs of the claims' classes that may serve one of them (upstream pvCache.ListPVs(class))."""
    classes = {claim_class(c) for c in claims}
    out = []
    for pv in state.of_kind("PersistentVolume"):
        if (pv.spec.storage_class_name or "") in classes and pv.metadata.deletion_timestamp is None:
            out.append(pv)
    return out


def _match(claim, pvs, usable, chosen) -> PersistentVolume | None:
    want = _storage(claim.spec.resources.requests.get("storage"))
    mode = claim.spec.volume_mode or "Filesystem"
    smallest, size = None, 0
    for k, pv in enumerate(pvs):
        if pv.name in chosen:
            continue
        if pv.spec.claim_ref is not None and not _bound_to(pv, claim):
            continue
        cap = _storage(pv.spec.capacity.get("storage"))
        if cap < want or (pv.spec.volume_mode or "Filesystem") != mode:
            continue
        if _bound_to(pv, claim):
            return pv if usable[k] else None  # a pre-bound PV is the only answer
        if not usable[k] or not _static_ok(pv, claim):
            continue
        if smallest is None or cap < size:
            smallest, size = pv, cap
    return smallest


def unmatched_claims(snapshot, claims: list[PersistentVolumeClaim]) -> list[tuple[np.ndarray, list]]:
    """[(node mask, claims left without a PV on those nodes)], the masks partitioning all nodes."""
    n = len(snapshot.names)
    order = sorted(claims, key=lambda c: _storage(c.spec.resources.requests.get("storage")))
    pvs = candidates(snapshot.state, claims)
    if not pvs:
        return [(np.ones(n, dtype=bool), order)]
    matrix = np.stack([pv_node_mask(snapshot, pv) for pv in pvs], axis=1)  # nodes x PVs
    signatures, group = np.unique(matrix, axis=0, return_inverse=True)
    group = np.asarray(group).reshape(-1)
    out = []
    for g, usable in enumerate(signatures):
        chosen: set[str] = set()
        left = []
        for claim in order:
            pv = _match(claim, pvs, usable, chosen)
            if pv is None:
                left.append(claim)
            else:
                chosen.add(pv.name)
        out.append((group == g, left))
    return out
