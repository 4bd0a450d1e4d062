"""The PrometheusRule generator and the model load-time estimate."""

from __future__ import annotations

import pytest
import yaml

from kubegpu.audit.rules import RuleOptions, prometheus_rule, prometheus_rule_yaml
from kubegpu.storage.throughput import estimate, parse_class_overrides, parse_size, parse_throughput
from kubegpu.errors import InputError

from .audit_support import demo_state


def _alerts(rule):
    return {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}


def test_rule_is_a_prometheus_operator_object_with_the_seed_alerts():
    rule = yaml.safe_load(prometheus_rule_yaml(RuleOptions(labels={"release": "kps"})))
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert rule["metadata"]["labels"] == {"release": "kps"}
    alerts = _alerts(rule)
    assert set(alerts) == {"NodeHighIOWait", "GPUAllocatedButIdle", "GPUIdleWhileIOWaitHigh",
                           "GPUFragmentationHigh", "GPUsStranded"}
    iowait = alerts["NodeHighIOWait"]
    # samber/awesome-prometheus-alerts HostCpuHighIowait, held for 10 minutes
    assert iowait["expr"] == 'avg by (instance) (rate(node_cpu_seconds_total{mode="iowait"}[5m])) * 100 > 10'
    assert iowait["for"] == "10m"
    assert "and on (node)" in alerts["GPUIdleWhileIOWaitHigh"]["expr"]
    assert all(g["name"] and g["rules"] for g in rule["spec"]["groups"])


def test_rule_thresholds_and_without_kubegpu_metrics():
    alerts = _alerts(prometheus_rule(RuleOptions(iowait_threshold=25, iowait_for="15m", kubegpu_metrics=False)))
    assert alerts["NodeHighIOWait"]["expr"].endswith("* 100 > 25") and alerts["NodeHighIOWait"]["for"] == "15m"
    assert "GPUsStranded" not in alerts


def test_the_audit_offers_the_same_rule_as_its_patch():
    from kubegpu.audit import run_audit

    from .audit_support import HERE, load

    (finding,) = run_audit(load(HERE / "KG-1002" / "fail-no-iowait-rule.yaml"), checks=["KG-1002"]).findings
    assert finding.patch.kind == "manifest"
    assert yaml.safe_load(finding.patch.content) == prometheus_rule(RuleOptions())


def test_seed_numbers_14gb_nfs_70s_nvme_about_5s():
    rows = {r.storage: r.seconds for r in estimate(parse_size("14GB")).estimates}
    assert rows["nfs"] == 70.0
    assert rows["local-nvme"] == pytest.approx(4.7, abs=0.05)


@pytest.mark.parametrize("text, expected", [("14GB", 14e9), ("13GiB", 13 * 2**30), ("700 MB", 700e6),
                                            ("1.5T", 1.5e12), ("512Mi", 512 * 2**20)])
def test_sizes(text, expected):
    assert parse_size(text) == expected


def test_throughputs_and_overrides():
    assert parse_throughput("200MB/s") == 200e6
    assert parse_class_overrides(["nfs=1GB/s", "fsx=500MBps"]) == {"nfs": 1e9, "fsx": 500e6}
    rows = {r.storage: r.seconds for r in estimate(14e9, {"nfs": 1e9}).estimates}
    assert rows["nfs"] == 14.0


@pytest.mark.parametrize("quantity, alias", [("14G", "14GB"), ("13Gi", "13GiB"), ("700M", "700 MB"),
                                             ("1e9", "1GB"), ("1.5Ti", "1.5TiB"), ("512", "512B")])
def test_the_kubernetes_quantity_grammar_and_its_byte_unit_aliases_agree(quantity, alias):
    from kubegpu.model.quantity import parse_quantity

    assert parse_size(alias) == float(parse_quantity(quantity))
    if quantity != "512":  # a bare number needs a unit here
        assert parse_size(quantity) == parse_size(alias)


def test_milli_is_refused_with_a_hint_not_read_as_mega():
    with pytest.raises(InputError, match="milli"):
        parse_size("14m")


@pytest.mark.parametrize("bad", ["fast", "14 parsecs", "-3GB", "14", "14.5", "14 GB GB", "1e999G", ""])
def test_bad_sizes_are_input_errors(bad):
    with pytest.raises(InputError):
        parse_size(bad)


def test_bad_class_override():
    with pytest.raises(InputError):
        parse_class_overrides(["nfs:200MB/s"])


def test_per_storage_class_of_a_cluster_sorted_fastest_first():
    result = estimate(14e9, {"fsx-lustre": 1e9}, demo_state("pitfalls"))
    by_name = {r.storage: r for r in result.estimates}
    assert by_name["local-nvme"].kind == "local-nvme" and by_name["local-nvme"].seconds == pytest.approx(4.7, abs=0.05)
    assert by_name["fsx-lustre"].kind == "parallel-fs" and by_name["fsx-lustre"].seconds == 14.0
    assert [r.seconds for r in result.estimates] == sorted(r.seconds for r in result.estimates)


@pytest.mark.parametrize("provisioner, parameters, kind", [
    ("fsx.csi.aws.com", {}, "parallel-fs"),                       # FSx for Lustre
    ("lustre.csi.hpe.com", {}, "parallel-fs"),
    ("nfs.csi.k8s.io", {"server": "nfs.example", "share": "/"}, "nfs"),
    ("efs.csi.aws.com", {"provisioningMode": "efs-ap"}, "nfs"),     # EFS speaks NFSv4.1
    ("file.csi.azure.com", {"protocol": "nfs"}, "nfs"),
    ("file.csi.azure.com", {"skuName": "Premium_LRS"}, "network-fs"),  # SMB
    ("cephfs.csi.ceph.com", {"fsName": "cephfs"}, "network-fs"),
    ("rbd.csi.ceph.com", {"pool": "rbd"}, "block"),
    ("ebs.csi.aws.com", {"type": "gp3"}, "block"),
    ("kubernetes.io/no-provisioner", {}, "local-nvme"),
    ("s3.csi.aws.com", {}, "object-store"),
])
def test_storage_classes_are_classified_by_provisioner_and_parameters(provisioner, parameters, kind):
    from kubegpu.storage.throughput import storage_kind
    from kubegpu.model.kinds import StorageClass
    from kubegpu.model.objects import ObjectMeta

    sc = StorageClass(kind="StorageClass", metadata=ObjectMeta(name="x"), provisioner=provisioner,
                      parameters=parameters)
    assert storage_kind(sc) == kind
