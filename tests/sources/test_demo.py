"""The embedded demo cluster: arithmetic of the seed scenario, object-graph integrity, the
pitfall signals of each variant, and wire-format validity (lightkube models, kubectl)."""

from __future__ import annotations

import copy
import json
import math
import shutil
import subprocess
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from kubegpu.errors import UsageError
from kubegpu.model.quantity import resource_amount
from kubegpu.sources.demo import VARIANTS, demo_objects
from kubegpu.sources.demo.scenario import PENDING_PODS, gpu_pods_per_node

GPU = "nvidia.com/gpu"
CLUSTER_SCOPED = {"Node", "Namespace", "PersistentVolume", "StorageClass", "PriorityClass",
                  "LocalModelCache", "LocalModelNodeGroup", "LocalModelNode", "SnapshotInfo"}


@pytest.fixture(scope="module", params=VARIANTS)
def cluster(request) -> tuple[str, list[dict]]:
    return request.param, demo_objects(request.param)


@pytest.fixture(scope="module")
def pitfalls() -> list[dict]:
    return demo_objects("pitfalls")


@pytest.fixture(scope="module")
def clean() -> list[dict]:
    return demo_objects("clean")


def of_kind(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["kind"] == kind]


def named(objs: list[dict], kind: str, name: str) -> dict:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def pod_request(pod: dict, resource: str) -> int:
    """Effective request: max(sum of app containers, largest init container), upstream style."""
    def req(c: dict) -> int:
        value = c.get("resources", {}).get("requests", {}).get(resource)
        return resource_amount(resource, value) if value is not None else 0
    app = sum(req(c) for c in pod["spec"]["containers"])
    return max([app, *(req(c) for c in pod["spec"].get("initContainers", []))])


def holds_resources(pod: dict) -> bool:
    return bool(pod["spec"].get("nodeName")) and pod["status"]["phase"] not in ("Succeeded", "Failed")


def gpu_used(objs: list[dict]) -> dict[str, int]:
    used: dict[str, int] = defaultdict(int)
    for pod in of_kind(objs, "Pod"):
        if holds_resources(pod):
            used[pod["spec"]["nodeName"]] += pod_request(pod, GPU)
    return used


def gpu_nodes(objs: list[dict]) -> dict[str, int]:
    return {n["metadata"]["name"]: int(n["status"]["allocatable"][GPU])
            for n in of_kind(objs, "Node") if GPU in n["status"]["allocatable"]}


def unscheduled(objs: list[dict]) -> list[dict]:
    return [p for p in of_kind(objs, "Pod") if not p["spec"].get("nodeName")]


def is_ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


# --- public API -------------------------------------------------------------------------------

def test_snapshot_info_comes_first_and_records_the_server_version(cluster):
    variant, objs = cluster
    assert objs[0] == {"apiVersion": "kubegpu.io/v1", "kind": "SnapshotInfo", "metadata": {"name": "demo"},
                       "serverVersion": {"major": "1", "minor": "35", "gitVersion": "v1.35.2"},
                       "capturedAt": "2026-11-30T12:00:00Z", "source": f"demo:{variant}"}


def test_unknown_variant_is_a_usage_error_naming_the_valid_ones():
    with pytest.raises(UsageError) as err:
        demo_objects("dirty")
    assert "pitfalls" in str(err.value) and "clean" in str(err.value) and "dirty" in str(err.value)


def test_two_calls_give_identical_objects_and_fresh_dicts():
    first, second = demo_objects("pitfalls"), demo_objects("pitfalls")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    first[1]["metadata"]["name"] = "mutated"
    assert demo_objects("pitfalls")[1]["metadata"]["name"] != "mutated"


# --- object graph integrity -------------------------------------------------------------------

def test_every_object_has_identity_and_unique_uid(cluster):
    _, objs = cluster
    uids = set()
    for o in objs:
        assert o["apiVersion"] and o["kind"] and o["metadata"]["name"], o
        if o["kind"] == "SnapshotInfo":
            continue
        assert ("namespace" in o["metadata"]) == (o["kind"] not in CLUSTER_SCOPED), o["metadata"]
        assert o["metadata"]["uid"] not in uids
        uids.add(o["metadata"]["uid"])
        assert o["metadata"]["resourceVersion"].isdigit()
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs]
    assert len(keys) == len(set(keys))


def test_every_owner_reference_points_to_an_existing_controller(cluster):
    _, objs = cluster
    by_uid = {o["metadata"].get("uid"): o for o in objs}
    for o in objs:
        refs = o["metadata"].get("ownerReferences", [])
        assert sum(r.get("controller", False) for r in refs) <= 1
        for ref in refs:
            owner = by_uid[ref["uid"]]
            assert (owner["kind"], owner["metadata"]["name"], owner["apiVersion"]) == \
                   (ref["kind"], ref["name"], ref["apiVersion"])
            if "namespace" in owner["metadata"]:
                assert owner["metadata"]["namespace"] == o["metadata"]["namespace"]


def test_events_and_pods_refer_to_existing_objects(cluster):
    _, objs = cluster
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in of_kind(objs, "Pod")}
    nodes = {n["metadata"]["name"] for n in of_kind(objs, "Node")}
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in of_kind(objs, "PersistentVolumeClaim")}
    namespaces = {n["metadata"]["name"] for n in of_kind(objs, "Namespace")}
    classes = {c["metadata"]["name"]: c for c in of_kind(objs, "PriorityClass")}
    for ev in of_kind(objs, "Event"):
        ref = ev["involvedObject"]
        assert pods[(ref["namespace"], ref["name"])]["metadata"]["uid"] == ref["uid"]
    for (ns, _), pod in pods.items():
        assert ns in namespaces
        assert pod["spec"].get("nodeName", next(iter(nodes))) in nodes
        for vol in pod["spec"]["volumes"]:
            if "persistentVolumeClaim" in vol:
                assert (ns, vol["persistentVolumeClaim"]["claimName"]) in claims
        pc = classes[pod["spec"]["priorityClassName"]] if "priorityClassName" in pod["spec"] else None
        assert pod["spec"]["priority"] == (pc["value"] if pc else 0)
        assert pod["spec"]["preemptionPolicy"] == (pc["preemptionPolicy"] if pc else "PreemptLowerPriority")


def test_pdb_status_follows_the_disruption_controller(cluster):
    _, objs = cluster
    pods = of_kind(objs, "Pod")
    for pdb in of_kind(objs, "PodDisruptionBudget"):
        sel, ns, spec = pdb["spec"]["selector"]["matchLabels"], pdb["metadata"]["namespace"], pdb["spec"]
        match = [p for p in pods if p["metadata"]["namespace"] == ns
                 and sel.items() <= p["metadata"].get("labels", {}).items()]
        assert match, pdb["metadata"]["name"]
        healthy = sum(is_ready(p) for p in match)
        if "minAvailable" in spec:
            assert isinstance(spec["minAvailable"], int)
            expected, desired = len(match), spec["minAvailable"]
        else:  # every maxUnavailable PDB here covers the pods of one scalable controller
            expected = pdb["status"]["expectedPods"]
            desired = expected - spec["maxUnavailable"]
        st = pdb["status"]
        assert (st["expectedPods"], st["desiredHealthy"], st["currentHealthy"]) == (expected, desired, healthy)
        assert st["disruptionsAllowed"] == max(0, healthy - desired)
        assert st["conditions"][0]["status"] == ("True" if st["disruptionsAllowed"] else "False")


def test_controller_status_counts_match_their_pods(cluster):
    _, objs = cluster
    owned = defaultdict(list)
    for p in of_kind(objs, "Pod"):
        for ref in p["metadata"].get("ownerReferences", []):
            owned[ref["uid"]].append(p)
    for rs in of_kind(objs, "ReplicaSet"):
        assert rs["status"]["replicas"] == rs["spec"]["replicas"] == len(owned[rs["metadata"]["uid"]])
    for dep in of_kind(objs, "Deployment"):
        assert dep["status"]["replicas"] == dep["spec"]["replicas"]
    for ds in of_kind(objs, "DaemonSet"):
        assert ds["status"]["desiredNumberScheduled"] == len(owned[ds["metadata"]["uid"]]) > 0
    for job in of_kind(objs, "Job"):
        active = [p for p in owned[job["metadata"]["uid"]] if p["status"]["phase"] not in ("Succeeded", "Failed")]
        assert job["status"].get("active", 0) == len(active)


# --- the seed scenario's arithmetic -----------------------------------------------------------

def test_forty_nodes_ten_with_eight_a100s(cluster):
    _, objs = cluster
    nodes = of_kind(objs, "Node")
    gpus = gpu_nodes(objs)
    assert len(nodes) == 40 and len(gpus) == 10 and sum(gpus.values()) == 80
    for node in nodes:
        name, labels = node["metadata"]["name"], node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == name
        if name in gpus:
            assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
            assert (labels["nvidia.com/gpu.count"], labels["nvidia.com/gpu.memory"]) == ("8", "81920")
            assert node["spec"]["taints"] == [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
            assert labels["pool"] in ("inference", "training")
        else:
            assert "taints" not in node["spec"]
    assert len({n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes}) == 3


def test_pitfalls_allocate_70_of_80_gpus_with_one_free_on_every_gpu_node(pitfalls):
    used, total = gpu_used(pitfalls), gpu_nodes(pitfalls)
    assert sum(used.values()) == 70
    assert {name: total[name] - used[name] for name in total} == {name: 1 for name in total}


def test_clean_packs_the_same_70_gpus(clean):
    used, total = gpu_used(clean), gpu_nodes(clean)
    assert sum(used.values()) == 70
    assert sorted(total[n] - used.get(n, 0) for n in total) == [0] * 8 + [2, 8]
    assert not unscheduled(clean)
    assert all(p["status"]["phase"] in ("Running", "Succeeded", "Failed") for p in of_kind(clean, "Pod"))


def test_objects_follow_the_documented_gpu_layout(cluster):
    variant, objs = cluster
    assert {n: g for n, g in gpu_used(objs).items() if g} == gpu_pods_per_node(variant)


def test_bound_pods_fit_every_resource_of_their_node(cluster):
    _, objs = cluster
    nodes = {n["metadata"]["name"]: n for n in of_kind(objs, "Node")}
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod in filter(holds_resources, of_kind(objs, "Pod")):
        node_used = used[pod["spec"]["nodeName"]]
        node_used["pods"] += 1
        names = {r for c in pod["spec"]["containers"] for r in c["resources"].get("requests", {})}
        for resource in names:
            node_used[resource] += pod_request(pod, resource)
    for name, node_used in used.items():
        alloc = nodes[name]["status"]["allocatable"]
        for resource, amount in node_used.items():
            assert amount <= resource_amount(resource, alloc.get(resource, "0")), (name, resource)


def test_gpu_pods_request_whole_gpus_equal_to_limits_and_tolerate_the_taint(cluster):
    _, objs = cluster
    for pod in of_kind(objs, "Pod"):
        for c in pod["spec"]["containers"]:
            req, lim = c["resources"].get("requests", {}), c["resources"].get("limits", {})
            assert req.get(GPU) == lim.get(GPU)
            assert "cpu" in req and "memory" in req
        if pod_request(pod, GPU) and pod["metadata"]["name"] != "alice-notebook-0":
            assert any(t.get("key") == GPU for t in pod["spec"]["tolerations"]), pod["metadata"]["name"]


def test_pitfalls_have_the_five_pending_gpu_workloads(pitfalls):
    pods = unscheduled(pitfalls)
    owners = {p["metadata"]["ownerReferences"][0]["name"].split("-")[0] for p in pods}
    assert len(owners) == len(PENDING_PODS) == 5
    assert sorted(pod_request(p, GPU) for p in pods) == [1, 1, 2, 2, 2, 4]   # the gang is two pods
    for pod in pods:
        assert pod["status"]["phase"] == "Pending" and "startTime" not in pod["status"]
        (cond,) = pod["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
        events = [e for e in of_kind(pitfalls, "Event") if e["involvedObject"]["uid"] == pod["metadata"]["uid"]
                  and e["reason"] == "FailedScheduling"]
        assert [e["message"] for e in events] == [cond["message"]]
    gang = [p for p in pods if p["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group") == "ppo-actor"]
    group = named(pitfalls, "PodGroup", "ppo-actor")
    assert len(gang) == group["spec"]["minMember"] == 2


def _failing_filter_reasons(pod: dict, node: dict, free: dict[str, int]) -> list[str]:
    """TaintToleration -> NodeAffinity -> NodeResourcesFit (every short resource), enough for this cluster."""
    tolerated = {t.get("key") for t in pod["spec"]["tolerations"]}
    if any(t["effect"] == "NoSchedule" and t["key"] not in tolerated for t in node["spec"].get("taints", [])):
        return ["node(s) had untolerated taint(s)"]
    labels = node["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in pod["spec"].get("nodeSelector", {}).items()):
        return ["node(s) didn't match Pod's node affinity/selector"]
    return [f"Insufficient {r}" for r in ("cpu", "memory", GPU) if pod_request(pod, r) > free.get(r, 0)]


def _free_resources(objs: list[dict]) -> dict[str, dict[str, int]]:
    free = {n["metadata"]["name"]: {r: resource_amount(r, n["status"]["allocatable"].get(r, "0"))
                                    for r in ("cpu", "memory", GPU)} for n in of_kind(objs, "Node")}
    for pod in filter(holds_resources, of_kind(objs, "Pod")):
        for r in ("cpu", "memory", GPU):
            free[pod["spec"]["nodeName"]][r] -= pod_request(pod, r)
    return free


def test_pending_messages_match_the_filter_histogram(pitfalls):
    free = _free_resources(pitfalls)
    for pod in unscheduled(pitfalls):
        reasons = defaultdict(int)
        for node in of_kind(pitfalls, "Node"):
            failing = _failing_filter_reasons(pod, node, free[node["metadata"]["name"]])
            assert failing
            for reason in failing:
                reasons[reason] += 1
        histogram = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
        message = pod["status"]["conditions"][0]["message"]
        assert message.split(". ", 1)[0].rstrip(".") + "." == f"0/40 nodes are available: {histogram}."
        # pending GPU pods are short of GPUs only, wherever a GPU node's taints and selectors admit them
        for node in of_kind(pitfalls, "Node"):
            failing = _failing_filter_reasons(pod, node, free[node["metadata"]["name"]])
            if GPU in node["status"]["allocatable"] and failing[0].startswith("Insufficient"):
                assert failing == [f"Insufficient {GPU}"]


def test_inference_pod_fits_only_by_preempting_training_in_its_pool(pitfalls):
    (pod,) = [p for p in unscheduled(pitfalls) if p["spec"].get("priorityClassName") == "inference-high"]
    want = pod_request(pod, GPU)
    used, total = gpu_used(pitfalls), gpu_nodes(pitfalls)
    pool = [n["metadata"]["name"] for n in of_kind(pitfalls, "Node")
            if n["metadata"]["labels"].get("pool") == pod["spec"]["nodeSelector"]["pool"]]
    assert all(total[n] - used[n] < want for n in pool)
    lower = defaultdict(int)
    for p in filter(holds_resources, of_kind(pitfalls, "Pod")):
        if p["spec"]["nodeName"] in pool and p["spec"]["priority"] < pod["spec"]["priority"]:
            assert p["spec"]["priorityClassName"] == "training-low"
            lower[p["spec"]["nodeName"]] += pod_request(p, GPU)
    assert any(total[n] - used[n] + lower[n] >= want for n in pool)


def _movable_one_gpu_pods(objs: list[dict]) -> dict[str, list[str]]:
    """1-GPU pods that a PDB-respecting evictor could move, per node."""
    blocked = set()
    for pdb in of_kind(objs, "PodDisruptionBudget"):
        if pdb["status"]["disruptionsAllowed"] == 0:
            sel = pdb["spec"]["selector"]["matchLabels"]
            blocked |= {p["metadata"]["uid"] for p in of_kind(objs, "Pod")
                        if p["metadata"]["namespace"] == pdb["metadata"]["namespace"]
                        and sel.items() <= p["metadata"].get("labels", {}).items()}
    movable = defaultdict(list)
    for p in filter(holds_resources, of_kind(objs, "Pod")):
        refs = p["metadata"].get("ownerReferences", [])
        if (pod_request(p, GPU) == 1 and refs and refs[0]["kind"] in ("ReplicaSet", "Job") and is_ready(p)
                and p["metadata"].get("annotations", {}).get("cluster-autoscaler.kubernetes.io/safe-to-evict") != "false"
                and p["metadata"]["uid"] not in blocked
                and not any(v.get("emptyDir", {}).get("medium", "") != "Memory" for v in p["spec"]["volumes"]
                            if "emptyDir" in v)):   # CA/descheduler: local storage pins a pod
            movable[p["spec"]["nodeName"]].append(p["metadata"]["name"])
    return movable


def test_defragmentation_can_make_room_for_the_gang_and_the_four_gpu_pod(pitfalls):
    movable = _movable_one_gpu_pods(pitfalls)
    # three moves empty four GPUs on one node; the targets are the other nodes' single free GPUs
    assert any(len(names) >= 3 for names in movable.values())
    assert len(movable) >= 2 + 1   # two sources for the gang's 2+2, plus room elsewhere
    kinds = {(p["metadata"].get("ownerReferences") or [{"kind": None}])[0]["kind"]
             for p in filter(holds_resources, of_kind(pitfalls, "Pod")) if pod_request(p, GPU)}
    assert None in kinds   # a bare pod nothing would recreate
    assert any(p["metadata"].get("annotations", {}).get("cluster-autoscaler.kubernetes.io/safe-to-evict") == "false"
               for p in of_kind(pitfalls, "Pod") if pod_request(p, GPU))
    assert named(pitfalls, "PodDisruptionBudget", "embedding-server")["status"]["disruptionsAllowed"] == 0
    for ds_pod in (p for p in of_kind(pitfalls, "Pod")
                   if p["metadata"].get("ownerReferences", [{}])[0].get("kind") == "DaemonSet"):
        assert pod_request(ds_pod, GPU) == 0


def test_training_pods_carry_checkpoint_annotations_and_start_times(cluster):
    variant, objs = cluster
    training = [p for p in filter(holds_resources, of_kind(objs, "Pod"))
                if p["spec"].get("priorityClassName") == "training-low"]
    annotated = [p for p in training if "kubegpu.io/last-checkpoint" in p["metadata"].get("annotations", {})]
    assert annotated and all(p["status"]["startTime"] for p in training)
    for p in annotated:
        assert p["metadata"]["annotations"]["kubegpu.io/last-checkpoint"] >= p["status"]["startTime"]
    if variant == "pitfalls":
        assert len(annotated) < len(training)   # some jobs have never checkpointed


# --- wire format ------------------------------------------------------------------------------

BUILTIN_GROUPS = {"v1", "apps/v1", "batch/v1", "policy/v1", "networking.k8s.io/v1", "storage.k8s.io/v1",
                  "scheduling.k8s.io/v1"}


def _drop_nulls(value):
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def test_builtin_objects_round_trip_through_the_typed_v1_models(cluster):
    """lightkube's generated models drop any field the v1 schema lacks: a strict spelling check."""
    codecs = pytest.importorskip("lightkube.codecs")
    _, objs = cluster
    for o in objs:
        if o["apiVersion"] in BUILTIN_GROUPS:
            typed = codecs.from_dict(copy.deepcopy(o))
            assert typed.to_dict() == _drop_nulls(o), (o["kind"], o["metadata"]["name"])


def _plural(kind: str) -> str:
    lower = kind.lower()
    return lower[:-1] + "ies" if lower.endswith("y") else lower + ("es" if lower.endswith("s") else "s")


class _Discovery(BaseHTTPRequestHandler):
    """Just enough of the API server's legacy discovery for kubectl to map kinds to resources."""

    documents: ClassVar[dict[str, dict]] = {}

    def do_GET(self):
        body = self.documents.get(self.path.split("?")[0])
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body or {"kind": "Status", "code": 404}).encode())

    def log_message(self, *args):
        pass


def _discovery_documents(objs: list[dict]) -> dict[str, dict]:
    kinds = defaultdict(dict)
    for o in objs:
        kinds[o["apiVersion"]][o["kind"]] = "namespace" in o["metadata"]
    docs: dict[str, dict] = {"/version": {"major": "1", "minor": "35", "gitVersion": "v1.35.2"},
                             "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}}
    groups = []
    for gv, by_kind in kinds.items():
        resources = [{"name": _plural(k), "singularName": k.lower(), "namespaced": ns, "kind": k,
                      "verbs": ["create", "get", "list"]} for k, ns in by_kind.items()]
        docs["/api/v1" if gv == "v1" else f"/apis/{gv}"] = {
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
        if gv != "v1":
            version = {"groupVersion": gv, "version": gv.split("/")[1]}
            groups.append({"name": gv.split("/")[0], "versions": [version], "preferredVersion": version})
    docs["/apis"] = {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    return docs


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
def test_kubectl_client_dry_run_accepts_every_object(cluster, tmp_path):
    _, objs = cluster
    items = [o for o in objs if o["kind"] != "SnapshotInfo"]
    path = tmp_path / "demo.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": items}))
    handler = type("Discovery", (_Discovery,), {"documents": _discovery_documents(items)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = subprocess.run(
            ["kubectl", "--server", f"http://127.0.0.1:{server.server_port}", "--cache-dir", str(tmp_path / "c"),
             "create", "--dry-run=client", "--validate=false", "-f", str(path), "-o", "name"],
            capture_output=True, text=True, timeout=120, check=False)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    names = result.stdout.split()
    assert len(names) == len(items)
    first_pod = of_kind(items, "Pod")[0]["metadata"]["name"]
    assert f"pod/{first_pod}" in names and "node/gpu-inf-01" in names


def test_linear_dns_formula_for_this_cluster():
    from kubegpu.sources.demo.nodes import node_objects
    from kubegpu.sources.demo.system import dns_replicas_linear

    nodes = node_objects("clean")
    cores = sum(resource_amount("cpu", n["status"]["allocatable"]["cpu"]) for n in nodes) / 1000
    assert dns_replicas_linear(nodes) == max(math.ceil(cores / 256), math.ceil(40 / 16)) == 6


# --- the ten pitfalls: present in --demo, remedied in --demo clean ------------------------------

def _pods_of(objs: list[dict], **labels) -> list[dict]:
    return [p for p in of_kind(objs, "Pod") if labels.items() <= p["metadata"].get("labels", {}).items()]


def _env(pod: dict) -> dict:
    return {e["name"]: e.get("value") for c in pod["spec"]["containers"] for e in c.get("env", [])}


def _multi_gpu_training(objs: list[dict]) -> list[dict]:
    return [p for p in filter(holds_resources, of_kind(objs, "Pod"))
            if p["metadata"]["labels"].get("workload-type") == "training" and pod_request(p, GPU) > 1]


def test_pitfall_1_fragmentation_no_node_fits_four_gpus(pitfalls, clean):
    for objs, fits in ((pitfalls, False), (clean, True)):
        used, total = gpu_used(objs), gpu_nodes(objs)
        assert (max(total[n] - used.get(n, 0) for n in total) >= 4) is fits


def test_pitfall_3_autoscaler_delay_and_mixed_node_group(pitfalls, clean):
    for objs, delay, mixed in ((pitfalls, "10m", True), (clean, "30m", False)):
        (ca,) = [c for c in named(objs, "Deployment", "cluster-autoscaler")["spec"]["template"]["spec"]["containers"]]
        args = dict(a.split("=", 1) for a in ca["command"] if "=" in a and not a.startswith("--nodes"))
        assert args["--scale-down-delay-after-add"] == delay
        groups = defaultdict(set)
        for n in of_kind(objs, "Node"):
            groups[n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"]].add(GPU in n["status"]["allocatable"])
        assert {a.rsplit(":", 1)[1] for a in ca["command"] if a.startswith("--nodes=")} == set(groups)
        assert any(len(kinds) == 2 for kinds in groups.values()) is mixed


def test_pitfall_4_training_unprotected_from_preemption(pitfalls, clean):
    def protected(objs: list[dict], pod: dict) -> bool:
        covered = any(pdb["metadata"]["namespace"] == pod["metadata"]["namespace"]
                      and pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
                      for pdb in of_kind(objs, "PodDisruptionBudget"))
        ckpt = {v["name"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v}
        mounted = any(m["name"] in ckpt and m["mountPath"] == "/checkpoints"
                      for c in pod["spec"]["containers"] for m in c["volumeMounts"])
        return covered and mounted
    for objs, ok, policy in ((pitfalls, False, "PreemptLowerPriority"), (clean, True, "Never")):
        training = [p for p in filter(holds_resources, of_kind(objs, "Pod"))
                    if p["spec"].get("priorityClassName") == "training-low"]
        assert training and all(protected(objs, p) is ok for p in training)
        assert named(objs, "PriorityClass", "inference-high")["preemptionPolicy"] == policy


def test_pitfall_5_nccl_env_rdma_and_network_policy(pitfalls, clean):
    for objs, ok in ((pitfalls, False), (clean, True)):
        pods = _multi_gpu_training(objs)
        assert pods and all((("NCCL_DEBUG" in _env(p)) and ("NCCL_SOCKET_IFNAME" in _env(p))) is ok for p in pods)
        multi_node = [p for p in pods if "MASTER_ADDR" in _env(p)]
        rdma = [p for p in multi_node if any(r.startswith(("rdma/", "vpc.amazonaws.com/efa"))
                                              for c in p["spec"]["containers"] for r in c["resources"]["requests"])
                or p["spec"].get("hostNetwork")]
        assert len(rdma) == (len(multi_node) if ok else 0)
        assert any(_env(p).get("NCCL_IB_DISABLE") == "1" for p in pods) is not ok   # debug leftover
        (policy,) = of_kind(objs, "NetworkPolicy")
        ports = policy["spec"]["ingress"][0]["ports"]
        assert any(p.get("endPort", 0) >= p["port"] + 1000 for p in ports) is ok


def test_pitfall_6_rendezvous_through_headless_service(pitfalls, clean):
    for objs, headless in ((pitfalls, False), (clean, True)):
        services = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in of_kind(objs, "Service")}
        for pod in filter(holds_resources, of_kind(objs, "Pod")):
            addr = _env(pod).get("MASTER_ADDR")
            if not addr:
                continue
            parts = addr.split(".")
            svc_name = parts[1] if headless else parts[0]
            svc = services[(pod["metadata"]["namespace"], svc_name)]
            assert (svc["spec"]["clusterIP"] == "None") is headless
            owner = pod["metadata"]["ownerReferences"][0]["kind"]
            assert owner == ("StatefulSet" if headless else "Job")


def test_pitfall_7_cluster_dns_scaling_and_ndots(pitfalls, clean):
    coredns = named(pitfalls, "Deployment", "coredns")
    assert coredns["spec"]["replicas"] == 1
    assert not [o for o in pitfalls if o["metadata"]["name"] in ("dns-autoscaler", "node-local-dns")]
    assert all("dnsConfig" not in p["spec"] for p in _pods_of(pitfalls, app="chat-gateway"))
    assert named(clean, "Deployment", "coredns")["spec"]["replicas"] == 6
    cpa = named(clean, "Deployment", "dns-autoscaler")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--target=deployment/coredns" in cpa
    assert json.loads(named(clean, "ConfigMap", "dns-autoscaler")["data"]["linear"])["nodesPerReplica"] == 16
    assert named(clean, "DaemonSet", "node-local-dns")["status"]["numberReady"] == 40
    for pod in _pods_of(clean, app="chat-gateway") + _pods_of(clean, component="predictor"):
        assert {"name": "ndots", "value": "2"} in pod["spec"]["dnsConfig"]["options"]


def _nfs_readers(objs: list[dict]) -> list[dict]:
    nfs_claims = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in of_kind(objs, "PersistentVolumeClaim")
                  if "nfs" in named(objs, "PersistentVolume", c["spec"]["volumeName"])["spec"]}
    return [p for p in filter(holds_resources, of_kind(objs, "Pod"))
            if any((p["metadata"]["namespace"], v.get("persistentVolumeClaim", {}).get("claimName")) in nfs_claims
                   for v in p["spec"]["volumes"])]


def test_pitfall_8_twenty_replicas_on_one_nfs_claim_with_mount_timeouts(pitfalls, clean):
    readers = _nfs_readers(pitfalls)
    assert len(readers) == 20
    stuck = [p for p in readers if p["status"]["phase"] == "Pending"]
    assert len(stuck) == 4 and all(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating" for p in stuck)
    mounts = [e for e in of_kind(pitfalls, "Event") if e["reason"] == "FailedMount"]
    assert {e["involvedObject"]["name"] for e in mounts} == {p["metadata"]["name"] for p in stuck}
    assert any("Unable to attach or mount volumes: unmounted volumes=[model]" in e["message"] for e in mounts)
    assert any("mount.nfs: Connection timed out" in e["message"] for e in mounts)
    options = named(pitfalls, "PersistentVolume", "models-nfs")["spec"]["mountOptions"]
    assert "soft" in options and not any(o.startswith("nconnect") for o in options)
    assert not _nfs_readers(clean)
    assert "nconnect=8" in named(clean, "PersistentVolume", "models-nfs")["spec"]["mountOptions"]


def test_pitfall_9_model_versions_and_local_cache(pitfalls, clean):
    versions = {_env(p)["MODEL_VERSION"] for p in _pods_of(pitfalls, model="llama-3.1-8b-instruct")}
    assert len(versions) == 2 and not of_kind(pitfalls, "LocalModelCache")
    chat = _pods_of(clean, model="llama-3.1-8b-instruct")
    assert len(chat) == 20 and len({_env(p)["MODEL_VERSION"] for p in chat}) == 1
    (cache,) = of_kind(clean, "LocalModelCache")
    isvc = named(clean, "InferenceService", "chat-llama")
    assert isvc["spec"]["predictor"]["model"]["storageUri"].startswith(cache["spec"]["sourceModelUri"])
    assert cache["status"]["copies"]["available"] == 4


def test_pitfall_10_local_disk_binding_and_iowait_alert(pitfalls, clean):
    for objs, binding, alert in ((pitfalls, "Immediate", False), (clean, "WaitForFirstConsumer", True)):
        assert named(objs, "StorageClass", "local-nvme")["volumeBindingMode"] == binding
        exprs = [r["expr"] for rule in of_kind(objs, "PrometheusRule") for g in rule["spec"]["groups"]
                 for r in g["rules"]]
        assert any('mode="iowait"' in e and e.endswith("> 10") for e in exprs) is alert
