"""The extender over loopback HTTP, called as upstream's HTTPExtender calls it (facts file section 1)."""

from __future__ import annotations

import httpx
import msgspec
import pytest
from clusters import gpu_rules_cluster, gpu_rules_docs
from loopback import make_extender, serving
from standin import ExtenderConfig, HTTPExtender, StandIn, num_feasible_nodes_to_find

from kubegpu.scheduling.snapshot import SchedulingSnapshot


@pytest.fixture(scope="module")
def state():
    return gpu_rules_cluster()


@pytest.fixture(scope="module")
def docs():
    return {d["metadata"]["name"]: d for d in gpu_rules_docs()}


@pytest.fixture
def server(state):
    ext = make_extender(state)
    with serving(ext) as url:
        yield url, ext


def post(url, verb, body) -> httpx.Response:
    return httpx.post(f"{url}/{verb}", content=msgspec.json.encode(body), headers={"Content-Type": "application/json"})


def node_names(state):
    return [n.name for n in state.nodes]


def test_golden_filter_request_names_only_gets_names_back_with_capitalised_keys(server, state, docs):
    # facts 1.2: {"Pod": {...}, "Nodes": null, "NodeNames": ["n1", "n2"]}
    url, _ = server
    r = post(url, "filter", {"Pod": docs["eight-0"], "Nodes": None, "NodeNames": node_names(state)})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert body["Nodes"] is None and body["Error"] == ""
    assert body["NodeNames"] == ["a100-2"]
    # a100-0 has 2 free of 8: the core's upstream reason; the time-sliced node: kubegpu's, unresolvable
    assert body["FailedNodes"]["a100-0"] == "Insufficient nvidia.com/gpu"
    assert body["FailedAndUnresolvableNodes"]["t4-ts-0"].startswith("kubegpu: GPUs here are shared by time-slicing")


def test_golden_filter_request_with_a_nodelist_gets_the_node_objects_back(server, state, docs):
    # facts 1.2 (simulator doc): "Nodes": {"metadata": {}, "items": [...]}, "NodeNames": null; upstream
    # HTTPExtender.Filter reads result.Nodes when not nodeCacheCapable
    url, _ = server
    items = [docs[n] for n in node_names(state)]
    r = post(url, "filter", {"Pod": docs["eight-0"], "Nodes": {"metadata": {}, "items": items}, "NodeNames": None})
    body = r.json()
    assert body["NodeNames"] is None
    assert body["Nodes"]["items"] == [docs["a100-2"]]


def test_prioritize_answers_a_host_priority_array_within_0_to_10(server, state, docs):
    url, _ = server
    r = post(url, "prioritize", {"Pod": docs["one-gpu-0"], "Nodes": None, "NodeNames": node_names(state)})
    body = r.json()
    assert isinstance(body, list) and {tuple(sorted(h)) for h in body} == {("Host", "Score")}
    assert [h["Host"] for h in body] == node_names(state)
    assert all(0 <= h["Score"] <= 10 and isinstance(h["Score"], int) for h in body)
    assert max(h["Score"] for h in body) == 10


def test_verbs_live_under_the_prefix(state, docs):
    ext = make_extender(state)
    with serving(ext, prefix="kubegpu") as url:
        assert post(url + "/kubegpu", "filter", {"Pod": docs["one-gpu-0"], "NodeNames": ["a100-2"]}).status_code == 200
        assert post(url, "filter", {"Pod": docs["one-gpu-0"], "NodeNames": ["a100-2"]}).status_code == 404
        assert httpx.get(url + "/healthz").text == "ok\n"
        assert httpx.get(url + "/readyz").status_code == 200


def test_num_feasible_nodes_to_find_matches_upstream_examples():
    # facts 1.3: 5,000 nodes -> 500; 1,000 -> 420; fewer than 100 -> all
    assert num_feasible_nodes_to_find(5000) == 500
    assert num_feasible_nodes_to_find(1000) == 420
    assert num_feasible_nodes_to_find(60) == 60
    assert num_feasible_nodes_to_find(5000, 100) == 5000


def test_standin_schedules_through_the_extender_and_never_binds_an_8_gpu_pod_to_time_sliced_gpus(state, docs):
    ext = make_extender(state)
    with serving(ext) as url, httpx.Client() as client:
        standin = StandIn(SchedulingSnapshot(state), {n: docs[n] for n in node_names(state)},
                          [HTTPExtender(ExtenderConfig(url, weight=10, managed_resources=["nvidia.com/gpu"]), client)])
        pod = state.pod("ml", "eight-0")
        attempt = standin.schedule(docs["eight-0"], pod)
    assert attempt.node == "a100-2"


def test_standin_without_the_extender_would_put_it_on_the_time_sliced_node(state, docs):
    # the counter-case: kube-scheduler alone sees 8 units of nvidia.com/gpu on t4-ts-0 and a100-2 alike
    objects = {n: docs[n] for n in node_names(state)}
    pod = state.pod("ml", "eight-0")
    chosen = {StandIn(SchedulingSnapshot(state), objects, [], seed=s).schedule(docs["eight-0"], pod).node
              for s in range(8)}
    assert chosen & {"t4-ts-0", "a10-share-0"}


def test_extender_error_fails_the_attempt_unless_ignorable(state, docs):
    ext = make_extender(state)
    with serving(ext) as url, httpx.Client() as client:
        names = {n: docs[n] for n in node_names(state)}
        bad = ExtenderConfig(url + "/nowhere", weight=1)     # every call answers 404
        strict = StandIn(SchedulingSnapshot(state), names, [HTTPExtender(bad, client)])
        attempt = strict.schedule(docs["one-gpu-0"], state.pod("ml", "one-gpu-0"))
        assert attempt.node is None
        assert attempt.error == f"failed filter with extender at URL {url}/nowhere/filter, code 404"
        bad.ignorable = True
        lenient = StandIn(SchedulingSnapshot(state), names, [HTTPExtender(bad, client)])
        assert lenient.schedule(docs["one-gpu-0"], state.pod("ml", "one-gpu-0")).node is not None


def test_a_pod_without_managed_resources_is_not_sent(state, docs):
    from sched_builders import pod

    ext = make_extender(state)
    cpu_pod = pod("web-0", ns="ml", cpu="1")
    with serving(ext) as url, httpx.Client() as client:
        config = ExtenderConfig(url, weight=1, managed_resources=["nvidia.com/gpu"])
        standin = StandIn(SchedulingSnapshot(state), {n: docs[n] for n in node_names(state)},
                          [HTTPExtender(config, client)])
        from kubegpu.model.decode import decode_object

        standin.schedule(cpu_pod, decode_object(cpu_pod))
    assert len(ext.ledger.ring) == 0


def test_the_extender_score_decides_between_equal_nodes(state, docs):
    # one GPU, whole A100s: the policy (fgd) keeps a100-2's 8 free GPUs whole; the stand-in's own
    # LeastAllocated score prefers the emptiest node, but the extender's 10 x weight wins
    ext = make_extender(state)
    with serving(ext) as url, httpx.Client() as client:
        standin = StandIn(SchedulingSnapshot(state), {n: docs[n] for n in node_names(state)},
                          [HTTPExtender(ExtenderConfig(url, weight=10, managed_resources=["nvidia.com/gpu"]),
                                        client)])
        attempt = standin.schedule(docs["one-gpu-0"], state.pod("ml", "one-gpu-0"))
    assert attempt.extender_scores[attempt.node] == 10
    assert attempt.node != "a100-2"
    assert attempt.node == ext.ledger.ring[-1].chosen
