"""VolumeBinding's PV matching, vectorised over nodes, equals upstream's FindMatchingVolume run node by node.

The reference below is upstream findMatchingVolumes / FindMatchingVolume written out plainly for
one node at a time (claims by increasing request; skip PVs chosen earlier, bound to another claim,
too small or of another volume mode; a PV pre-bound to the claim is the answer where its node
affinity allows, no match elsewhere; otherwise the smallest PV that is Available, of the claim's
class, offers its access modes, matches its selector and is usable on the node).
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.model.quantity import resource_amount
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.filters.volumematch import candidates, pv_node_mask, unmatched_claims
from kubegpu.scheduling.filters.volumes import claim_class
from kubegpu.scheduling.snapshot import SchedulingSnapshot

from .upstream_volumes.runner import node, pv, pvc

SIZES = ["1Gi", "2Gi", "5Gi", "10Gi"]
MODES = [["ReadWriteOnce"], ["ReadWriteMany"], ["ReadWriteOnce", "ReadOnlyMany"]]


def _size(q) -> int:
    return resource_amount("storage", q) if q is not None else 0


def _bound_to(v, claim) -> bool:
    ref = v.spec.claim_ref
    return (ref is not None and ref.name == claim.name and (ref.namespace or "") == claim.namespace
            and (not ref.uid or ref.uid == claim.metadata.uid))


def reference_match(claim, pvs, usable, chosen):
    want, smallest = _size(claim.spec.resources.requests.get("storage")), None
    for k, v in enumerate(pvs):
        if v.name in chosen or (v.spec.claim_ref is not None and not _bound_to(v, claim)):
            continue
        cap = _size(v.spec.capacity.get("storage"))
        if cap < want or (v.spec.volume_mode or "Filesystem") != (claim.spec.volume_mode or "Filesystem"):
            continue
        if _bound_to(v, claim):
            return v if usable[k] else None
        if not usable[k] or v.status.phase != "Available":
            continue
        if claim.spec.selector is not None and not selector_matches(claim.spec.selector, v.metadata.labels):
            continue
        if (v.spec.storage_class_name or "") != claim_class(claim):
            continue
        if not set(claim.spec.access_modes) <= set(v.spec.access_modes):
            continue
        if smallest is None or cap < _size(smallest.spec.capacity.get("storage")):
            smallest = v
    return smallest


def reference_unmatched(snapshot, claims) -> list[set[str]]:
    """Per node, the names of the claims left without a PV."""
    order = sorted(claims, key=lambda c: _size(c.spec.resources.requests.get("storage")))
    pvs = candidates(snapshot.state, {claim_class(c) for c in claims})
    out = []
    for i in range(len(snapshot.names)):
        usable = [bool(pv_node_mask(snapshot, v)[i]) for v in pvs]
        chosen: set[str] = set()
        left = set()
        for claim in order:
            hit = reference_match(claim, pvs, usable, chosen)
            if hit is None:
                left.add(claim.name)
            else:
                chosen.add(hit.name)
        out.append(left)
    return out


# weighted towards PVs that could serve the claims, so that claims compete for them
pv_specs = hs.lists(hs.tuples(hs.sampled_from(SIZES), hs.sampled_from(["fast", "fast", "slow"]),
                              hs.sampled_from(MODES), hs.sampled_from(["Available"] * 4 + ["Bound", "Released"]),
                              hs.sampled_from([None] * 5 + ["Block"]),
                              hs.sampled_from([None, [0], [1], [0, 2], "zone-a"]),
                              hs.sampled_from([None] * 5 + [0, 1, "other"]), hs.booleans()),
                    max_size=9)
claim_specs = hs.lists(hs.tuples(hs.sampled_from(SIZES), hs.sampled_from(["fast", "fast", "slow"]),
                                 hs.sampled_from(MODES), hs.sampled_from([None] * 5 + ["Block"]),
                                 hs.sampled_from([False] * 3 + [True])),
                       min_size=1, max_size=3)
ONE_LOCAL_PV_TWO_CLAIMS = ([("10Gi", "fast", ["ReadWriteOnce"], "Available", None, [0], None, False)],
                           [("1Gi", "fast", ["ReadWriteOnce"], None, False)] * 2)
TWO_SHARED_PVS_TWO_CLAIMS = ([("10Gi", "fast", ["ReadWriteOnce"], "Available", None, None, None, False)] * 2,
                             [("1Gi", "fast", ["ReadWriteOnce"], None, False)] * 2)


def _objects(pv_list, claim_list):
    nodes = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}",
                                   "topology.kubernetes.io/zone": "zone-a" if i < 2 else "zone-b"}) for i in range(4)]
    docs = [*nodes]
    for j, (size, cls, modes, vmode, sel) in enumerate(claim_list):
        doc = pvc(f"c{j}", sc=cls)
        doc["spec"].update({"resources": {"requests": {"storage": size}}, "accessModes": list(modes)})
        if vmode:
            doc["spec"]["volumeMode"] = vmode
        if sel:
            doc["spec"]["selector"] = {"matchLabels": {"tier": "gold"}}
        docs.append(doc)
    for k, (size, cls, modes, phase, vmode, where, ref, gold) in enumerate(pv_list):
        affinity = None
        if isinstance(where, list):
            affinity = {"kubernetes.io/hostname": [f"n{i}" for i in where]}
        elif where:
            affinity = {"topology.kubernetes.io/zone": [where]}
        claim_ref = None
        if ref == "other":
            claim_ref = {"name": "someone-else", "namespace": "default"}
        elif ref is not None and ref < len(claim_list):
            claim_ref = {"name": f"c{ref}", "namespace": "default"}
        doc = pv(f"pv{k}", sc=cls, capacity=size, phase=phase, affinity=affinity, claim_ref=claim_ref,
                 modes=modes, labels={"tier": "gold"} if gold else {})
        if vmode:
            doc["spec"]["volumeMode"] = vmode
        docs.append(doc)
    return docs


@settings(max_examples=250, deadline=None)
@given(pv_specs, claim_specs)
@example(*ONE_LOCAL_PV_TWO_CLAIMS)  # the second claim may not take the PV the first one took
@example(*TWO_SHARED_PVS_TWO_CLAIMS)  # ... and takes the next one where PVs serve every node
def test_vectorised_matching_equals_upstream_node_by_node(pv_list, claim_list):
    state = ClusterState([decode_object(d) for d in _objects(pv_list, claim_list)])
    snapshot = SchedulingSnapshot.from_cluster(state)
    claims = [state.get("PersistentVolumeClaim", "default", f"c{j}") for j in range(len(claim_list))]
    got = [set() for _ in snapshot.names]
    covered = np.zeros(len(snapshot.names), dtype=int)
    for mask, left in unmatched_claims(snapshot, claims):
        covered += mask
        for i in np.flatnonzero(mask):
            got[i] = {c.name for c in left}
    assert (covered == 1).all()  # the groups partition the nodes
    assert got == reference_unmatched(snapshot, claims)


def test_a_thousand_local_pvs_match_without_a_loop_over_nodes_and_pvs():
    """One local PV per node (node affinity to its hostname): each node's claim takes its own PV."""
    n = 1000
    docs = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in range(n)]
    docs += [pv(f"local-{i}", sc="local", capacity="100Gi", phase="Available", modes=["ReadWriteOnce"],
                affinity={"kubernetes.io/hostname": [f"n{i}"]}) for i in range(n) if i % 10]
    claim = pvc("cache", sc="local")
    claim["spec"].update({"resources": {"requests": {"storage": "50Gi"}}, "accessModes": ["ReadWriteOnce"]})
    state = ClusterState([decode_object(d) for d in [*docs, claim]])
    snapshot = SchedulingSnapshot.from_cluster(state)
    groups = unmatched_claims(snapshot, [state.get("PersistentVolumeClaim", "default", "cache")])
    without = np.zeros(n, dtype=bool)
    for mask, left in groups:
        if left:
            without |= mask
    assert np.flatnonzero(without).tolist() == list(range(0, n, 10))
