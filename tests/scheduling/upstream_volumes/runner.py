"""Run one volume plugin alone, as upstream's own plugin tests do, on v1 wire dicts.

upstream's volume tests build one plugin with fake listers (PVs, PVCs, StorageClasses, CSINodes,
VolumeAttachments) and call its PreFilter, then its Filter on each NodeInfo. `tests/scheduling/
upstream/cases.py` runs the whole profile and reads one plugin back; that cannot reach a case
where an earlier plugin's PreFilter (e.g. VolumeBinding before VolumeZone) would reject first.
So here the named plugin's own PreFilter and Filter are called on a snapshot decoded like a real
dump: a PreFilter rejection is the verdict, a Skip is success, else the Filter status per node.

Existing pods keep their names and uids (ephemeral claims are named after, and owned by, their
pod); only unnamed pods get a unique name.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.scheduling.cycle import make_context
from kubegpu.scheduling.framework import Code, Status
from kubegpu.scheduling.registry import DEFAULT_FILTERS
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import NEWEST

from ..upstream.cases import bind_existing, verdict

DEFAULT_NS = "default"


def meta(name: str, ns: str | None = None, **extra) -> dict:
    out = {"name": name, **extra}
    if ns is not None:
        out["namespace"] = ns
    return out


def node(name: str, labels=None) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta(name, labels=dict(labels or {})),
            "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str = "", *, ns: str = DEFAULT_NS, uid: str | None = None, volumes=(), node_name=None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x"}], "volumes": list(volumes)}
    if node_name:
        spec["nodeName"] = node_name
    uid = uid if uid is not None else f"uid-{ns}-{name}"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, ns, uid=uid), "spec": spec,
            "status": {"phase": "Pending"}}


def pvc_volume(claim: str, name: str | None = None) -> dict:
    return {"name": name if name is not None else claim, "persistentVolumeClaim": {"claimName": claim}}


def pvc(name: str, *, ns: str = DEFAULT_NS, sc: str | None = None, volume: str | None = None,
        bound: bool = False, annotations=None, phase: str | None = None, request: str | None = None,
        modes=(), owner: dict | None = None, deleting: bool = False) -> dict:
    """A claim; `bound` adds pv.kubernetes.io/bind-completed as upstream's withBoundPV does."""
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "true"
    m = meta(name, ns, annotations=ann)
    if owner:
        m["ownerReferences"] = [owner]
    if deleting:
        m["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict = {}
    if sc is not None:
        spec["storageClassName"] = sc
    if volume:
        spec["volumeName"] = volume
    if request:
        spec["resources"] = {"requests": {"storage": request}}
    if modes:
        spec["accessModes"] = list(modes)
    doc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": m, "spec": spec, "status": {}}
    if phase:
        doc["status"]["phase"] = phase
    return doc


def pv(name: str, *, sc: str | None = None, labels=None, phase: str | None = None, capacity: str | None = None,
       affinity: dict | None = None, source: dict | None = None, claim_ref: dict | None = None,
       modes=(), **spec_extra) -> dict:
    """A PV; `affinity` {key: [values]} becomes one required term of In expressions (upstream makePV)."""
    spec: dict = dict(source or {})
    if sc is not None:
        spec["storageClassName"] = sc
    if capacity:
        spec["capacity"] = {"storage": capacity}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": list(v)} for k, v in affinity.items()]}]}}
    if claim_ref:
        spec["claimRef"] = claim_ref
    if modes:
        spec["accessModes"] = list(modes)
    spec.update(spec_extra)
    doc = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta(name, labels=dict(labels or {})),
           "spec": spec, "status": {}}
    if phase:
        doc["status"]["phase"] = phase
    return doc


def storage_class(name: str, *, mode: str | None = None, provisioner: str = "", topologies=None) -> dict:
    doc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta(name),
           "provisioner": provisioner}
    if mode:
        doc["volumeBindingMode"] = mode
    if topologies is not None:
        doc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(v)}
                                                               for k, v in term.items()]} for term in topologies]
    return doc


def csinode(name: str, drivers: dict, annotations=None) -> dict:
    """`drivers` {name: count or None}."""
    ds = []
    for d, count in drivers.items():
        entry: dict = {"name": d, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        ds.append(entry)
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": meta(name, annotations=dict(annotations or {})), "spec": {"drivers": ds}}


def volume_attachment(name: str, node_name: str, attacher: str, pv_name: str) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": meta(name),
            "spec": {"attacher": attacher, "nodeName": node_name, "source": {"persistentVolumeName": pv_name}}}


def plugin_statuses(plugin: str, pending: dict, nodes: Iterable[dict], existing: Iterable[dict] = (),
                    objects: Iterable[dict] = (), *, on: str | None = None, version=NEWEST) -> list[Status]:
    """`plugin`'s own verdict for `pending` on every node (PreFilter rejection / Skip -> the same for all).

    `existing` pods are bound to `on` (default: the first node) unless they name a node.
    """
    nodes = list(nodes)
    target_node = on or nodes[0]["metadata"]["name"]
    def unnamed_only(k: int, doc: dict) -> None:
        if not doc["metadata"]["name"]:
            doc["metadata"]["name"] = f"existing-{k}"
            doc["metadata"]["uid"] = f"uid-existing-{k}"

    bound = bind_existing(existing, target_node, unnamed_only)
    state = ClusterState([decode_object(d) for d in [*nodes, *bound, *objects]])
    snapshot = SchedulingSnapshot.from_cluster(state)
    pending = copy.deepcopy(pending)
    if not pending["metadata"]["name"]:
        pending["metadata"]["name"] = "pending"
    target = decode_object(pending)
    ctx = make_context(snapshot, target, version, None)
    impl = next(p for p in DEFAULT_FILTERS if p.name == plugin)
    res = impl.pre_filter(ctx)
    n = len(snapshot.nodes)
    if isinstance(res, Status) and res.code == Code.SKIP:
        return [Status()] * n
    if isinstance(res, Status) and res.code != Code.SUCCESS:
        return [Status(res.code, res.reasons, plugin)] * n
    out = impl.filter(ctx, snapshot.view(ctx.info), np.arange(n))
    return [out.status(snapshot.index[d["metadata"]["name"]], plugin) for d in nodes]


def plugin_verdicts(*args, **kw) -> list[tuple]:
    return [verdict(s) for s in plugin_statuses(*args, **kw)]


def plugin_verdict(*args, **kw) -> tuple:
    """The verdict on the first node (upstream's single-NodeInfo tables)."""
    return plugin_verdicts(*args, **kw)[0]
