"""/metrics: the same numbers as `kubegpu frag`, every metric `kubegpu rules` uses, bounded labels."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubegpu.audit.rules import RuleOptions, rule_groups


def samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


@pytest.fixture(scope="module")
def metrics(client):
    return samples(client.get("/metrics").text)


def test_fits_and_stranded_equal_frag_json(client, metrics):
    frag = client.get("/api/frag").json()
    assert {s.labels["size"]: s.value for s in metrics["kubegpu_fits_by_size"]} == frag["fits_by_size"]
    assert {s.labels["size"]: s.value for s in metrics["kubegpu_stranded_gpus"]} == frag["stranded_by_size"]
    assert metrics["kubegpu_fragmentation_rate"][0].value == frag["fragmentation"]["rate"]
    # the demo's seed scenario: 80 GPUs at 87.5%, no 4-GPU pod fits, all 10 free GPUs stranded for it
    assert {s.labels["size"]: s.value for s in metrics["kubegpu_stranded_gpus"]}["4"] == 10


def test_node_and_pool_series_add_up(client, metrics):
    frag = client.get("/api/frag").json()
    node = metrics["kubegpu_node_gpus"]
    for state in ("allocated", "free"):
        assert sum(s.value for s in node if s.labels["state"] == state) == pytest.approx(frag["gpus"][state])
    for size, total in frag["stranded_by_size"].items():
        per_node = [s.value for s in metrics["kubegpu_node_stranded_gpus"] if s.labels["size"] == size]
        per_pool = [s.value for s in metrics["kubegpu_pool_stranded_gpus"] if s.labels["size"] == size]
        assert sum(per_node) == pytest.approx(total) and sum(per_pool) == pytest.approx(total)
    pools = {(s.labels["pool"], s.labels["state"]): s.value for s in metrics["kubegpu_pool_gpus"]}
    for row in frag["pools"]:
        if row["gpus"]["total"]:
            assert pools[(row["pool"], "allocated")] == pytest.approx(row["gpus"]["allocated"])
    assert len({s.labels["node"] for s in node}) == 10


def test_pending_by_blocker_counts_the_six_pending_gpu_pods(metrics):
    pending = metrics["kubegpu_pending_gpu_pods"]
    assert sum(s.value for s in pending) == 6
    assert {s.labels["blocker"] for s in pending} <= {"NodeResourcesFit", "NodeAffinity", "TaintToleration", "Gang"}


def test_audit_findings_by_pitfall_and_severity(client, metrics):
    audit = client.get("/api/audit").json()
    got = {(s.labels["pitfall"], s.labels["severity"]): s.value for s in metrics["kubegpu_audit_findings"]}
    assert len(got) == 30
    for f in audit["findings"]:
        assert got[(str(f["pitfall"]), f["severity"])] >= 1
    assert sum(got.values()) == len(audit["findings"])
    assert metrics["kubegpu_audit_score"][0].value == audit["score"]


def test_every_metric_kubegpu_rules_alerts_on_is_exported(metrics):
    exprs = [r["expr"] for g in rule_groups(RuleOptions()) for r in g["rules"]]
    used = {m for e in exprs for m in re.findall(r"\b(kubegpu_[a-z_]+)", e)}
    assert used, "kubegpu rules has alerts on kubegpu metrics"
    assert used <= set(metrics)


def test_health_and_request_metrics(client):
    client.get("/api/frag")
    m = samples(client.get("/metrics").text)
    assert m["kubegpu_data_stale"][0].value == 0
    assert m["kubegpu_data_age_seconds"][0].value >= 0
    assert m["kubegpu_refresh_errors_total"][0].value == 0
    assert any(s.labels["route"] == "/api/frag" for s in m["kubegpu_http_requests_total"])
    assert m["kubegpu_fragmentation_mix_info"][0].labels["mix"] == "cluster"


def test_openmetrics_only_when_asked(client):
    om = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert om.headers["content-type"].startswith("application/openmetrics-text")
    assert om.text.rstrip().endswith("# EOF")
    classic = client.get("/metrics")
    assert classic.headers["content-type"].startswith("text/plain")
    assert "# EOF" not in classic.text


def test_no_per_pod_series_unless_asked(demo_store, metrics):
    from starlette.testclient import TestClient

    from kubegpu.web.app import create_app

    assert not any("pod" in s.labels for series in metrics.values() for s in series)
    with_pods = samples(TestClient(create_app(demo_store, metrics_pods=True)).get("/metrics").text)
    pods = with_pods["kubegpu_pod_gpus"]
    assert sum(s.value for s in pods) == pytest.approx(70)
    assert len(with_pods["kubegpu_pending_gpu_pod"]) == 6


def test_openmetrics_exposition_parses_strictly(client):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

    text = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}).text
    names = {fam.name for fam in parse_openmetrics(text)}
    assert {"kubegpu_stranded_gpus", "kubegpu_data_age_seconds", "kubegpu_fragmentation_mix"} <= names


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")
def test_promtool_check_metrics_accepts_the_exposition(client):
    # promtool check metrics reads the classic text format (what Prometheus 2.x scrapes by default)
    text = client.get("/metrics").text
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "" and proc.stderr.strip() == "", "promtool lint findings"


def test_blocker_class_of_a_gang_member_that_fits_alone(demo_store):
    import msgspec

    from kubegpu.web.views import blocker_of, is_blocked

    member = next(r for r in demo_store.views.why if r.gang is not None)
    assert blocker_of(member) == "NodeResourcesFit"          # the demo's gang member does not fit alone
    fits_alone = msgspec.structs.replace(member, schedulable=True)
    stuck = msgspec.structs.replace(fits_alone, gang=msgspec.structs.replace(member.gang, bound=0, fit_together=1))
    assert is_blocked(stuck) and blocker_of(stuck) == "Gang"
    free = msgspec.structs.replace(fits_alone, gang=None)
    assert not is_blocked(free) and blocker_of(free) == "none"


def modelcache_cluster_objects() -> tuple[list[dict], int]:
    """The demo cluster plus deploy/models' example ModelCache, gating the demo's chat-llama Deployment
    mid-rollout (3 of 4 replicas on the new template), one A100 copy verified and one failed."""
    from pathlib import Path

    import yaml

    from kubegpu.sources.demo import demo_objects

    objs = demo_objects()
    example = Path(__file__).resolve().parents[2] / "deploy" / "models" / "modelcache-example.yaml"
    cache = yaml.safe_load(example.read_text())
    cache["spec"]["workloads"][0].update(namespace="inference", name="chat-llama")
    a100 = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Node"
                  and o["metadata"].get("labels", {}).get("nvidia.com/gpu.product") == "NVIDIA-A100-SXM4-80GB")
    version = cache["spec"]["version"]
    cache["status"] = {"nodes": {a100[0]: {"state": "Verified", "version": version, "current": version},
                                 a100[1]: {"state": "Error", "version": version, "error": "404 Not Found"}}}
    for o in objs:
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "chat-llama":
            o["metadata"]["generation"] = 2
            o["status"] = {"observedGeneration": 2, "replicas": 4, "updatedReplicas": 3}
    return [*objs, cache], len(a100)


def test_model_cache_metrics_are_the_models_engine_samples():
    from starlette.testclient import TestClient

    from kubegpu.modelcache.metrics import METRIC_HELP
    from kubegpu.sources.documents import Documents, load_cluster
    from kubegpu.web.app import create_app
    from kubegpu.web.store import ModelStore

    objs, a100 = modelcache_cluster_objects()
    docs = Documents(source="test")
    for o in objs:
        docs.add(o, "test")
    store = ModelStore()
    store.install(load_cluster(docs))
    text = TestClient(create_app(store, metrics_ttl=0)).get("/metrics").text
    m = samples(text)
    nodes = {s.labels["state"]: s.value for s in m["kubegpu_model_cache_nodes"] if s.labels["model"] == "llama-3-8b"}
    assert nodes["Verified"] == 1 and nodes["Error"] == 1 and sum(nodes.values()) == a100 == 10
    copies = {s.labels["kind"]: s.value for s in m["kubegpu_model_cache_copies"]}
    assert copies["failed"] == 1 and copies["available"] == 1
    mixed = m["kubegpu_model_cache_mixed_version_replicas"]
    assert [(s.labels["workload"], s.value) for s in mixed] == [("Deployment/inference/chat-llama", 1)]
    for name, help_text in METRIC_HELP.items():
        assert f"# HELP {name} {help_text}" in text


def test_no_model_cache_series_without_model_caches(metrics):
    assert "kubegpu_model_cache_nodes" not in metrics
