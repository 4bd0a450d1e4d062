"""Run one upstream plugin table case through kubegpu and read back that plugin's own verdict.

upstream's plugin tests call one plugin's PreFilter, then its Filter on one NodeInfo. Here the
same objects (v1 wire dicts, decoded like a real dump) go through the whole default profile
(`run_filters`), and `plugin_status` reads the named plugin's status on the named node:

- the plugin's PreFilter rejected the pod   -> that status (the scheduler never runs Filter);
- the plugin's PreFilter said Skip          -> success (upstream: Filter is not called);
- otherwise                                 -> the plugin's Filter status on the node.

So another plugin's verdict never leaks into the comparison, while the inputs still pass
through kubegpu's decoder, request arithmetic and snapshot like a real cluster's would.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.scheduling.cycle import run_filters
from kubegpu.scheduling.framework import Code, Status
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import NEWEST

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
NODE = "node"


def node(name: str = NODE, *, labels=None, taints=None, unschedulable: bool = False, allocatable=None) -> dict:
    """A v1 Node; `allocatable` is the exact status.allocatable (nothing is added)."""
    spec: dict = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    status: dict = {"conditions": [{"type": "Ready", "status": "True"}]}
    if allocatable is not None:
        status["allocatable"] = dict(allocatable)
        status["capacity"] = dict(allocatable)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec, "status": status}


def container(requests=None, *, name: str = "c", ports=None, restart_policy: str | None = None) -> dict:
    c: dict = {"name": name, "image": "x", "resources": {"requests": dict(requests or {})}}
    if ports:
        c["ports"] = list(ports)
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def pod(name: str = "p", *, ns: str = "default", node_name: str | None = None, containers: Iterable = (),
        init: Iterable = (), overhead=None, resources=None, volumes=None, tolerations=None,
        node_selector=None, affinity=None) -> dict:
    """A v1 Pod; `containers` / `init` are container() dicts, `resources` the pod-level ones."""
    spec: dict = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if overhead:
        spec["overhead"] = dict(overhead)
    if resources is not None:
        spec["resources"] = resources
    if volumes:
        spec["volumes"] = list(volumes)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def bind_existing(existing: Iterable[dict], on: str, name) -> list[dict]:
    """Copies of `existing` pods, running on `on` unless they name a node; `name(k, doc)` names them."""
    bound = []
    for k, doc in enumerate(existing):
        doc = copy.deepcopy(doc)
        name(k, doc)
        doc["spec"].setdefault("nodeName", on)
        doc["status"]["phase"] = "Running"
        bound.append(doc)
    return bound


def plugin_status(plugin: str, pending: dict, nodes: Iterable[dict], existing: Iterable[dict] = (),
                  objects: Iterable[dict] = (), *, on: str = NODE, version=NEWEST) -> Status:
    """`plugin`'s verdict for `pending` on node `on`.

    `existing` pods are bound to `on` unless they name a node (upstream NodeInfo(pods...));
    unnamed ones get unique names. `pending` is not part of the cluster, as upstream's pod
    under test is not in the NodeInfo.
    """
    def unique(k: int, doc: dict) -> None:
        doc["metadata"]["name"] = f"{doc['metadata']['name']}-e{k}"
        doc["metadata"]["uid"] = f"uid-e{k}"

    state = ClusterState([decode_object(d) for d in [*nodes, *bind_existing(existing, on, unique), *objects]])
    snapshot = SchedulingSnapshot.from_cluster(state)
    target = decode_object(pending)
    outcome = run_filters(snapshot, target, version)
    if outcome.prefilter is not None:
        if outcome.prefilter.plugin != plugin:
            raise AssertionError(f"PreFilter of {outcome.prefilter.plugin} rejected the pod: {outcome.prefilter}")
        return outcome.prefilter
    if plugin in outcome.skipped:
        return Status()
    i = snapshot.index[on]
    return outcome.results[outcome.plugins.index(plugin)].status(i, plugin)


def verdict(status: Status) -> tuple:
    """(code, *reasons) as upstream's NewStatus spells it; () for success."""
    if status.code in (Code.SUCCESS, Code.SKIP):
        return ()
    return (status.code.upstream, *status.reasons)
