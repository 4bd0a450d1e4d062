"""A scale-up remedy's one-off price: the pool's dearest GPU node for an hour, worked out once per pool."""

from __future__ import annotations

from kubegpu.cli.options import SourceOptions, load_prices, load_state
from kubegpu.money.cluster import ClusterPrices, cluster_prices
from kubegpu.money.prices import NO_PRICES, NodePrice


def demo_prices():
    source = SourceOptions(demo="pitfalls", snapshots=(), kubeconfig=None, context=None, namespace=None,
                           all_namespaces=False, k8s_version=None)
    state = load_state(source)
    return cluster_prices(state, load_prices(source))


def test_pool_node_hour_is_the_pools_largest_gpu_node_and_dearest_price():
    prices = demo_prices()
    for pool in set(prices.pools.values()):
        nodes = [n for n in prices.pool_nodes(pool) if prices.gpus.get(n)]
        found = prices.pool_node_hour(pool)
        if not nodes:
            assert found is None
            continue
        gpus, dearest = found
        assert gpus == max(prices.gpus[n] for n in nodes)
        assert dearest.per_hour == max(prices.by_node[n].per_hour for n in nodes)
        assert prices.pool_node_hour(pool) is found  # remembered, not recomputed
    assert prices.pool_node_hour("no-such-pool") is None


def _price(node, pool, per_hour, gpus, currency="USD"):
    return NodePrice(node=node, pool=pool, per_hour=per_hour, per_gpu_hour=per_hour / gpus if gpus else 0.0,
                     currency=currency, source="test")


def test_mixed_pool_takes_its_largest_node_and_dearest_price_and_refuses_mixed_currencies():
    nodes = {"a1": ("a", 10.0, 4), "a2": ("a", 32.0, 8), "a3": ("a", 20.0, 2), "b1": ("b", 5.0, 1),
             "b2": ("b", 7.0, 1), "c1": ("c", 0.0, 0)}
    by_node = {n: _price(n, pool, hour, gpus, "EUR" if n == "b2" else "USD") for n, (pool, hour, gpus) in nodes.items()}
    prices = ClusterPrices(book=NO_PRICES, by_node=by_node, gpus={n: g for n, (_, _, g) in nodes.items()},
                           pools={n: pool for n, (pool, _, _) in nodes.items()})
    gpus, dearest = prices.pool_node_hour("a")
    assert (gpus, dearest.node, dearest.per_hour) == (8, "a2", 32.0)
    assert prices.pool_node_hour("b") == (1, None)      # two currencies: no single figure
    assert prices.pool_node_hour("c") is None           # no GPU node
