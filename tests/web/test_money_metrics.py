"""/metrics money series: the same figures as `kubegpu frag -o json`'s cost, each with its currency."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families


@pytest.fixture(scope="module")
def metrics(client):
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(client.get("/metrics").text):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def test_stranded_cost_per_pool_is_frag_cost_with_its_currency(client, metrics):
    cost = client.get("/api/frag").json()["cost"]
    series = {(s.labels["pool"], s.labels["currency"]): s.value for s in metrics["kubegpu_stranded_gpus_cost_per_hour"]}
    expected = {(p["pool"], p["per_hour"]["currency"]): p["per_hour"]["amount"] for p in cost["pools"] if p["per_hour"]}
    assert series == expected and series                # the demo is priced (CNY, the article's figure)
    assert {c for _, c in series} == {"CNY"}
    gpus = {s.labels["pool"]: s.value for s in metrics["kubegpu_pool_stranded_for_demand_gpus"]}
    assert gpus == {p["pool"]: p["stranded_gpus"] for p in cost["pools"]}


def test_gpu_hour_price_per_node(metrics):
    prices = {s.labels["node"]: (s.value, s.labels["currency"]) for s in metrics["kubegpu_gpu_hour_price"]}
    assert len(prices) == 10 and set(prices.values()) == {(5.0, "CNY")}   # 40 CNY/h over 8 GPUs


def test_pending_wait_series(client, metrics):
    seconds = {s.labels["namespace"]: s.value for s in metrics["kubegpu_pending_gpu_pods_waited_gpu_seconds"]}
    money = {s.labels["namespace"]: s.value for s in metrics["kubegpu_pending_gpu_pods_wait_cost"]
             if s.labels["currency"] == "CNY"}
    assert seconds and set(money) == set(seconds)
    for ns, s in seconds.items():
        assert money[ns] == pytest.approx(s / 3600 * 5.0, abs=0.05)     # 5 CNY per GPU-hour


def test_overview_page_shows_what_the_stranded_gpus_cost_a_day(client):
    cost = client.get("/api/frag").json()["cost"]["stranded"]["per_day"]
    page = client.get("/").text
    assert f"{cost['amount']:.2f} {cost['currency']}" in page and "a day for the stranded GPUs (demo price)" in page
    assert "article" in page          # the tile's title names the price's source
