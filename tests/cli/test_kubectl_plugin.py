"""Wire compatibility with the real kubectl binary, and kubegpu as the `kubectl gpu` plugin.

kubectl talks to the test API server exactly as to a cluster (discovery, lists, chunked lists),
which proves the server speaks the real wire format; its output then loads through kubegpu.
kubectl sends credentials only over TLS, so these tests use the https server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from apiserver.fixtures import SHARED_K8S, renamed_copies, shared_objects

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="the kubectl binary is not on PATH on this machine")
NODE_FIXTURE = SHARED_K8S / "node_list_gpu_rke2_vgpu_a16.json"


def kubectl(*args: str, home: Path, path: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(home)  # discovery cache and plugin lookups stay in the test's folder
    if path is not None:
        env["PATH"] = path
    return subprocess.run([KUBECTL or "kubectl", *args], capture_output=True, text=True, env=env, timeout=120)


def gpu_pod(name: str, namespace: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "vllm/vllm-openai:v0.9.1",
                                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}


@pytest.fixture
def cluster(tls_apiserver, tmp_path):
    objects = shared_objects()
    node = next((o for o in objects if o["kind"] == "Node"), None)
    if node is None:
        pytest.skip("shared k8s fixtures (../shared/fixtures/k8s beside the project) are not available")
    nodes = renamed_copies(node, 3)
    pods = [gpu_pod(f"vllm-{i}", ns, nodes[i % 3]["metadata"]["name"])
            for i, ns in enumerate(["serving", "serving", "ml", "ml", "ml"])]
    tls_apiserver.add_all(objects + nodes + pods)
    return tls_apiserver, tls_apiserver.kubeconfig(tmp_path / "kubeconfig")


@needs_kubectl
def test_kubectl_get_nodes_loads_through_kubegpu(cluster, tmp_path, run_kubegpu):
    server, kubeconfig = cluster
    result = kubectl("--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    dump = tmp_path / "nodes.json"
    dump.write_text(result.stdout)
    listed = json.loads(result.stdout)
    assert listed["kind"] == "List"
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == \
        sorted(o["metadata"]["name"] for o in server.objects("v1", "nodes"))

    status = run_kubegpu("status", "--snapshot", str(dump), "-o", "json")
    assert status.returncode == 0, status.stderr
    live = run_kubegpu("status", "--kubeconfig", str(kubeconfig), "-o", "json")
    assert live.returncode == 0, live.stderr
    by_name = {n["name"]: n["gpus"]["total"] for n in json.loads(status.stdout)["nodes"]}
    assert by_name == {n["name"]: n["gpus"]["total"] for n in json.loads(live.stdout)["nodes"]}
    assert set(by_name.values()) == {1}  # the A16 vGPU node advertises one GPU


@needs_kubectl
def test_kubectl_chunked_pod_list_pages_through_the_server(cluster, tmp_path, run_kubegpu):
    server, kubeconfig = cluster
    result = kubectl("--kubeconfig", str(kubeconfig), "get", "pods", "-A", "--chunk-size=2", "-o", "json",
                     home=tmp_path)
    assert result.returncode == 0, result.stderr
    pod_requests = server.paths("/api/v1/pods")
    assert [r.query.get("limit") for r in pod_requests] == ["2", "2", "2"]
    assert "continue" not in pod_requests[0].query and all(r.query.get("continue") for r in pod_requests[1:])
    assert sorted(i["metadata"]["name"] for i in json.loads(result.stdout)["items"]) == \
        [f"vllm-{i}" for i in range(5)]

    nodes = kubectl("--kubeconfig", str(kubeconfig), "get", "nodes", "-o", "json", home=tmp_path)
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "pods.json").write_text(result.stdout)
    (tmp_path / "dump" / "nodes.json").write_text(nodes.stdout)
    status = run_kubegpu("status", "--snapshot", str(tmp_path / "dump"), "-o", "json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["totals"]["gpus"] == {"total": 4, "allocated": 3, "free": 1}  # nori + 3 copies
    assert sum(n["pods"] for n in report["nodes"]) == 5


@needs_kubectl
def test_kubectl_sees_the_servers_errors(cluster, tmp_path):
    server, _ = cluster
    bad = server.kubeconfig(tmp_path / "bad-kubeconfig", token="expired")
    result = kubectl("--kubeconfig", str(bad), "get", "nodes", home=tmp_path)
    assert result.returncode != 0
    assert "Unauthorized" in result.stderr or "provide credentials" in result.stderr
    server.forbid("list", "pods")
    good = server.kubeconfig(tmp_path / "kubeconfig")
    result = kubectl("--kubeconfig", str(good), "get", "pods", "-A", home=tmp_path)
    assert result.returncode != 0
    assert 'pods is forbidden: User "kubegpu-test" cannot list resource "pods"' in result.stderr


def plugin_path() -> str | None:
    """PATH with the folder of the installed `kubectl-gpu` console script in front."""
    folder = Path(sysconfig.get_path("scripts"))
    if not (folder / "kubectl-gpu").exists():
        found = shutil.which("kubectl-gpu")
        if found is None:
            return None
        folder = Path(found).parent
    return os.pathsep.join([str(folder), os.environ.get("PATH", "")])


@needs_kubectl
def test_kubectl_gpu_status_runs_the_plugin(tmp_path):
    path = plugin_path()
    if path is None:
        pytest.skip("the kubectl-gpu console script is not installed (pip install -e .)")
    if not NODE_FIXTURE.exists():
        pytest.skip("shared k8s fixtures (../shared/fixtures/k8s beside the project) are not available")
    result = kubectl("gpu", "status", "--snapshot", str(NODE_FIXTURE), "-o", "json", home=tmp_path, path=path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [n["name"] for n in report["nodes"]] == ["nori"]
    assert report["totals"]["gpus"]["total"] == 1

    usage = kubectl("gpu", "--help", home=tmp_path, path=path)
    assert usage.returncode == 0
    assert "kubectl gpu" in usage.stdout


@needs_kubectl
def test_kubectl_gpu_reads_the_live_cluster(cluster, tmp_path):
    path = plugin_path()
    if path is None:
        pytest.skip("the kubectl-gpu console script is not installed (pip install -e .)")
    _, kubeconfig = cluster
    result = kubectl("gpu", "status", "--kubeconfig", str(kubeconfig), "-o", "json", home=tmp_path, path=path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["totals"]["gpus"]["allocated"] == 3
