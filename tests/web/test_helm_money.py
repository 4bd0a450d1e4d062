"""The chart's Grafana dashboard ConfigMap (sidecar convention) and prices file, rendered without helm."""

from __future__ import annotations

import json

from kubegpu.money.prices import parse_prices
from tests.web.test_helm import CHART, _objects as objects, case_values

DASHBOARD = CHART / "files" / "kubegpu-dashboard.json"


def test_dashboard_configmap_is_labelled_for_the_grafana_sidecar():
    assert "ConfigMap" not in objects({})                      # off by default
    cms = objects({"grafanaDashboard": {"enabled": True, "labels": {"release": "kps"},
                                        "annotations": {"grafana_folder": "GPU"}}})["ConfigMap"]
    (cm,) = [c for c in cms if c["metadata"]["name"] == "kubegpu-grafana-dashboard"]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"     # kube-prometheus-stack's sidecar label
    assert cm["metadata"]["labels"]["release"] == "kps" and cm["metadata"]["annotations"] == {"grafana_folder": "GPU"}
    assert json.loads(cm["data"]["kubegpu-dashboard.json"]) == json.loads(DASHBOARD.read_text())


def test_prices_values_become_the_file_serve_reads():
    values = case_values(CHART / "ci" / "all-on-values.yaml")
    objs = objects(values)
    (cm,) = [c for c in objs["ConfigMap"] if c["metadata"]["name"] == "kubegpu-prices"]
    book = parse_prices(cm["data"]["prices.yaml"], where="chart prices")
    (price,) = book.prices
    assert (price.match, price.key, price.per_hour, price.currency) == ("instanceType", "p4de.24xlarge", 40, "CNY")
    assert (price.reserved_share, price.reserved_discount) == (0.5, 0.37)
    (deploy,) = [d for d in objs["Deployment"] if d["metadata"]["name"] == "kubegpu"]  # serve, not the scheduler
    pod = deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "--prices=/etc/kubegpu/prices/prices.yaml" in container["args"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "prices")
    assert mount["mountPath"] == "/etc/kubegpu/prices" and mount["readOnly"] is True
    assert {"name": "prices", "configMap": {"name": "kubegpu-prices"}} in pod["volumes"]


def test_no_prices_no_flag():
    (deploy,) = objects({})["Deployment"]
    assert not any(a.startswith("--prices") for a in deploy["spec"]["template"]["spec"]["containers"][0]["args"])


def test_the_rebalancer_reads_the_same_prices_file():
    # rebalance plans are priced like defrag's: in the cluster the rebalancer must see the chart's prices too
    values = case_values(CHART / "ci" / "all-on-values.yaml")
    (deploy,) = [d for d in objects(values)["Deployment"] if d["metadata"]["name"] == "kubegpu-rebalance"]
    pod = deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "--prices=/etc/kubegpu/prices/prices.yaml" in container["args"]
    assert any(m["name"] == "prices" and m["mountPath"] == "/etc/kubegpu/prices" for m in container["volumeMounts"])
    assert {"name": "prices", "configMap": {"name": "kubegpu-prices"}} in pod["volumes"]
