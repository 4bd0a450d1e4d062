"""The chart's optional second scheduler: kube-scheduler + the kubegpu extender as a sidecar."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.web.helm_render import manifests

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "kubegpu"


def objects(override: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for doc in manifests(CHART, override):
        out.setdefault(doc["kind"], []).append(doc)
    return out


def scheduler_config(objs) -> dict:
    cm = next(c for c in objs["ConfigMap"] if c["metadata"]["name"].endswith("scheduler-config"))
    return yaml.safe_load(cm["data"]["config.yaml"])


def test_the_second_scheduler_is_off_by_default():
    objs = objects({})
    assert "ConfigMap" not in objs and len(objs["Deployment"]) == 1


def test_scoring_only_extender_is_ignorable_and_node_cache_capable():
    config = scheduler_config(objects({"scheduler": {"enabled": True}}))
    assert config["kind"] == "KubeSchedulerConfiguration" and config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    (profile,) = config["profiles"]
    assert profile == {"schedulerName": "kubegpu-scheduler", "percentageOfNodesToScore": 100}
    (ext,) = config["extenders"]
    # facts 1.4: the config keys; a scoring-only extender: no filterVerb, ignorable, weight > 0
    assert ext["urlPrefix"] == "http://127.0.0.1:8888" and ext["prioritizeVerb"] == "prioritize"
    assert ext["ignorable"] is True and "filterVerb" not in ext and ext["weight"] >= 1
    assert ext["nodeCacheCapable"] is True and ext["httpTimeout"] == "5s"
    # whole and renamed time-sliced GPUs; the scheduler still counts both itself (ignoredByScheduler false)
    assert ext["managedResources"] == [{"name": "nvidia.com/gpu", "ignoredByScheduler": False},
                                       {"name": "nvidia.com/gpu.shared", "ignoredByScheduler": False}]
    assert config["leaderElection"] == {"leaderElect": True, "resourceLock": "leases",
                                        "resourceNamespace": "kubegpu", "resourceName": "kubegpu-scheduler"}


def test_filtering_extender_is_not_ignorable_and_preempts():
    config = scheduler_config(objects({"scheduler": {"enabled": True, "extender": {"filter": True}}}))
    (ext,) = config["extenders"]
    assert ext["filterVerb"] == "filter" and ext["preemptVerb"] == "preempt" and ext["ignorable"] is False
    assert "bindVerb" not in ext


def test_deployment_runs_the_upstream_image_and_the_extender_on_localhost():
    objs = objects({"scheduler": {"enabled": True, "image": {"tag": "v1.32.9"}}})
    deploy = next(d for d in objs["Deployment"] if d["metadata"]["name"] == "kubegpu-scheduler")
    sched, ext = deploy["spec"]["template"]["spec"]["containers"]
    assert sched["image"] == "registry.k8s.io/kube-scheduler:v1.32.9"
    assert "--config=/etc/kubegpu-scheduler/config.yaml" in sched["command"]
    assert sched["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 10259, "scheme": "HTTPS"}
    assert ext["args"][:3] == ["extender", "--address=127.0.0.1", "--port=8888"]
    # no --policy unless set: the extender's DEFAULT_POLICY is the one default
    assert not any(a.startswith("--policy") for a in ext["args"])
    assert "--ledger=/var/log/kubegpu/decisions.ndjson" in ext["args"]
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == "kubegpu-scheduler"


def test_a_set_policy_is_passed_to_the_extender():
    objs = objects({"scheduler": {"enabled": True, "extender": {"policy": "kubegpu"}}})
    deploy = next(d for d in objs["Deployment"] if d["metadata"]["name"] == "kubegpu-scheduler")
    assert "--policy=kubegpu" in deploy["spec"]["template"]["spec"]["containers"][1]["args"]


def test_rbac_is_upstreams_second_scheduler_rbac_plus_its_own_lease():
    objs = objects({"scheduler": {"enabled": True, "leaseName": "gpu-sched"}})
    bound = {b["roleRef"]["name"] for b in objs["ClusterRoleBinding"]
             if b["subjects"][0]["name"] == "kubegpu-scheduler"}
    assert bound == {"system:kube-scheduler", "system:volume-scheduler", "kubegpu-readonly"}
    reader = next(b for b in objs["RoleBinding"] if b["metadata"]["namespace"] == "kube-system")
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    lease = next(r for r in objs["Role"] if r["metadata"]["name"] == "kubegpu-scheduler-lease")
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["gpu-sched"],
            "verbs": ["get", "update"]} in lease["rules"]
    assert scheduler_config(objs)["leaderElection"]["resourceName"] == "gpu-sched"


def test_events_flag_and_their_rbac_only_when_enabled():
    objs = objects({"scheduler": {"enabled": True}})
    deploy = next(d for d in objs["Deployment"] if d["metadata"]["name"] == "kubegpu-scheduler")
    assert "--events" not in deploy["spec"]["template"]["spec"]["containers"][1]["args"]
    assert not any(r["metadata"]["name"] == "kubegpu-scheduler-events" for r in objs["ClusterRole"])
    objs = objects({"scheduler": {"enabled": True, "extender": {"events": {"enabled": True, "qps": 2}}}})
    deploy = next(d for d in objs["Deployment"] if d["metadata"]["name"] == "kubegpu-scheduler")
    args = deploy["spec"]["template"]["spec"]["containers"][1]["args"]
    assert "--events" in args and "--events-qps=2" in args
    role = next(r for r in objs["ClusterRole"] if r["metadata"]["name"] == "kubegpu-scheduler-events")
    assert role["rules"] == [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}]
    binding = next(b for b in objs["ClusterRoleBinding"] if b["metadata"]["name"] == "kubegpu-scheduler-events")
    assert binding["subjects"][0]["name"] == "kubegpu-scheduler"
