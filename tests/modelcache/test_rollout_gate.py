"""Agent and controller against the suite's API server: the rollout waits for the nodes."""

from __future__ import annotations

import os
import threading
import time

import pytest

from apiserver import models_routes
from kubegpu.modelcache import store
from kubegpu.modelcache.agent import Agent
from kubegpu.modelcache.controller import Controller
from kubegpu.modelcache.kube import KubeEdge
from kubegpu.modelcache.pull import pull
from kubegpu.modelcache.spec import decode_cache

from .source_server import SourceServer, cache_object
from .test_pull import V1, V2

ANNOTATION = "kubegpu.io/model-version"
FAST = {"retry": {"attempts": 4, "backoffSeconds": 0, "maxBackoffSeconds": 0}, "storage": {"headroom": "0"}}


def node(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"gpu": "a100", **labels}}}


def deployment(version: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "llm", "namespace": "serving", "generation": 1},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "llm"}},
                     "template": {"metadata": {"labels": {"app": "llm"}, "annotations": {ANNOTATION: version}},
                                  "spec": {"containers": [{"name": "server", "image": "vllm:0.6",
                                                           "env": [{"name": "MODEL_PATH",
                                                                    "value": f"/models/llama/{version}"}]}]}}},
            "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2}}


@pytest.fixture
def cluster(apiserver, tmp_path):
    models_routes.install(apiserver)
    edge = KubeEdge.connect(str(apiserver.kubeconfig(tmp_path / "kubeconfig")))
    return apiserver, edge


def setup(server, tmp_path, src, *, min_nodes=None, node_names=("gpu-a", "gpu-b")):
    """Nodes that hold v1 (on disk and in status), a Deployment on v1, the cache (and source) moved to v2."""
    roots = {n: tmp_path / n for n in node_names}
    src_url = src.url
    src.files = dict(V1)
    v1 = decode_cache(cache_object("llama", "v1", V1, {"url": src_url}, root="/models", **FAST))
    for r in roots.values():
        pull(v1, r)
    src.files = dict(V2)
    src.log.clear()
    readiness = {"minNodes": min_nodes} if min_nodes else {}
    obj = cache_object("llama", "v2", V2, {"url": src_url}, root="/models", nodeSelector={"gpu": "a100"},
                       workloads=[{"kind": "Deployment", "namespace": "serving", "name": "llm",
                                   "annotation": ANNOTATION, "env": {"name": "MODEL_PATH", "container": "server"}}],
                       readiness=readiness, **FAST)
    obj["status"] = {"nodes": {n: {"state": "Verified", "version": "v1", "current": "v1"} for n in node_names}}
    server.add_all([node(n) for n in node_names] + [obj, deployment("v1")])
    return roots


def deployment_patches(server) -> list:
    return [p for p in server.patches if p[0] == "deployments"]


def cache_status(server) -> dict:
    return server.objects("kubegpu.io/v1alpha1", "modelcaches")[0]["status"]


def test_deployment_patched_only_after_both_nodes_verify(cluster, tmp_path):
    server, edge = cluster
    with SourceServer(V1) as src:
        roots = setup(server, tmp_path, src)
        fast_agent = Agent(edge, "gpu-a", str(roots["gpu-a"]), log=lambda _: None)
        slow_agent = Agent(edge, "gpu-b", str(roots["gpu-b"]), log=lambda _: None)
        ctl = Controller(edge, log=lambda _: None)
        assert fast_agent.turn() == {"llama": "Verified"}
        ctl.turn()
        assert deployment_patches(server) == []
        assert cache_status(server)["copies"] == {"available": 1, "total": 2, "failed": 0}
        src.rate = 400_000  # the second node is slow: ~2 s for its 650 kB
        worker = threading.Thread(target=slow_agent.turn)
        worker.start()
        deadline = time.monotonic() + 30
        while cache_status(server)["nodes"]["gpu-b"].get("state") != "Downloading" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert cache_status(server)["nodes"]["gpu-b"]["state"] == "Downloading"
        ctl.turn()
        assert deployment_patches(server) == []  # gpu-b still downloading: the old version keeps serving
        assert os.readlink(roots["gpu-b"] / "llama" / "current") == "v1"
        worker.join(60)
        assert slow_agent.outcomes == {"llama": "Verified"}
        ctl.turn()
    patches = deployment_patches(server)
    assert len(patches) == 1
    dep = server.objects("apps/v1", "deployments")[0]
    template = dep["spec"]["template"]
    assert template["metadata"]["annotations"][ANNOTATION] == "v2"
    assert template["spec"]["containers"][0]["env"] == [{"name": "MODEL_PATH", "value": "/models/llama/v2"}]
    assert template["spec"]["containers"][0]["image"] == "vllm:0.6"
    assert cache_status(server)["copies"] == {"available": 2, "total": 2, "failed": 0}
    assert cache_status(server)["workloads"][0]["version"] == "v2"
    for r in roots.values():
        assert store.current_version(r, "llama") == "v2"
    node_b = server.store[next(k for k in server.store if k.plural == "nodes" and k.name == "gpu-b")]
    assert node_b["metadata"]["annotations"]["models.kubegpu.io/llama"] == "v2"


def test_n_of_m_patches_after_n_nodes(cluster, tmp_path):
    server, edge = cluster
    with SourceServer(V1) as src:
        roots = setup(server, tmp_path, src, min_nodes=2, node_names=("gpu-a", "gpu-b", "gpu-c"))
        ctl = Controller(edge, log=lambda _: None)
        Agent(edge, "gpu-a", str(roots["gpu-a"]), log=lambda _: None).turn()
        ctl.turn()
        assert deployment_patches(server) == []
        Agent(edge, "gpu-b", str(roots["gpu-b"]), log=lambda _: None).turn()
        ctl.turn()
        assert len(deployment_patches(server)) == 1  # 2 of 3: gpu-c has not started yet
        assert store.current_version(roots["gpu-c"], "llama") == "v1"
        assert cache_status(server)["copies"] == {"available": 2, "total": 3, "failed": 0}
        ctl.turn()
        assert len(deployment_patches(server)) == 1  # already on v2: not patched again


def test_new_node_is_tainted_until_its_copy_verifies(cluster, tmp_path):
    server, edge = cluster
    with SourceServer(V2) as src:
        roots = setup(server, tmp_path, src)
        server.add(node("gpu-new"))
        ctl = Controller(edge, log=lambda _: None)
        ctl.turn()
        new = server.objects("v1", "nodes")
        taints = {n["metadata"]["name"]: n.get("spec", {}).get("taints") for n in new}
        assert taints["gpu-new"] == [{"key": "kubegpu.io/model-not-ready", "value": "llama", "effect": "NoSchedule"}]
        assert taints["gpu-a"] is None  # holds v1: keeps serving while it pulls v2
        agent = Agent(edge, "gpu-new", str(tmp_path / "gpu-new"), log=lambda _: None)
        assert agent.turn() == {"llama": "Verified"}
        node_new = [n for n in server.objects("v1", "nodes") if n["metadata"]["name"] == "gpu-new"][0]
        assert not node_new.get("spec", {}).get("taints")
    assert roots  # the v1 nodes were untouched by the new node's agent


def test_fan_out_limit_holds_a_node_back(cluster, tmp_path):
    server, edge = cluster
    with SourceServer(V2) as src:
        roots = setup(server, tmp_path, src)
        body = server.objects("kubegpu.io/v1alpha1", "modelcaches")[0]
        body["spec"]["fanOut"] = {"maxNodesPulling": 1}
        from kubegpu.modelcache.agent import now_rfc3339

        body["status"]["nodes"]["gpu-a"] = {"state": "Downloading", "version": "v2", "updatedAt": now_rfc3339()}
        agent = Agent(edge, "gpu-b", str(roots["gpu-b"]), log=lambda _: None)
        assert agent.turn() == {"llama": "Pending"}
        assert src.log == []
        assert cache_status(server)["nodes"]["gpu-b"]["state"] == "Pending"


def test_mixed_versions_beyond_bound_is_a_finding(cluster, tmp_path):
    server, edge = cluster
    with SourceServer(V2) as src:
        setup(server, tmp_path, src)
        body = server.objects("kubegpu.io/v1alpha1", "modelcaches")[0]
        body["spec"]["readiness"] = {"maxMixedSeconds": 60}
        body["status"]["workloads"] = [{"kind": "Deployment", "namespace": "serving", "name": "llm",
                                        "mixedSince": "2020-01-01T00:00:00Z"}]
        dep = server.objects("apps/v1", "deployments")[0]
        dep["status"]["updatedReplicas"] = 1
        findings = Controller(edge, log=lambda _: None).turn()
    assert len(findings) == 1 and "1 replicas on an older version" in findings[0]
    assert cache_status(server)["findings"] == findings





def test_agent_and_controller_commands_once(cluster, tmp_path, run_kubegpu):
    server, _ = cluster
    kubeconfig = str(tmp_path / "kubeconfig")
    with SourceServer(V1) as src:
        roots = setup(server, tmp_path, src, min_nodes=1)
        done = run_kubegpu("models", "controller", "--once", "--kubeconfig", kubeconfig)
        assert done.returncode == 0, done.stderr
        assert deployment_patches(server) == []
        env = dict(os.environ, NODE_NAME="gpu-a")
        done = run_kubegpu("models", "agent", "--once", "--root", str(roots["gpu-a"]), "--kubeconfig", kubeconfig,
                           env=env)
        assert done.returncode == 0, done.stderr
        assert "llama" in done.stderr and "v2 verified" in done.stderr
        done = run_kubegpu("models", "controller", "--once", "--kubeconfig", kubeconfig)
        assert done.returncode == 0, done.stderr
        assert len(deployment_patches(server)) == 1 and "patched Deployment/serving/llm" in done.stderr


def test_agent_removes_an_old_version_when_its_last_pod_is_gone(cluster, tmp_path):
    server, edge = cluster
    with SourceServer(V1) as src:
        roots = setup(server, tmp_path, src, node_names=("gpu-a",))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm-1", "namespace": "serving",
                                                               "annotations": {ANNOTATION: "v1"}},
               "spec": {"nodeName": "gpu-a", "containers": [{"name": "server"}]}, "status": {"phase": "Running"}}
        key = server.add(pod)
        agent = Agent(edge, "gpu-a", str(roots["gpu-a"]), log=lambda _: None)
        assert agent.turn() == {"llama": "Verified"}
        assert store.versions_on_disk(roots["gpu-a"], "llama") == ["v1", "v2"]  # llm-1 still serves v1
        agent.turn()
        assert store.versions_on_disk(roots["gpu-a"], "llama") == ["v1", "v2"]
        del server.store[key]  # the rolling update replaced it
        agent.turn()
    assert store.versions_on_disk(roots["gpu-a"], "llama") == ["v2"]
