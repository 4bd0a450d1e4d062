"""The Helm chart, checked without helm: yamllint, values against values.schema.json, the rendered
example manifests against the Kubernetes schemas (kubernetes-validate), RBAC read-only by inspection,
the PrometheusRule's rules in step with `kubegpu rules` (and accepted by promtool)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.sources.live import DEFAULT_KINDS
from tests.web.helm_render import manifests, merged_values

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "kubegpu"
EXAMPLES = REPO / "deploy" / "helm" / "examples"
CASES = sorted((CHART / "ci").glob("*-values.yaml"))
K8S_VERSION = "1.33.0"
YAMLLINT = ("{extends: default, rules: {line-length: {max: 160}, document-start: disable, truthy: {check-keys: false}, "
            "indentation: {spaces: consistent, indent-sequences: whatever}}}")


def case_values(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def example_path(case: Path) -> Path:
    return EXAMPLES / case.name.replace("-values.yaml", ".yaml")


class _ExampleDumper(yaml.SafeDumper):
    """Multi-line strings (ConfigMap data such as the Grafana dashboard) as literal blocks, as one writes them."""


_ExampleDumper.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v,
                                                                     style="|" if "\n" in v else None))


def render_example(case: Path) -> str:
    docs = manifests(CHART, case_values(case))
    return (f"# Rendered from deploy/helm/kubegpu with ci/{case.name} (release kubegpu, namespace kubegpu).\n"
            "# Regenerate with tests/web/test_helm.py::render_example (no helm binary is used).\n"
            + yaml.dump_all(docs, Dumper=_ExampleDumper, sort_keys=False, width=120))


def test_yamllint_on_chart_files():
    from yamllint import linter
    from yamllint.config import YamlLintConfig

    config = YamlLintConfig(YAMLLINT)
    # rendered examples embed the Grafana dashboard's JSON, whose PromQL strings cannot wrap
    rendered = YamlLintConfig(YAMLLINT.replace("max: 160", "max: 200"))
    files = [(f, config) for f in (CHART / "Chart.yaml", CHART / "values.yaml", CHART / "files" / "rules.yaml", *CASES)]
    files += [(f, rendered) for f in EXAMPLES.glob("*.yaml")]
    problems = [f"{f.name}:{p.line}: {p.message}" for f, cfg in files
                for p in linter.run(f.read_text(), cfg) if p.level == "error"]
    assert problems == []


def _schema():
    import json

    return json.loads((CHART / "values.schema.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_values_validate_against_schema(case):
    import jsonschema

    jsonschema.validate(merged_values(CHART, case_values(case)), _schema())


@pytest.mark.parametrize("bad", [{"serviceMonitr": {"enabled": True}}, {"serve": {"metricPods": True}},
                                 {"rbac": {"eviction": "yes"}}, {"serviceMonitor": {"interval": "soon"}},
                                 {"image": {"pullPolicy": "Sometimes"}}])
def test_schema_refuses_misspelled_or_wrong_values(bad):
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(merged_values(CHART, bad), _schema())


def test_every_schema_object_refuses_unknown_keys():
    def walk(node, where):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, where
            for k, v in node.items():
                walk(v, f"{where}.{k}")
    walk(_schema(), "$")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_examples_are_the_rendered_chart(case):
    assert example_path(case).read_text() == render_example(case), \
        f"regenerate {example_path(case).name}: write render_example(case) to it"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_example_manifests_pass_the_kubernetes_schemas(case):
    import kubernetes_validate

    docs = [d for d in yaml.safe_load_all(example_path(case).read_text()) if d]
    checked = 0
    for doc in docs:
        if doc["apiVersion"].startswith("monitoring.coreos.com"):
            continue  # CRDs: no schema in kubernetes-validate (the PrometheusRule is checked by promtool below)
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        checked += 1
    assert checked >= 3


def _objects(override: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for doc in manifests(CHART, override):
        out.setdefault(doc["kind"], []).append(doc)
    return out


def test_rbac_is_read_only_and_covers_what_kubegpu_reads():
    objs = _objects({})
    assert len(objs["ClusterRole"]) == 1, "the eviction role must be off by default"
    role = objs["ClusterRole"][0]
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert {v for *_, v in granted} == {"get", "list", "watch"}
    assert not any(r in ("secrets", "*") or "/" in r for _, r, _ in granted)
    for kind in DEFAULT_KINDS:
        for verb in ("get", "list", "watch"):
            assert (kind.group, kind.plural, verb) in granted, (kind.label, verb)
    binding = objs["ClusterRoleBinding"][0]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == objs["Deployment"][0]["spec"]["template"]["spec"]["serviceAccountName"]


def test_eviction_role_is_opt_in_and_only_evicts_and_cordons():
    roles = _objects({"rbac": {"eviction": True}})["ClusterRole"]
    evict = next(r for r in roles if r["metadata"]["name"].endswith("defrag-apply"))
    granted = {(g, r, v) for rule in evict["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert granted == {("", "pods/eviction", "create"), ("", "nodes", "patch")}


def test_deployment_runs_non_root_read_only_with_probes_and_resources():
    deploy = _objects({})["Deployment"][0]
    pod = deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert "--address=0.0.0.0" in container["args"] and container["args"][0] == "serve"
    assert deploy["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "kubegpu",
                                                         "app.kubernetes.io/instance": "kubegpu"}


def test_optional_objects_are_off_by_default():
    kinds = set(_objects({}))
    assert kinds == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"}
    all_on = set(_objects(case_values(CHART / "ci" / "all-on-values.yaml")))
    assert {"ServiceMonitor", "PrometheusRule", "NetworkPolicy"} <= all_on


def test_chart_rules_are_kubegpu_rules():
    out = CliRunner().invoke(cli, ["rules"], catch_exceptions=False).output
    assert yaml.safe_load((CHART / "files" / "rules.yaml").read_text()) == yaml.safe_load(out)["spec"]
    rule = _objects({"prometheusRule": {"enabled": True}})["PrometheusRule"][0]
    assert rule["spec"] == yaml.safe_load(out)["spec"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (apt-get install prometheus)")
def test_promtool_accepts_the_charts_prometheus_rule(tmp_path):
    rule = _objects({"prometheusRule": {"enabled": True}})["PrometheusRule"][0]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule["spec"]))
    proc = subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dockerfile_runs_kubegpu_serve_as_non_root():
    text = (REPO / "Dockerfile").read_text()
    users = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["kubegpu"]' in text


def test_rebalance_is_off_by_default_and_its_rbac_only_exists_when_enabled():
    default = _objects({})
    assert "PriorityClass" not in default and "Role" not in default and "CronJob" not in default
    objs = _objects({"rebalance": {"enabled": True}})
    pc = objs["PriorityClass"][0]
    assert pc["metadata"]["name"] == "kubegpu-placeholder" and pc["value"] < -10 and pc["preemptionPolicy"] == "Never"
    deploy = next(d for d in objs["Deployment"] if d["metadata"]["name"].endswith("-rebalance"))
    pod = deploy["spec"]["template"]["spec"]
    serve = next(d for d in objs["Deployment"] if not d["metadata"]["name"].endswith("-rebalance"))
    assert pod["serviceAccountName"] != serve["spec"]["template"]["spec"]["serviceAccountName"]
    args = pod["containers"][0]["args"]
    assert args[:2] == ["rebalance", "--yes"] and "--once" not in args and deploy["spec"]["replicas"] == 2
    assert {e["name"] for e in pod["containers"][0]["env"]} == {"KUBEGPU_POD_NAME", "KUBEGPU_POD_UID",
                                                                 "KUBEGPU_NAMESPACE"}
    role = next(r for r in objs["ClusterRole"] if r["metadata"]["name"].endswith("-rebalance"))
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert granted == {("", "pods/eviction", "create"), ("", "nodes", "patch"), ("events.k8s.io", "events", "create")}
    local = objs["Role"][0]
    assert {(r["resources"][0], v) for r in local["rules"] for v in r["verbs"]} == {
        ("pods", "create"), ("pods", "delete"), ("leases", "create"), ("leases", "get"), ("leases", "update")}
    cron = _objects({"rebalance": {"enabled": True, "schedule": "*/10 * * * *"}})
    job = cron["CronJob"][0]
    assert job["spec"]["concurrencyPolicy"] == "Forbid"
    assert "--once" in job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any("leases" in r["resources"] for r in cron["Role"][0]["rules"])   # no Lease without a loop
    assert all(not d["metadata"]["name"].endswith("-rebalance") for d in cron["Deployment"])
