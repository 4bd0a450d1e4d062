"""VolumeBinding's per-node questions about PVs, answered for all nodes at once.

- `pv_node_mask`: upstream CheckNodeAffinity (a required selector with no terms matches nothing),
  with the in-tree -> CSI topology translation the binder applies on nodes whose CSINode lists the
  plugin as migrated (tryTranslatePVToCSI).
- `unmatched_claims`: upstream findMatchingVolumes / FindMatchingVolume: claims by increasing
  request each take the smallest fitting PV not yet chosen on the node. Done for every node at
  once: a claim's eligible PVs are a mask over PV columns (built once per state), the PVs each
  node may use are (node, PV) pairs, and a node's pick is the lowest capacity rank among its pairs.
"""

from __future__ import annotations


import numpy as np

from kubegpu.errors import InputError, QuantityError
from kubegpu.model.kinds import CSINode, PersistentVolume, PersistentVolumeClaim
from kubegpu.model.objects import NodeSelectorRequirement, NodeSelectorTerm
from kubegpu.model.quantity import resource_amount
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.filters.volumes import claim_class
from kubegpu.model.labelindex import LabelIndex

MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
# in-tree plugin -> (PV source field, CSI driver's zone topology key)
_TOPOLOGY = {"kubernetes.io/gce-pd": ("gce_persistent_disk", "topology.gke.io/zone"),
             "kubernetes.io/aws-ebs": ("aws_elastic_block_store", "topology.ebs.csi.aws.com/zone"),
             "kubernetes.io/azure-disk": ("azure_disk", "topology.disk.csi.azure.com/zone")}
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


def _storage(obj, field: str, q) -> int:
    """Bytes of a storage quantity; a bad one names the object and the field (exit 2, one line)."""
    if q is None:
        return 0
    try:
        return resource_amount("storage", q)
    except QuantityError as err:
        raise InputError(err.message, obj=obj.ref, field=f"{field}.storage") from None


def _pv_size(pv: PersistentVolume) -> int:
    return _storage(pv, "spec.capacity", pv.spec.capacity.get("storage"))


def _claim_size(claim: PersistentVolumeClaim) -> int:
    return _storage(claim, "spec.resources.requests", claim.spec.resources.requests.get("storage"))


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


def _node_mask(snapshot, pv: PersistentVolume) -> np.ndarray:
    labels = snapshot.labels
    mask = _raw_mask(pv, labels)
    if pv.spec.csi is None:
        found = _translated_zone(pv)
        if found is not None:
            on = migrated_nodes(snapshot, found[0])
            if on.any():
                mask = np.where(on, _raw_mask(pv, labels, found[1]), mask)
    return mask


# PV -> the nodes it may be used on, per node label index (pod-independent: computed once, not per
# pod; node indexes rather than masks, as most PVs with a node affinity name one node or a zone)
def _usable(snapshot, pv: PersistentVolume) -> np.ndarray | None:
    """Indexes of the nodes that may use `pv`; None when every node may (remembered on the label index)."""
    memo: dict[str, tuple[PersistentVolume, np.ndarray | None]] = snapshot.labels.derived.setdefault(
        "volumematch.usable", {})
    hit = memo.get(pv.name)
    if hit is None or hit[0] is not pv:
        mask = _node_mask(snapshot, pv)
        hit = memo[pv.name] = (pv, None if mask.all() else np.flatnonzero(mask))
    return hit[1]


def pv_node_mask(snapshot, pv: PersistentVolume) -> np.ndarray:
    """The nodes whose labels satisfy the PV's node affinity (upstream CheckNodeAffinity)."""
    nodes = _usable(snapshot, pv)
    n = len(snapshot.names)
    if nodes is None:
        return np.ones(n, dtype=bool)
    mask = np.zeros(n, dtype=bool)
    mask[nodes] = True
    return mask


def _bound_to(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    ref = pv.spec.claim_ref
    return (ref is not None and ref.name == claim.name and (ref.namespace or "") == claim.namespace
            and (not ref.uid or ref.uid == claim.metadata.uid))


def candidates(state, classes) -> list[PersistentVolume]:
    """The PVs of these storage classes that may serve a claim (upstream pvCache.ListPVs(class))."""
    return [pv for pv in state.of_kind("PersistentVolume")
            if (pv.spec.storage_class_name or "") in classes and pv.metadata.deletion_timestamp is None]


class _PVColumns:
    """The candidate PVs as columns, in listing order; `rank` orders them by capacity (ties: listing order)."""

    def __init__(self, snapshot, pvs: list[PersistentVolume]) -> None:
        # a PV no node here may use is never chosen, unless a claim is pre-bound to it (then that
        # claim has no match anywhere): such PVs are left out (e.g. every local PV, for a new node)
        found = [(pv, _usable(snapshot, pv)) for pv in pvs]
        found = [(pv, u) for pv, u in found if u is None or len(u) or pv.spec.claim_ref is not None]
        self.pvs = pvs = [pv for pv, _ in found]
        self.state = snapshot.state  # no reference to the snapshot: it is cached under the snapshot's labels
        self._eligible: dict[tuple[str, str], tuple] = {}
        self.usable = usable = [u for _, u in found]
        self.cap = np.asarray([_pv_size(pv) for pv in pvs], dtype=np.int64)  # quantities stop at 2^63-1
        self.refs: dict[tuple[str, str], list[int]] = {}  # claimRef -> PVs naming it, in listing order
        for k, pv in enumerate(pvs):
            ref = pv.spec.claim_ref
            if ref is not None:
                self.refs.setdefault((ref.namespace or "", ref.name), []).append(k)
        self.mode = np.asarray([pv.spec.volume_mode or "Filesystem" for pv in pvs], dtype=object)
        self.klass = np.asarray([pv.spec.storage_class_name or "" for pv in pvs], dtype=object)
        self.free = np.asarray([pv.spec.claim_ref is None for pv in pvs], dtype=bool)
        self.available = np.asarray([pv.status.phase == "Available" for pv in pvs], dtype=bool)
        self.bit: dict[str, int] = {}  # access mode -> its bit (modes as written; any string counts)
        for pv in pvs:
            for m in pv.spec.access_modes:
                self.bit.setdefault(m, len(self.bit))
        self.access = np.asarray([sum(1 << self.bit[m] for m in set(pv.spec.access_modes)) for pv in pvs],
                                 dtype=object)  # PVs may list any number of modes
        self.by_rank = np.argsort(self.cap, kind="stable").astype(np.int64)  # by capacity, then listing order
        self.rank = np.empty(len(pvs), dtype=np.int64)
        self.rank[self.by_rank] = np.arange(len(pvs))
        self.dense = np.asarray([u is None for u in usable], dtype=bool)
        sparse = [(k, u) for k, u in enumerate(usable) if u is not None]
        self.pair_node = np.concatenate([nodes for _, nodes in sparse]) if sparse else np.zeros(0, np.int64)
        self.pair_pv = (np.repeat([k for k, _ in sparse], [len(nodes) for _, nodes in sparse])
                        if sparse else np.zeros(0, np.int64)).astype(np.int64)

    def eligible(self, claim: PersistentVolumeClaim) -> tuple[np.ndarray, int | None]:
        """(PVs this claim may take if the node allows it, the PV pre-bound to it if any): the
        node-independent half of upstream FindMatchingVolume; remembered per claim."""
        key = (claim.namespace, claim.name)
        hit = self._eligible.get(key)
        if hit is None or hit[0] is not claim:
            hit = self._eligible[key] = (claim, *self._eligible_now(claim))
        return hit[1], hit[2]

    def _eligible_now(self, claim: PersistentVolumeClaim) -> tuple[np.ndarray, int | None]:
        want = _claim_size(claim)
        sized = (self.cap >= want) & (self.mode == (claim.spec.volume_mode or "Filesystem")).astype(bool)
        pre = next((k for k in self.refs.get((claim.namespace, claim.name), ())
                    if sized[k] and _bound_to(self.pvs[k], claim)), None)
        ok = sized & self.free & self.available & (self.klass == claim_class(claim))
        if any(m not in self.bit for m in claim.spec.access_modes):
            ok[:] = False  # no PV offers that mode
        else:
            need = sum(1 << self.bit[m] for m in set(claim.spec.access_modes))
            ok &= ((self.access & need) == need).astype(bool)
        if claim.spec.selector is not None:
            for k in np.flatnonzero(ok):
                ok[k] = selector_matches(claim.spec.selector, self.pvs[k].metadata.labels)
        return ok, (int(pre) if pre is not None else None)

    def _mask(self, k: int, n: int) -> np.ndarray:
        nodes = self.usable[k]
        mask = np.ones(n, dtype=bool) if nodes is None else np.zeros(n, dtype=bool)
        if nodes is not None:
            mask[nodes] = True
        return mask

    def choose(self, n: int, ok: np.ndarray, pre: int | None, taken: list[np.ndarray]) -> np.ndarray:
        """Per node, the PV a claim takes (-1: none): the pre-bound PV where it is not already taken
        (none where its node affinity fails), else the smallest eligible PV usable there and not
        taken by an earlier claim."""
        big = len(self.pvs)
        best = np.full(n, big, dtype=np.int64)
        pairs = ok[self.pair_pv]
        for prev in taken:
            pairs &= self.pair_pv != prev[self.pair_node]
        np.minimum.at(best, self.pair_node[pairs], self.rank[self.pair_pv[pairs]])
        dense = self.by_rank[(ok & self.dense)[self.by_rank]][: len(taken) + 1]  # an earlier claim took at most one
        for k in dense[::-1]:  # smallest last, so it wins where it is free
            free_here = np.ones(n, dtype=bool)
            for prev in taken:
                free_here &= prev != k
            best = np.where(free_here & (self.rank[k] < best), self.rank[k], best)
        answer = np.where(best < big, self.by_rank[np.minimum(best, big - 1)], -1)
        if pre is not None:
            free_here = np.ones(n, dtype=bool)
            for prev in taken:
                free_here &= prev != pre
            answer = np.where(free_here, np.where(self._mask(pre, n), pre, -1), answer)
        return answer


def _columns(snapshot, classes: frozenset[str]) -> _PVColumns:
    """The candidate PVs of these classes as columns, built once per snapshot labels (PVs do not
    change while a cluster state is read), not once per pod."""
    memo: dict[frozenset[str], _PVColumns] = snapshot.labels.derived.setdefault("volumematch.columns", {})
    cols = memo.get(classes)
    if cols is None or cols.state is not snapshot.state:
        cols = memo[classes] = _PVColumns(snapshot, candidates(snapshot.state, classes))
    return cols


def unmatched_claims(snapshot, claims: list[PersistentVolumeClaim]) -> list[tuple[np.ndarray, list]]:
    """[(node mask, claims left without a PV on those nodes)], the masks partitioning all nodes.

    upstream findMatchingVolumes on every node at once: claims by increasing request, each taking
    the smallest fitting PV not yet chosen on that node (vectorised over nodes; no loop over
    nodes x PVs, so thousands of local PVs with one node each stay cheap)."""
    n = len(snapshot.names)
    order = sorted(claims, key=_claim_size)
    cols = _columns(snapshot, frozenset(claim_class(c) for c in claims))
    if not cols.pvs:
        return [(np.ones(n, dtype=bool), order)]
    taken: list[np.ndarray] = []
    for claim in order:
        ok, pre = cols.eligible(claim)
        taken.append(cols.choose(n, ok, pre, taken))
    left = np.stack([t < 0 for t in taken], axis=1)  # nodes x claims
    if left.shape[1] <= 62:  # one integer per node: the set of claims left there
        codes = left.astype(np.int64) @ (np.int64(1) << np.arange(left.shape[1], dtype=np.int64))
        return [(codes == code, [c for j, c in enumerate(order) if (int(code) >> j) & 1])
                for code in np.unique(codes)]
    signatures, group = np.unique(left, axis=0, return_inverse=True)
    group = np.asarray(group).reshape(-1)
    return [(group == g, [c for c, miss in zip(order, sig) if miss]) for g, sig in enumerate(signatures)]
