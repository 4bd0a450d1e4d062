"""The extender's /metrics: call latency per verb, decisions by outcome, how current the data is.

Prometheus text (OpenMetrics on request) from its own registry, with the `kubegpu_extender_`
prefix. Gauges read the store at scrape time; nothing is computed per scrape beyond that.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from kubegpu.extender.ledger import Ledger
from kubegpu.extender.state import ExtenderStore

# a call is expected in ~1 ms; kube-scheduler's default httpTimeout is 5 s
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
CONFIRM_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class _StoreCollector(Collector):
    def __init__(self, store: ExtenderStore, ledger: Ledger) -> None:
        self.store = store
        self.ledger = ledger

    def collect(self):
        s = self.store
        age = s.age()
        g = GaugeMetricFamily("kubegpu_extender_cache_age_seconds",
                              "Seconds since the cluster data was last known current (-1 before any data).")
        g.add_metric([], -1.0 if age is None else round(age, 3))
        yield g
        g = GaugeMetricFamily("kubegpu_extender_generation", "Cluster generations built so far.")
        g.add_metric([], s.generation)
        yield g
        g = GaugeMetricFamily("kubegpu_extender_build_seconds", "Seconds the last generation took to build.")
        g.add_metric([], round(s.health.last_build_seconds, 4))
        yield g
        g = GaugeMetricFamily("kubegpu_extender_assumed_pods",
                              "Pods counted on the node the extender scored top, not yet seen bound.")
        g.add_metric([], len(s.assumed))
        yield g
        c = CounterMetricFamily("kubegpu_extender_assumed_expired", "Assumed bindings dropped after the TTL.")
        c.add_metric([], s.expired)
        yield c
        c = CounterMetricFamily("kubegpu_extender_watched_pod_events",
                                "Watched pod events applied to the overlay before a rebuild (binds, pods that ended).")
        c.add_metric([], s.observed)
        yield c
        c = CounterMetricFamily("kubegpu_extender_refresh_errors", "Failed cluster refreshes (old data kept).")
        c.add_metric([], s.health.refresh_errors)
        yield c
        c = CounterMetricFamily("kubegpu_extender_ledger_write_errors", "Decision records not written to the file.")
        c.add_metric([], self.ledger.write_errors)
        yield c


class _EventCollector(Collector):
    def __init__(self, counts) -> None:
        self.counts = counts

    def collect(self):
        c = CounterMetricFamily("kubegpu_extender_events", "Kubernetes Events pointing at decision records, by "
                                "result (offered, posted, dropped: queue full, failed: the POST failed).",
                                labels=["result"])
        for result in ("offered", "posted", "dropped", "failed"):
            c.add_metric([result], getattr(self.counts, result))
        yield c


class ExtenderMetrics:
    """Counters and histograms the request path updates, plus the store's gauges."""

    def __init__(self, store: ExtenderStore, ledger: Ledger) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.latency = Histogram("kubegpu_extender_request_duration_seconds",
                                 "Extender call latency inside the server, by verb.", ["verb"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.decisions = Counter("kubegpu_extender_decisions", "Extender answers by verb and outcome.",
                                 ["verb", "outcome"], registry=self.registry)
        self.confirm = Histogram("kubegpu_extender_bind_seen_seconds",
                                 "Seconds from assuming a pod on a node to the cluster data showing it bound.",
                                 buckets=CONFIRM_BUCKETS, registry=self.registry)
        self.registry.register(_StoreCollector(store, ledger))
        store.on_confirm.append(self.confirm.observe)

    def count_events(self, counts) -> None:
        """Expose an EventPoster's counts (offered / posted / dropped / failed) as one counter family."""
        self.registry.register(_EventCollector(counts))

    def observe(self, verb: str, outcome: str, seconds: float) -> None:
        self.latency.labels(verb).observe(seconds)
        self.decisions.labels(verb, outcome).inc()

    def render(self, accept: str) -> tuple[bytes, str]:
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type
