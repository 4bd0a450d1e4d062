"""The engine: suppression (annotation, config), severity overrides, parameters, ordering, score."""

from __future__ import annotations

import pytest

from kubegpu.audit import AuditConfig, parse_config, run_audit
from kubegpu.audit.engine import sort_findings
from kubegpu.audit.findings import Finding
from kubegpu.errors import InputError, UsageError
from kubegpu.model.cluster import ClusterState

from .audit_support import HERE, load

MOUNTS = HERE / "KG-802" / "fail-mount-timeouts-all-versions.yaml"
NODE = HERE / "KG-1003" / "fail-real-rke2-a16-node.yaml"


def _annotated(path, kind: str, name: str, value: str) -> ClusterState:
    state = load(path)
    for obj in state.objects:
        if obj.kind == kind and obj.name == name:
            obj.metadata.annotations = {**obj.metadata.annotations, "kubegpu.io/ignore": value}
    return ClusterState(state.objects, server_version=state.server_version)


def test_ignore_annotation_suppresses_named_checks_only():
    state = _annotated(NODE, "Node", "nori", "KG-1003")
    report = run_audit(state, checks=["KG-1003", "KG-1002"])
    assert [f.id for f in report.findings] == ["KG-1002"]
    assert report.suppressed == 1


@pytest.mark.parametrize("value", ["pitfall:10", "*", "kg-1003, KG-101"])
def test_ignore_annotation_patterns(value):
    report = run_audit(_annotated(NODE, "Node", "nori", value), checks=["KG-1003"])
    assert report.findings == []


def test_ignore_on_a_controller_covers_its_pods():
    state = _annotated(MOUNTS, "Deployment", "chat", "KG-802")
    assert run_audit(state, checks=["KG-802"]).findings == []


def test_config_exclusion_by_kind_namespace_name_regex():
    cfg = parse_config({"exclude": [{"checks": ["KG-802"], "kind": "Pod", "namespace": "infer.*",
                                     "name": "chat-[12]"}]})
    report = run_audit(load(MOUNTS), cfg, checks=["KG-802"])
    assert [f.object for f in report.findings] == ["Pod/inference/chat-3"]
    assert report.suppressed == 2


def test_severity_override_and_disable():
    cfg = parse_config({"severity": {"kg-802": "warn"}, "disable": ["pitfall:10"]})
    report = run_audit(load(MOUNTS), cfg)
    assert {f.severity for f in report.findings if f.id == "KG-802"} == {"warn"}
    assert not any(f.pitfall == 10 for f in report.findings)
    assert "KG-1002" not in report.checks_run


def test_parameters_from_config():
    path = HERE / "KG-801" / "fail-six-replicas-one-nfs.yaml"
    def findings(min_pods):
        cfg = parse_config({"params": {"KG-801": {"min_pods": min_pods}}})
        return run_audit(load(path), cfg, checks=["KG-801"]).findings

    assert findings(7) == []
    assert [f.message for f in findings(6)] == ["6 pods read one nfs volume (Deployment/chat: 6)"]


@pytest.mark.parametrize("data, field", [
    ({"severity": {"KG-999": "warn"}}, "severity.KG-999"),
    ({"severity": {"KG-101": "fatal"}}, "severity.KG-101"),
    ({"disable": ["nope"]}, "disable"),
    ({"exclude": [{"name": "("}]}, "exclude[0].name"),
    ({"params": {"KG-801": {"max_pods": 3}}}, "params.KG-801.max_pods"),
])
def test_bad_config_names_the_field(data, field):
    with pytest.raises(InputError) as err:
        parse_config(data, where="audit.yaml")
    assert err.value.field == field and err.value.where == "audit.yaml"


def test_unknown_config_key_is_an_input_error():
    with pytest.raises(InputError):
        parse_config({"severities": {}})


def test_unknown_check_selection_is_a_usage_error():
    with pytest.raises(UsageError):
        run_audit(load(NODE), checks=["KG-999"])


def test_score_counts_checks_by_their_worst_finding():
    # KG-802 (error) earns 0, KG-803/KG-801 not fired earn 1: (0 + 1 + 1) / 3
    report = run_audit(load(MOUNTS), checks=["KG-802", "KG-803", "KG-1001"])
    assert report.score == round(100 * 2 / 3)
    assert run_audit(load(MOUNTS), checks=["KG-803"]).score == 100
    warn_only = run_audit(load(NODE), checks=["KG-1003"])
    assert warn_only.score == 50 and warn_only.summary == {"error": 0, "warn": 1, "info": 0}


def test_info_findings_cost_nothing():
    report = run_audit(load(HERE / "KG-804" / "fail-no-nconnect.yaml"), checks=["KG-804"])
    assert [f.severity for f in report.findings] == ["info"] and report.score == 100


def test_findings_are_grouped_by_pitfall_worst_group_first():
    def f(fid, pitfall, sev):
        return Finding(id=fid, pitfall=pitfall, severity=sev, object="Pod/a/b", message="m", remediation="r")

    ordered = sort_findings([f("KG-101", 1, "warn"), f("KG-703", 7, "info"), f("KG-505", 5, "error"),
                             f("KG-501", 5, "info"), f("KG-102", 1, "error")])
    assert [x.id for x in ordered] == ["KG-102", "KG-101", "KG-505", "KG-501", "KG-703"]


def test_empty_state_audits_cleanly():
    report = run_audit(ClusterState([]))
    assert report.findings == [] and report.score == 100


def test_default_config_is_the_catalog():
    from kubegpu.audit import CATALOG_BY_ID

    assert AuditConfig().param(CATALOG_BY_ID["KG-801"], "min_pods") == 4


def test_scheduler_config_in_a_configmap_goes_through_the_alias_bomb_guard():
    """Cluster-provided YAML is read by guards.safe_yaml: a billion-laughs ConfigMap is refused (and
    skipped), so its Coscheduling profile does not count; the same profile without the bomb does."""
    from kubegpu.audit.checks.gang_enforcement import served_gangs
    from kubegpu.audit.context import AuditContext
    from kubegpu.model.decode import decode_object

    profile = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
               "- schedulerName: gang\n  plugins:\n    multiPoint:\n      enabled:\n      - name: Coscheduling\n")
    bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    prev = "a"
    for level in "bcdefghi":
        bomb += f"{level}: &{level} [" + ",".join([f"*{prev}"] * 10) + "]\n"
        prev = level
    scheduler = decode_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sp", "namespace": "kube-system"},
                               "spec": {"containers": [{"name": "s", "image":
                                                        "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.31"}]},
                               "status": {"phase": "Running"}})

    def served(text):
        cm = decode_object({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "s", "namespace": "kube-system"}, "data": {"config.yaml": text}})
        return served_gangs(AuditContext(ClusterState([scheduler, cm])))

    assert served(profile) == {"gang": {"coscheduling"}}
    assert served(profile + bomb) == {"scheduler-plugins-scheduler": {"coscheduling"}}
