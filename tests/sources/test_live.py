"""The live source against a real HTTP API server (tests/apiserver): what is listed, pagination,
410 restarts, CRDs, and every failure as one line (401, 403, unreachable, TLS, timeouts)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import msgspec
import pytest
import yaml

from apiserver.fixtures import demo_objects, renamed_copies, shared_objects
from apiserver.resources import ResourceType
from apiserver.wire import Reply, status_reply
from kubegpu.errors import SourceError
from kubegpu.sources.documents import Documents, load_cluster
from kubegpu.sources.live import DEFAULT_KINDS, read_live, with_type_meta
from kubegpu.status import cluster_status

REPO = Path(__file__).resolve().parents[2]


def gpu_node() -> dict:
    node = next((o for o in shared_objects() if o["kind"] == "Node"), None)
    if node is None:
        pytest.skip("shared k8s fixtures (../shared/fixtures/k8s beside the project) are not available")
    return node


def pod(name: str, namespace: str = "ml", node: str | None = None, gpus: int = 1) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                  "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def served(apiserver, objects: list[dict], tmp_path: Path, **kubeconfig_args) -> Path:
    apiserver.add_all(objects)
    return apiserver.kubeconfig(tmp_path / "kubeconfig", **kubeconfig_args)


def decoded(docs: Documents) -> list[dict]:
    return [json.loads(bytes(d)) for d in docs.items]


def without_type_meta(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def test_reads_every_object_with_apiversion_and_kind_set(apiserver, tmp_path):
    objects = shared_objects() + [pod("train-0", node=gpu_node()["metadata"]["name"]), pod("train-1")]
    kubeconfig = served(apiserver, objects, tmp_path)
    docs = read_live(kubeconfig=str(kubeconfig), context=None)

    got = decoded(docs)
    assert sorted((o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in got) == \
        sorted((o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objects)
    stored = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    for obj in got:
        original = stored[(obj["kind"], obj["metadata"]["name"])]
        assert without_type_meta(obj)["spec" if "spec" in obj else "metadata"] == \
            (original.get("spec") if "spec" in obj else {**original["metadata"], **obj["metadata"]})
    assert docs.server_version == "v1.33.2"
    assert docs.source == "live:fake"
    assert docs.captured_at and docs.captured_at.endswith("Z")
    assert set(docs.origins) >= {f"{apiserver.url}/api/v1/nodes", f"{apiserver.url}/api/v1/pods"}

    state = load_cluster(docs)
    assert [n.name for n in state.nodes] == [gpu_node()["metadata"]["name"]]
    assert {p.key for p in state.pods} == {"ml/train-0", "ml/train-1"}
    assert state.server_version == "v1.33.2"


def test_only_get_requests_and_only_the_documented_paths(apiserver, tmp_path):
    kubeconfig = served(apiserver, shared_objects(), tmp_path)
    read_live(kubeconfig=str(kubeconfig), context=None)
    assert {r.method for r in apiserver.requests} == {"GET"}
    listed = {r.path for r in apiserver.requests} - {"/version", "/apis"}
    expected = {k.path(k.versions[0]) for k in DEFAULT_KINDS if not k.optional}
    assert listed == expected
    assert not any("secrets" in r.path for r in apiserver.requests)


def test_pagination_follows_continue_tokens(apiserver, tmp_path):
    nodes = renamed_copies(gpu_node(), 11)
    pods = [pod(f"worker-{i:02d}", node=nodes[i % 11]["metadata"]["name"]) for i in range(23)]
    kubeconfig = served(apiserver, nodes + pods, tmp_path)
    docs = read_live(kubeconfig=str(kubeconfig), context=None, page_size=4)

    node_requests = apiserver.paths("/api/v1/nodes")
    assert len(node_requests) == 3  # 4 + 4 + 3
    assert all(r.query["limit"] == "4" for r in node_requests)
    assert "continue" not in node_requests[0].query
    assert all(r.query.get("continue") for r in node_requests[1:])
    assert len(apiserver.paths("/api/v1/pods")) == 6  # 23 pods in pages of 4

    names = [o["metadata"]["name"] for o in decoded(docs)]
    assert len(names) == len(set(names)) == 34
    state = load_cluster(docs)
    assert len(state.nodes) == 11 and len(state.pods) == 23


def test_progress_reports_running_counts(apiserver, tmp_path):
    kubeconfig = served(apiserver, renamed_copies(gpu_node(), 5), tmp_path)
    seen: list[tuple[str, int]] = []
    read_live(kubeconfig=str(kubeconfig), context=None, page_size=2, progress=lambda k, n: seen.append((k, n)))
    assert [n for k, n in seen if k == "nodes"] == [2, 4, 5]
    assert ("apps deployments", 0) in seen


def compact_at_the_first_continue(apiserver) -> None:
    """The server compacts its history as the first node list continues: that token expires (410)."""
    expired = []

    def compact_once(request):
        if request.path == "/api/v1/nodes" and request.query.get("continue") and not expired:
            expired.append(request.query["continue"])
            apiserver.expire_continue_tokens()
        return None

    apiserver.faults.append(compact_once)


def test_expired_continue_token_restarts_the_list_once(apiserver, tmp_path):
    kubeconfig = served(apiserver, renamed_copies(gpu_node(), 7), tmp_path)
    compact_at_the_first_continue(apiserver)
    docs = read_live(kubeconfig=str(kubeconfig), context=None, page_size=3)
    statuses = [(bool(r.query.get("continue")), r.status) for r in apiserver.paths("/api/v1/nodes")]
    assert statuses == [(False, 200), (True, 410), (False, 200), (True, 200), (True, 200)]
    assert sorted(o["metadata"]["name"] for o in decoded(docs)) == [f"nori-{i:03d}" for i in range(7)]


def test_continue_token_expiring_again_is_an_error(apiserver, tmp_path):
    kubeconfig = served(apiserver, renamed_copies(gpu_node(), 7), tmp_path)

    def always_compact(request):
        if request.query.get("continue"):
            apiserver.expire_continue_tokens()
        return None

    apiserver.faults.append(always_compact)
    with pytest.raises(SourceError) as err:
        read_live(kubeconfig=str(kubeconfig), context=None, page_size=3)
    assert "listing nodes: the continue token expired again after a restart (410 Gone)" in str(err.value)
    assert len([r for r in apiserver.paths("/api/v1/nodes") if r.status == 410]) == 2


def test_crds_are_listed_when_served_and_skipped_when_not(apiserver, tmp_path):
    podgroup = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": "llm-train", "namespace": "ml"},
                "spec": {"minMember": 4, "scheduleTimeoutSeconds": 600}}
    nodepool = {"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": {"name": "gpu"},
                "spec": {"template": {"spec": {"requirements": [
                    {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}]}}}}
    apiserver.register(ResourceType("karpenter.sh", "v1beta1", "nodepools", "NodePool", False, custom=True))
    # the group is served, but not this resource: a 404 that must be skipped silently
    apiserver.register(ResourceType("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor", True,
                                    custom=True))
    kubeconfig = served(apiserver, [podgroup, nodepool], tmp_path)
    docs = read_live(kubeconfig=str(kubeconfig), context=None)

    got = {(o["apiVersion"], o["kind"]): o for o in decoded(docs)}
    assert got[("scheduling.x-k8s.io/v1alpha1", "PodGroup")]["spec"]["minMember"] == 4
    assert ("karpenter.sh/v1beta1", "NodePool") in got  # the server's version, though kubegpu prefers v1
    assert [r.status for r in apiserver.paths("/apis/monitoring.coreos.com/v1/prometheusrules")] == [404]
    assert not apiserver.paths("/apis/scheduling.volcano.sh/v1beta1/podgroups")  # group not served: not asked
    state = load_cluster(docs)
    assert [pg.name for pg in state.of_kind("PodGroup")] == ["llm-train"]


@pytest.mark.parametrize("variant", ["pitfalls", "clean"])
def test_demo_cluster_reads_back_identically(apiserver, tmp_path, variant):
    objects = demo_objects(variant)
    cluster_objects = [o for o in objects if o["kind"] != "SnapshotInfo"]
    # everything the demo exercises (every audit check fires on it) is something the live source lists
    listed = {(k.group, k.kind) for k in DEFAULT_KINDS}
    assert {(o["apiVersion"].rpartition("/")[0], o["kind"]) for o in cluster_objects} <= listed
    kubeconfig = served(apiserver, cluster_objects, tmp_path)
    live = load_cluster(read_live(kubeconfig=str(kubeconfig), context=None, page_size=50))
    direct = Documents(source="live:fake")
    for obj in cluster_objects:
        direct.add(obj, "demo")
    offline = load_cluster(direct)
    offline.server_version = "v1.33.2"
    live_report, offline_report = cluster_status(live), cluster_status(offline)
    # the API server lists in name order, the demo in build order: compare node by node
    assert sorted(live_report.nodes, key=lambda r: r.name) == sorted(offline_report.nodes, key=lambda r: r.name)
    assert live_report.totals == offline_report.totals
    assert sorted(o.ref for o in live.objects) == sorted(o.ref for o in offline.objects)


def test_rejected_credentials_are_one_line_exit_2(apiserver, tmp_path, run_kubegpu):
    kubeconfig = served(apiserver, shared_objects(), tmp_path, token="expired-token")
    result = run_kubegpu("status", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: credentials rejected (401 Unauthorized) for context fake: expired or invalid token; run your "
        "login/refresh (e.g. `kubectl get nodes`) and retry"]


def test_rbac_refusal_names_the_verb_resource_user_and_fix(apiserver, tmp_path, run_kubegpu):
    apiserver.forbid("list", "pods")
    kubeconfig = served(apiserver, shared_objects(), tmp_path)
    result = run_kubegpu("status", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: RBAC forbids list pods at cluster scope for user kubegpu-test (403 Forbidden): "
        "apply deploy/rbac/kubegpu-readonly.yaml"]


def test_rbac_refusal_of_a_grouped_resource(apiserver, tmp_path):
    apiserver.forbid("list", "poddisruptionbudgets", "policy")
    kubeconfig = served(apiserver, [], tmp_path)
    with pytest.raises(SourceError, match="RBAC forbids list policy poddisruptionbudgets at cluster scope"):
        read_live(kubeconfig=str(kubeconfig), context=None)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_cluster_is_one_line_exit_2(tmp_path, run_kubegpu):
    url = f"http://127.0.0.1:{closed_port()}"
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": url}}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "c", "user": "u"}}], "current-context": "gone"}))
    result = run_kubegpu("status", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: cannot reach {url}: connection refused"]
    assert "Traceback" not in result.stderr


def test_slow_server_times_out_with_the_setting_named(apiserver, tmp_path, monkeypatch):
    kubeconfig = served(apiserver, [], tmp_path)
    apiserver.faults.append(lambda r: time.sleep(1.5) if r.path == "/api/v1/pods" else None)
    monkeypatch.setenv("KUBEGPU_TIMEOUT", "0.3")
    with pytest.raises(SourceError) as err:
        read_live(kubeconfig=str(kubeconfig), context=None)
    assert str(err.value) == (f"{apiserver.url} did not answer GET /api/v1/pods within 0.3 s "
                              "(set KUBEGPU_TIMEOUT=SECONDS to wait longer)")


def test_throttling_with_retry_after_is_retried(apiserver, tmp_path):
    kubeconfig = served(apiserver, [pod("a")], tmp_path)
    throttled = []

    def throttle_once(request):
        if request.path == "/api/v1/pods" and not throttled:
            throttled.append(request)
            reply = status_reply(429, "TooManyRequests", "too many requests")
            reply.headers["Retry-After"] = "0"
            return reply
        return None

    apiserver.faults.append(throttle_once)
    docs = read_live(kubeconfig=str(kubeconfig), context=None)
    assert [r.status for r in apiserver.paths("/api/v1/pods")] == [429, 200]
    assert [o["metadata"]["name"] for o in decoded(docs)] == ["a"]


@pytest.mark.parametrize("reply, message", [
    (status_reply(500, "InternalError", "etcdserver: request timed out"),
     "GET {url}/api/v1/pods: 500 InternalError: etcdserver: request timed out"),
    (Reply(502, b"<html>Bad Gateway</html>", {"Content-Type": "text/html"}),
     "GET {url}/api/v1/pods: 502 Error: <html>Bad Gateway</html>"),
    (Reply(200, b"<html>login</html>", {"Content-Type": "text/html"}),
     "{url}/api/v1/pods: not a Kubernetes List"),
])
def test_server_errors_are_one_line(apiserver, tmp_path, reply, message):
    kubeconfig = served(apiserver, [], tmp_path)
    apiserver.faults.append(lambda r: reply if r.path == "/api/v1/pods" else None)
    with pytest.raises(SourceError) as err:
        read_live(kubeconfig=str(kubeconfig), context=None)
    assert message.format(url=apiserver.url) in str(err.value)
    assert "\n" not in str(err.value)


def test_not_a_kubernetes_server(apiserver, tmp_path):
    kubeconfig = served(apiserver, [], tmp_path)
    apiserver.faults.append(lambda r: status_reply(404, "NotFound", "page not found") if r.path == "/version"
                            else None)
    with pytest.raises(SourceError, match=r"/version: 404 Not Found; is http://127\.0\.0\.1:\d+ a Kubernetes API"):
        read_live(kubeconfig=str(kubeconfig), context=None)


def test_https_with_certificate_authority_data(tls_apiserver, tmp_path):
    kubeconfig = served(tls_apiserver, [pod("a")], tmp_path)
    docs = read_live(kubeconfig=str(kubeconfig), context=None)
    assert tls_apiserver.url.startswith("https://")
    assert [o["metadata"]["name"] for o in decoded(docs)] == ["a"]


def test_https_with_the_wrong_certificate_authority(tls_apiserver, tmp_path):
    from apiserver.certs import make_server_certs

    other_ca = make_server_certs(tmp_path / "other", ca_name="someone-else").ca_data
    kubeconfig = served(tls_apiserver, [], tmp_path, ca_data=other_ca)
    with pytest.raises(SourceError) as err:
        read_live(kubeconfig=str(kubeconfig), context=None)
    assert str(err.value).startswith(f"TLS verification of {tls_apiserver.url} failed: ")
    assert "check certificate-authority(-data) of cluster 'fake'" in str(err.value)


def test_missing_certificate_authority_file(tls_apiserver, tmp_path):
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": tls_apiserver.url, "certificate-authority": "nope.crt"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c"}}], "current-context": "x"}))
    with pytest.raises(SourceError, match=r"context x \(.*kc\.yaml\): certificate-authority .*nope\.crt not found"):
        read_live(kubeconfig=str(kubeconfig), context=None)


@pytest.mark.parametrize("item, expected", [
    (b'{"metadata":{"name":"a"}}', b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}'),
    (b'{ }', b'{"apiVersion":"v1","kind":"Pod" }'),
    (b'{"kind":"Pod","metadata":{}}', b'{"apiVersion":"v1","kind":"Pod","metadata":{}}'),
    (b'{"apiVersion":"x/v1","kind":"Y"}', b'{"apiVersion":"x/v1","kind":"Y"}'),
])
def test_type_meta_is_spliced_in_and_nothing_else_changes(item, expected):
    out = bytes(with_type_meta(msgspec.Raw(item), "v1", "Pod"))
    assert out == expected
    assert json.loads(out)  # still JSON


def test_readonly_role_covers_every_listed_resource_and_writes_nothing():
    docs = list(yaml.safe_load_all((REPO / "deploy/rbac/kubegpu-readonly.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    for kind in DEFAULT_KINDS:
        assert (kind.group, kind.plural, "list") in granted, kind
        assert (kind.group, kind.plural, "get") in granted, kind
    assert {v for _, _, v in granted} == {"get", "list"}
    assert not any(r == "secrets" or r == "*" for _, r, _ in granted)
    listed = {(k.group, k.plural) for k in DEFAULT_KINDS}
    assert {(g, r) for g, r, _ in granted} == listed  # nothing beyond what kubegpu reads
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_defrag_apply_role_can_only_evict_and_cordon():
    docs = list(yaml.safe_load_all((REPO / "deploy/rbac/kubegpu-defrag-apply.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert granted == {("", "pods/eviction", "create"), ("", "nodes", "patch")}
