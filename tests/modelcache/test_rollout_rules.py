"""Pure rollout decisions: pointing templates at a version, pods' versions, readiness; `pull --node`."""

from __future__ import annotations

import pytest

from apiserver import models_routes
from kubegpu.modelcache import rollout, store
from kubegpu.modelcache.spec import decode_cache

from .source_server import SourceServer, cache_object, write_cache
from .test_pull import V1, V2
from .test_pull_cli import run

SPEC = {"root": "/models", "workloads": [{"kind": "LeaderWorkerSet", "namespace": "ml", "name": "big",
                                         "annotation": "kubegpu.io/model-version",
                                         "env": {"name": "MODEL_DIR"}}]}


def lws(version: str) -> dict:
    def template():
        return {"metadata": {"annotations": {"kubegpu.io/model-version": version}},
                "spec": {"containers": [{"name": "a", "env": [{"name": "MODEL_DIR", "value": f"/models/llama/{version}"},
                                                              {"name": "OTHER", "value": "x"}]},
                                        {"name": "b"}]}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "big", "namespace": "ml", "resourceVersion": "7"},
            "spec": {"leaderWorkerTemplate": {"leaderTemplate": template(), "workerTemplate": template()}}}


def test_leaderworkerset_patch_points_leader_and_workers_and_keeps_other_env():
    cache = decode_cache(cache_object("llama", "v2", V2, {"url": "http://s/"}, **SPEC))
    g = cache.spec.workloads[0]
    patch = rollout.workload_patch(cache, g, lws("v1"), "v2")
    assert patch["metadata"] == {"resourceVersion": "7"}
    for part in ("leaderTemplate", "workerTemplate"):
        t = patch["spec"]["leaderWorkerTemplate"][part]
        assert t["metadata"]["annotations"] == {"kubegpu.io/model-version": "v2"}
        a, b = t["spec"]["containers"]
        assert a["env"] == [{"name": "OTHER", "value": "x"}, {"name": "MODEL_DIR", "value": "/models/llama/v2"}]
        assert b["env"] == [{"name": "MODEL_DIR", "value": "/models/llama/v2"}]  # no container named: all of them
    assert rollout.workload_version(cache, g, lws("v1")) == "v1"


def test_versions_used_by_pods_reads_annotations_env_and_hostpaths():
    cache = decode_cache(cache_object("llama", "v2", V2, {"url": "http://s/"}, **SPEC))
    pods = [{"metadata": {"annotations": {"kubegpu.io/model-version": "v0"}}},
            {"spec": {"containers": [{"env": [{"name": "X", "value": "/models/llama/v1/config.json"}]}]}},
            {"spec": {"volumes": [{"hostPath": {"path": "/models/llama/current"}}]}},
            {"spec": {"volumes": [{"hostPath": {"path": "/models/other/v9"}}]}},
            {"metadata": {"annotations": {"kubegpu.io/model-version": "old"}}, "status": {"phase": "Succeeded"}}]
    assert rollout.versions_used_by_pods(cache, pods) == {"v0", "v1", "current"}


@pytest.mark.parametrize("min_nodes,holds", [(None, False), (2, True), (3, False)])
def test_readiness_rule_all_or_n_of_m(min_nodes, holds):
    spec = {"readiness": {"minNodes": min_nodes}} if min_nodes else {}
    cache = decode_cache(cache_object("llama", "v2", V2, {"url": "http://s/"}, **spec))
    status = {"a": {"current": "v2"}, "b": {"current": "v2"}, "c": {"current": "v1", "state": "Error",
                                                                      "version": "v2"}}
    verdict = rollout.readiness(cache, ["a", "b", "c"], status)
    assert verdict.holds is holds and verdict.as_copies() == {"available": 2, "total": 3, "failed": 1}


def test_pull_with_node_keeps_versions_the_nodes_pods_use(apiserver, tmp_path):
    models_routes.install(apiserver)
    kubeconfig = apiserver.kubeconfig(tmp_path / "kc")
    root = tmp_path / "root"
    apiserver.add_all([
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "old", "namespace": "ml"},
         "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "env": [
             {"name": "MODEL_PATH", "value": f"{root}/llama/v0"}]}]}, "status": {"phase": "Running"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "elsewhere", "namespace": "ml"},
         "spec": {"nodeName": "gpu-2", "containers": [{"name": "c", "env": [
             {"name": "MODEL_PATH", "value": f"{root}/llama/v1"}]}]}, "status": {"phase": "Running"}}])
    with SourceServer(V1) as src:
        for version in ("v0", "v1"):
            f = write_cache(tmp_path / f"{version}.yaml", cache_object("llama", version, V1, {"url": src.url},
                                                                       root=str(root), storage={"headroom": "0"}))
            assert run("models", "pull", "--cache", str(f))[0] == 0
        src.files = dict(V2)
        f = write_cache(tmp_path / "v2.yaml", cache_object("llama", "v2", V2, {"url": src.url}, root=str(root),
                                                           storage={"headroom": "0"}))
        code, _, err = run("models", "pull", "--cache", str(f), "--node", "gpu-1", "--kubeconfig", str(kubeconfig))
    assert code == 0, err
    # v0: a pod on this node uses it; v1: only a pod on another node does, so it goes
    assert store.versions_on_disk(root, "llama") == ["v0", "v2"]
