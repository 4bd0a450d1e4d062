"""Per-pod facts a ClusterState keeps once (GPU demand, top controller, live pods) equal their
per-pod definitions, whatever order they are asked in and for pods that are not the state's own."""

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as hs

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.model.gpu import pod_gpu_demand
from kubegpu.model.resources import pod_requests

NODES = {
    "whole": ({"nvidia.com/gpu": "8"}, {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
    "sliced": ({"nvidia.com/gpu": "40"}, {"nvidia.com/gpu.count": "4", "nvidia.com/gpu.replicas": "10",
                                          "nvidia.com/gpu.sharing-strategy": "time-slicing"}),
    "hami": ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu.memory": "24576"}),
    "cpu": ({}, {}),
}
PHASES = ["Running", "Pending", "Succeeded", "Failed", None]
REQUESTS = [{}, {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "3"}, {"nvidia.com/gpu": "12"},
            {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "12288"}, {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30"}]
# owner chains: none, a ReplicaSet of a Deployment (both in the state), a Job whose CronJob is absent
OWNERS = [None, ("ReplicaSet", "web-7d9"), ("Job", "nightly-1"), ("ReplicaSet", "gone")]


def node(name):
    alloc, labels = NODES[name]
    return decode_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                          "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", **alloc}}})


def controllers():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "web-7d9", "namespace": "ml",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}]}}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "nightly-1", "namespace": "ml",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "controller": True}]}}
    return [decode_object(o) for o in (rs, dep, job)]


def pod(i, where, phase, requests, owner):
    meta = {"name": f"p{i}", "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": owner[0], "name": owner[1], "controller": True}]
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", **requests}, "limits": requests}}]}
    if where:
        spec["nodeName"] = where
    return decode_object({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                          "status": {"phase": phase} if phase else {}})


def uncached_top(state, p):
    """The outermost controller, walked from the pod's ownerReference as the docstring defines it."""
    ref = next((r for r in p.metadata.owner_references if r.controller), None)
    if ref is None:
        return None
    kind, name = ref.kind, ref.name
    current = state.get(kind, p.namespace, name)
    while current is not None:
        parent = next((r for r in current.metadata.owner_references if r.controller), None)
        if parent is None:
            break
        kind, name = parent.kind, parent.name
        current = state.get(kind, p.namespace, name)
    return kind, name


pods_drawn = hs.lists(hs.tuples(hs.sampled_from([None, *NODES]), hs.sampled_from(PHASES), hs.sampled_from(REQUESTS),
                                hs.sampled_from(OWNERS)), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(pods_drawn, hs.lists(hs.tuples(hs.integers(0, 11), hs.sampled_from([None, "", *NODES])), max_size=30),
       hs.sampled_from([None, *NODES]))
def test_kept_facts_equal_the_per_pod_definitions(drawn, asks, moved_to):
    pods = [pod(i, *d) for i, d in enumerate(drawn)]
    state = ClusterState([*(node(n) for n in NODES), *controllers(), *pods])
    assert state.live_pods == [p for p in state.pods if p.status.phase not in ("Succeeded", "Failed")]
    # ask in a drawn order, on the pod's own node (None, "") or on a named node, twice over
    for i, where in asks + asks:
        p = pods[i % len(pods)]
        on = where or p.spec.node_name or ""
        assert state.gpu_demand(p, where) == pod_gpu_demand(p, pod_requests(p), state.node_gpus.get(on))
        assert state.top_controller(p) == uncached_top(state, p)
    # a copy of a pod bound elsewhere (what defrag's after-state holds) is read on its own node, not the original's
    for p in pods:
        state.gpu_demand(p)
        copy = msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=moved_to))
        assert state.gpu_demand(copy) == pod_gpu_demand(copy, pod_requests(copy), state.node_gpus.get(moved_to or ""))
        assert state.gpu_demand(p) == pod_gpu_demand(p, pod_requests(p), state.node_gpus.get(p.spec.node_name or ""))


def test_a_time_sliced_share_is_not_read_as_whole_gpus_on_another_node():
    p = pod(0, "sliced", "Running", {"nvidia.com/gpu": "5"}, None)
    state = ClusterState([node("sliced"), node("whole"), p])
    assert (state.gpu_demand(p).num_gpu, state.gpu_demand(p).gpu_milli) == (1, 500)   # 5 of 10 replicas
    assert (state.gpu_demand(p, "whole").num_gpu, state.gpu_demand(p, "whole").gpu_milli) == (5, 1000)
    assert state.gpu_demand(p).gpu_milli == 500   # the named node's answer did not replace the own node's
