"""The doctor section and the Prometheus samples about ModelCaches."""

from __future__ import annotations

from kubegpu.modelcache.metrics import metric_samples
from kubegpu.modelcache.overview import doctor_section, doctor_section_from_state
from kubegpu.sources.documents import Documents, load_cluster

from .test_plan import gpu_node, the_cache


def deployment(version: str, updated: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "llm", "namespace": "serving", "generation": 2},
            "spec": {"replicas": 4, "template": {"metadata": {"annotations": {"v": version}}}},
            "status": {"observedGeneration": 2, "replicas": 4, "updatedReplicas": updated}}


def cache_with_status() -> dict:
    body = the_cache(workloads=[{"kind": "Deployment", "namespace": "serving", "name": "llm", "annotation": "v"}],
                     readiness={"minNodes": 2})
    body["status"] = {"nodes": {"gpu-1": {"state": "Verified", "version": "v2", "current": "v2"},
                                "gpu-2": {"state": "Downloading", "version": "v2", "current": "v1"},
                                "gpu-3": {"state": "Error", "version": "v2", "error": "404"}}}
    return body


NODES = [gpu_node("gpu-1"), gpu_node("gpu-2"), gpu_node("gpu-3"), gpu_node("gpu-4")]


def test_doctor_section_counts_states_and_readiness():
    section = doctor_section([cache_with_status()], NODES, {("Deployment", "serving", "llm"): deployment("v2", 3)})
    row = section["caches"][0]
    assert row["nodes"] == {"Pending": 1, "Downloading": 1, "Verified": 1, "Error": 1}
    assert row["copies"] == {"available": 1, "total": 4, "failed": 1} and row["ready"] is False
    assert row["workloads"] == [{"workload": "Deployment/serving/llm", "version": "v2", "mixed_replicas": 1}]
    assert section["summary"] == {"caches": 1, "ready": 0, "invalid": 0}


def test_invalid_cache_is_reported_not_dropped():
    bad = the_cache()
    bad["spec"]["files"][0]["path"] = "/abs"
    section = doctor_section([bad], NODES)
    assert section["summary"]["invalid"] == 1 and "spec.files[0].path" in section["caches"][0]["error"]


def test_metric_samples():
    samples = metric_samples([cache_with_status()], NODES, {("Deployment", "serving", "llm"): deployment("v2", 1)})
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    assert got[("kubegpu_model_cache_nodes", (("model", "llama"), ("state", "Verified")))] == 1
    assert got[("kubegpu_model_cache_nodes", (("model", "llama"), ("state", "Pending")))] == 1
    assert got[("kubegpu_model_cache_copies", (("kind", "failed"), ("model", "llama")))] == 1
    assert got[("kubegpu_model_cache_mixed_version_replicas",
                (("model", "llama"), ("workload", "Deployment/serving/llm")))] == 3


def test_section_from_a_cluster_state():
    docs = Documents(source="t")
    for o in [*NODES, cache_with_status(), deployment("v1", 4)]:
        docs.add(o, "t")
    section = doctor_section_from_state(load_cluster(docs))
    assert section["caches"][0]["workloads"][0]["version"] == "v1"
    assert section["caches"][0]["nodes"]["Verified"] == 1
