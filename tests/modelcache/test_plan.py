"""`kubegpu models plan`: bytes, ETAs from the documented throughputs, fan-out waves, ready time."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from kubegpu.errors import InputError
from kubegpu.modelcache.plan import plan, schedule
from kubegpu.modelcache.spec import decode_cache
from kubegpu.sources.documents import Documents, load_cluster

ROOT = Path(__file__).resolve().parents[2]
SHA = "a" * 64
GB = 10**9


def state_of(objects: list[dict]):
    docs = Documents(source="test")
    for o in objects:
        docs.add(o, "test")
    return load_cluster(docs)


def gpu_node(name: str, **annotations: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"pool": "a100"}, "annotations": annotations}}


def the_cache(**spec) -> dict:
    base = {"version": "v2", "files": [{"path": "w.safetensors", "size": 14 * GB, "sha256": SHA}],
            "source": {"path": "/mnt/nfs/llama"}, "nodeSelector": {"pool": "a100"}}
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "ModelCache", "metadata": {"name": "llama"},
            "spec": {**base, **spec}}


def test_seed_figures_14_gb_over_nfs_is_70_s_and_5_s_from_nvme():
    cache = decode_cache(the_cache())
    result = plan(cache, state_of([gpu_node("gpu-1")]))
    node = result.nodes[0]
    assert node.bytes_needed == 14 * GB and node.eta_seconds == 70.0
    assert node.eta_by_path["nfs"] == 70.0 and node.eta_by_path["local-nvme"] == pytest.approx(4.7)
    assert result.ready_at_seconds == 70.0


def test_fan_out_waves_and_n_of_m_ready_time():
    cache = decode_cache(the_cache(fanOut={"maxNodesPulling": 2}, readiness={"minNodes": 3}))
    nodes = [gpu_node(f"gpu-{i}") for i in range(5)]
    result = plan(cache, state_of(nodes))
    assert [n.start_seconds for n in result.nodes] == [0, 0, 70, 70, 140]
    assert result.ready_at_seconds == 140.0  # the 3rd node finishes in the second wave
    assert result.required_nodes == 3 and result.copies["total"] == 5


def test_nodes_that_hold_the_version_move_nothing_and_downloads_count_their_bytes():
    cache_body = the_cache()
    cache_body["status"] = {"nodes": {"gpu-1": {"state": "Verified", "version": "v2", "current": "v2"},
                                      "gpu-2": {"state": "Downloading", "version": "v2", "current": "v1",
                                                "bytesDone": 4 * GB, "freeBytes": 50 * GB}}}
    cache = decode_cache(cache_body)
    result = plan(cache, state_of([gpu_node("gpu-1"), gpu_node("gpu-2"),
                                   gpu_node("gpu-3", **{"models.kubegpu.io/llama": "v1"})]))
    by = {n.name: n for n in result.nodes}
    assert by["gpu-1"].state == "Verified" and by["gpu-1"].bytes_needed == 0
    assert by["gpu-2"].bytes_needed == 10 * GB and by["gpu-2"].holds == "v1"
    assert by["gpu-2"].headroom_bytes == 50 * GB - 10 * GB - 10 * 2**30  # default headroom 10Gi
    assert by["gpu-3"].holds == "v1" and by["gpu-3"].bytes_needed == 14 * GB  # from the node annotation
    assert result.total_bytes == 24 * GB and result.copies["available"] == 1


def test_bandwidth_caps_slow_each_node():
    cache = decode_cache(the_cache(source={"url": "https://models/llama/"},
                                   fanOut={"maxNodesPulling": 4, "totalBytesPerSecond": "400M"}))
    result = plan(cache, state_of([gpu_node("gpu-1")]))
    assert result.rate_bytes_per_second == 100e6  # 400 MB/s shared by 4 nodes < object store 500 MB/s
    assert result.nodes[0].eta_seconds == 140.0


def test_measured_figures_replace_the_defaults():
    cache = decode_cache(the_cache())
    result = plan(cache, state_of([gpu_node("gpu-1")]), {"nfs": 1e9})
    assert result.nodes[0].eta_seconds == 14.0


def test_schedule_takes_free_slots_in_order():
    assert schedule([("a", 100), ("b", 300), ("c", 100), ("d", 0)], rate=100, slots=2) == {
        "a": (0, 1), "b": (0, 3), "c": (1, 2), "d": (0, 0)}


def test_plan_json_contract_via_cli(run_kubegpu, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(the_cache(nodeSelector={"nvidia.com/gpu.present": "true"})))
    done = run_kubegpu("models", "plan", "--cache", str(f), "--demo", "-o", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"model", "version", "nodes", "total_bytes", "ready_at_seconds"} <= set(data)
    for n in data["nodes"]:
        assert {"name", "state", "bytes_needed", "eta_seconds"} <= set(n)
    assert data["model"] == "llama" and data["total_bytes"] == 14 * GB * len(data["nodes"])


def test_plan_reads_the_cache_from_a_snapshot(run_kubegpu, tmp_path):
    snap = tmp_path / "cluster.yaml"
    snap.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                    "items": [gpu_node("gpu-1"), gpu_node("gpu-2"), the_cache()]}))
    done = run_kubegpu("models", "plan", "--snapshot", str(snap), "-o", "json")
    assert done.returncode == 0, done.stderr
    assert [n["name"] for n in json.loads(done.stdout)["nodes"]] == ["gpu-1", "gpu-2"]


def test_plan_bad_cache_is_one_line_exit_2(run_kubegpu, tmp_path):
    bad = the_cache()
    bad["spec"]["files"][0]["path"] = "../w"
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(bad))
    done = run_kubegpu("models", "plan", "--cache", str(f), "--demo")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "ModelCache/llama" in done.stderr and "spec.files[0].path" in done.stderr


def _openapi_to_jsonschema(node):
    if isinstance(node, dict):
        out = {k: _openapi_to_jsonschema(v) for k, v in node.items() if not k.startswith("x-kubernetes")}
        if node.get("x-kubernetes-int-or-string"):
            out["type"] = ["integer", "string"]
        out.pop("format", None)
        out.pop("default", None)
        return out
    if isinstance(node, list):
        return [_openapi_to_jsonschema(v) for v in node]
    return node


def test_crd_schema_accepts_the_example_and_rejects_what_decoding_rejects():
    crd = yaml.safe_load((ROOT / "deploy" / "crds" / "modelcache.yaml").read_text())
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    schema = _openapi_to_jsonschema(version["schema"]["openAPIV3Schema"])
    example = yaml.safe_load((ROOT / "deploy" / "models" / "modelcache-example.yaml").read_text())
    jsonschema.validate(example, schema)
    decode_cache(example)
    for mutate in (lambda o: o["spec"].pop("version"), lambda o: o["spec"]["files"][0].update(size=-1),
                   lambda o: o["spec"]["files"][0].update(sha256="xyz")):
        bad = json.loads(json.dumps(example))
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(InputError):
            decode_cache(bad)


def test_plan_lists_the_pods_the_rollout_restarts():
    ns = "serving"
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm", "namespace": ns},
           "spec": {"replicas": 2, "template": {"metadata": {"annotations": {"model": "v1"}}}}}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "llm-abc", "namespace": ns, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                                 "name": "llm", "uid": "u1", "controller": True}]}}

    def pod(name, owner="llm-abc"):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": ns, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                                "name": owner, "uid": "u2", "controller": True}]},
                "spec": {"nodeName": "gpu-1", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}

    cache = decode_cache(the_cache(workloads=[{"kind": "Deployment", "namespace": ns, "name": "llm",
                                               "annotation": "model"}]))
    result = plan(cache, state_of([gpu_node("gpu-1"), dep, rs, pod("llm-abc-1"), pod("llm-abc-2"),
                                   pod("other-1", owner="other")]))
    assert [(w.workload, w.version, w.restarts) for w in result.workloads] == [
        ("Deployment/serving/llm", "v1", ["serving/llm-abc-1", "serving/llm-abc-2"])]


def test_plan_reads_the_live_clusters_modelcache(apiserver, tmp_path, run_kubegpu):
    from apiserver import models_routes

    models_routes.install(apiserver)
    body = the_cache()
    body["status"] = {"nodes": {"gpu-1": {"state": "Verified", "version": "v2", "current": "v2"}}}
    apiserver.add_all([gpu_node("gpu-1"), gpu_node("gpu-2"), body])
    kubeconfig = apiserver.kubeconfig(tmp_path / "kc")
    done = run_kubegpu("models", "plan", "--kubeconfig", str(kubeconfig), "--model", "llama", "-o", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [(n["name"], n["state"], n["bytes_needed"]) for n in data["nodes"]] == [
        ("gpu-1", "Verified", 0), ("gpu-2", "Pending", 14 * GB)]
    assert all(r.method == "GET" for r in apiserver.paths())  # read-only
