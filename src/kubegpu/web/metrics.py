"""`/metrics`: the cluster model as Prometheus metrics (prometheus-client, OpenMetrics on request).

One collector per metric family, each reading the current ClusterViews; the samples of a family
are computed once per cluster state (cached in the views), never per scrape. Labels join with
kube-state-metrics and dcgm-exporter: `node`, `namespace`, `pod`, plus our `pool`. Cardinality
is bounded by nodes, pools and namespaces; per-pod series only with `--metrics-pods`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from kubegpu import __version__
from kubegpu.audit.rules import METRIC_FRAG_RATE, METRIC_STRANDED
from kubegpu.fragmentation.capacity import SIZES, cpu_by_size, pods_that_fit
from kubegpu.fragmentation.cluster import pod_task
from kubegpu.model.gpu import MILLI, gpu_number
from kubegpu.modelcache.metrics import METRIC_HELP
from kubegpu.money.waits import pending_costs
from kubegpu.web.store import ModelStore
from kubegpu.web.views import ClusterViews, blocker_of, is_blocked

Rows = Iterable[tuple[tuple[str, ...], float]]
SEVERITIES = ("error", "warn", "info")
PITFALLS = range(1, 11)


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    labels: tuple[str, ...]
    rows: Callable[[ClusterViews], Rows]
    unit: str = ""


def _node_rows(v: ClusterViews) -> Rows:
    """Per node of the GPU map (`frag --plot`'s): allocated, free, and stranded as the map counts it."""
    for n in v.gpumap.nodes:
        used = gpu_number(sum(d.used_milli for d in n.devices))
        pool = n.pool or "(none)"
        yield (n.name, pool, "allocated"), used
        yield (n.name, pool, "free"), len(n.devices) - used
        yield (n.name, pool, "stranded"), n.stranded_gpus


def _pool_rows(v: ClusterViews) -> Rows:
    totals: dict[str, list[float]] = {}
    for (_, pool, state), value in _node_rows(v):
        t = totals.setdefault(pool, [0.0, 0.0, 0.0])
        t[("allocated", "free", "stranded").index(state)] += value
    for pool, (alloc, free, stranded) in sorted(totals.items()):
        yield (pool, "allocated"), round(alloc, 3)
        yield (pool, "free"), round(free, 3)
        yield (pool, "stranded"), round(stranded, 3)


def _node_stranded(v: ClusterViews) -> Rows:
    """Free GPUs per node that K-GPU pods cannot use (sums to kubegpu_stranded_gpus{size})."""
    state, cpu = v.placement, cpu_by_size(v.mix)
    gpu_nodes = np.flatnonzero(state.gpu_count > 0)
    free = state.dev_free.sum(axis=1, dtype=np.int64)
    for k in SIZES:
        stranded = free - pods_that_fit(state, k, cpu.get(k)) * k * MILLI
        for i in gpu_nodes.tolist():
            yield (state.names[i], state.pool[i] or "(none)", str(k)), gpu_number(int(stranded[i]))


def _pool_stranded(v: ClusterViews) -> Rows:
    totals: dict[tuple[str, str], float] = {}
    for (_, pool, size), value in _node_stranded(v):
        totals[(pool, size)] = totals.get((pool, size), 0.0) + value
    for key, value in sorted(totals.items()):
        yield key, round(value, 3)


def _node_info(v: ClusterViews) -> Rows:
    for n in v.gpumap.nodes:
        yield (n.name, n.pool or "(none)", n.gpu_model or "unknown", str(n.schedulable).lower()), 1


def _pending(v: ClusterViews) -> Rows:
    for (ns, blocker), count in sorted(v.pending_by_blocker().items()):
        yield (ns, blocker), count


def _audit(v: ClusterViews) -> Rows:
    counts = {(p, s): 0 for p in PITFALLS for s in SEVERITIES}
    for f in v.audit.findings:
        counts[(f.pitfall, f.severity)] = counts.get((f.pitfall, f.severity), 0) + 1
    for (p, s), c in sorted(counts.items()):
        yield (str(p), s), c


def _pod_gpus(v: ClusterViews) -> Rows:
    """Physical GPUs of each pod on a GPU node, as the fragmentation engine counts them."""
    for n in v.gpumap.nodes:
        for pod in sorted(v.state.pods_by_node.get(n.name, []), key=lambda p: p.key):
            task = pod_task(v.state, pod)
            if task.num_gpu:
                yield (pod.namespace, pod.name, n.name), gpu_number(task.num_gpu * task.gpu_milli)


def _model_cache_rows(name: str, labels: tuple[str, ...]) -> Callable[[ClusterViews], Rows]:
    def rows(v: ClusterViews) -> Rows:
        return [(tuple(s.labels[k] for k in labels), s.value) for s in v.model_cache_samples() if s.name == name]
    return rows


def _pending_pods(v: ClusterViews) -> Rows:
    for r in v.pending_gpu:
        if is_blocked(r):
            ns, _, name = r.pod.partition("/")
            yield (ns, name, blocker_of(r)), 1


def _stranded_cost(v: ClusterViews) -> Rows:
    for row in v.cost.pools:
        if row.per_hour is not None:
            yield (row.pool or "(none)", row.per_hour.currency), row.per_hour.amount


def _gpu_hour_price(v: ClusterViews) -> Rows:
    for name, price in sorted(v.prices.by_node.items()):
        if v.prices.gpus.get(name):
            yield (name, price.pool or "(none)", price.currency), round(price.per_gpu_hour, 4)


def _pending_waits(v: ClusterViews) -> list:
    return v.cached(("pending-waits",), lambda: pending_costs(
        v.state, [r.pod for r in v.pending_gpu if is_blocked(r)], v.prices))


def _pending_delay_seconds(v: ClusterViews) -> Rows:
    seconds: dict[str, float] = {}
    for w in _pending_waits(v):
        ns = w.pod.partition("/")[0]
        seconds[ns] = seconds.get(ns, 0.0) + w.gpus * (w.waited_seconds or 0.0)
    return [((ns,), round(s, 1)) for ns, s in sorted(seconds.items())]


def _pending_delay_cost(v: ClusterViews) -> Rows:
    money: dict[tuple[str, str], float] = {}
    for w in _pending_waits(v):
        if w.delay_cost is not None:
            key = (w.pod.partition("/")[0], w.delay_cost.currency)
            money[key] = money.get(key, 0.0) + w.delay_cost.amount
    return [(key, round(m, 2)) for key, m in sorted(money.items())]


MODEL_FAMILIES: list[Family] = [
    Family("kubegpu_node_gpus", "Physical GPUs of a node by state: allocated, free, and stranded (free GPU that "
           "pods of the demand's largest size cannot use: the GPU map of kubegpu frag --plot).",
           ("node", "pool", "state"), _node_rows),
    Family("kubegpu_node_stranded_gpus", "Free GPUs of a node that K-GPU pods cannot use once as many as fit "
           "are placed (per-node part of kubegpu_stranded_gpus).", ("node", "pool", "size"), _node_stranded),
    Family("kubegpu_pool_stranded_gpus", "Free GPUs of a pool that K-GPU pods cannot use.", ("pool", "size"),
           _pool_stranded),
    Family("kubegpu_node_info", "1 per GPU node, with its pool, GPU model and whether it is schedulable.",
           ("node", "pool", "gpu_model", "schedulable"), _node_info),
    Family("kubegpu_pool_gpus", "Physical GPUs of a pool by state (allocated, free, stranded).",
           ("pool", "state"), _pool_rows),
    Family("kubegpu_cluster_gpus", "Physical GPUs of the cluster by state (allocated, free).", ("state",),
           lambda v: [(("allocated",), v.frag.gpus.allocated), (("free",), v.frag.gpus.free)]),
    Family("kubegpu_allocation_ratio", "Allocated / total physical GPUs (0-1).", (),
           lambda v: [((), v.frag.allocation_ratio)]),
    Family("kubegpu_fits_by_size", "How many K-GPU pods could be placed now (kubegpu frag fits_by_size).",
           ("size",), lambda v: [((k,), n) for k, n in v.frag.fits_by_size.items()]),
    Family("kubegpu_pool_fits_by_size", "How many K-GPU pods could be placed now, per pool.", ("pool", "size"),
           lambda v: [((p.pool or "(none)", k), n) for p in v.frag.pools if p.gpus.total
                      for k, n in p.fits_by_size.items()]),
    Family(METRIC_STRANDED, "Free GPUs that a K-GPU pod cannot use (kubegpu frag stranded_by_size).", ("size",),
           lambda v: [((k,), n) for k, n in v.frag.stranded_by_size.items()]),
    Family(METRIC_FRAG_RATE, "FGD fragmentation: expected share of idle GPU a task of the workload mix "
           "cannot use (0-1); the mix is named by kubegpu_fragmentation_mix_info.", (),
           lambda v: [((), v.frag.fragmentation.rate)]),
    Family("kubegpu_fragmentation_gpus", "FGD fragmentation amount in GPUs.", (),
           lambda v: [((), gpu_number(v.frag.fragmentation.amount_milli_gpu))]),
    Family("kubegpu_pool_fragmentation_rate", "FGD fragmentation rate per pool (0-1).", ("pool",),
           lambda v: [((p.pool or "(none)",), p.fragmentation.rate) for p in v.frag.pools if p.gpus.total]),
    Family("kubegpu_pending_gpu_pods", "Pending GPU pods by namespace and blocker (the kube-scheduler filter "
           "that rejects most nodes, or Gang).", ("namespace", "blocker"), _pending),
    Family("kubegpu_audit_findings", "Audit findings by pitfall (1-10) and severity.", ("pitfall", "severity"),
           _audit),
    Family("kubegpu_audit_score", "Audit score (0-100, 100 = no findings).", (), lambda v: [((), v.audit.score)]),
    Family("kubegpu_stranded_gpus_cost_per_hour", "What the pool's stranded GPUs (frag's stranded_for_demand) cost "
           "an hour at its GPU-hour price, in `currency` (pools without a price have no series).",
           ("pool", "currency"), _stranded_cost),
    Family("kubegpu_pool_stranded_for_demand_gpus", "Free GPUs of the pool that the cluster's own GPU pods cannot "
           "use (frag's stranded_for_demand per pool; priced or not).", ("pool",),
           lambda v: [((r.pool or "(none)",), r.stranded_gpus) for r in v.cost.pools]),
    Family("kubegpu_gpu_hour_price", "The price of one GPU-hour on a node (--prices, the demo's article figure, or "
           "a built-in list price), in `currency`.", ("node", "pool", "currency"), _gpu_hour_price),
    Family("kubegpu_pending_gpu_pods_waited_gpu_seconds", "GPUs x wait so far of the pending GPU pods, per "
           "namespace (the GPU time their waits delayed).", ("namespace",), _pending_delay_seconds),
    Family("kubegpu_pending_gpu_pods_wait_cost", "What the pending GPU pods' waits have cost so far (their "
           "GPU time at the GPU-hour price), per namespace, in `currency`.", ("namespace", "currency"),
           _pending_delay_cost),
    Family("kubegpu_nodes", "Nodes in the model, with and without GPUs.", ("gpu",),
           lambda v: [(("true",), v.status.totals.gpu_nodes),
                      (("false",), v.status.totals.nodes - v.status.totals.gpu_nodes)]),
]
MODEL_CACHE_LABELS = {"kubegpu_model_cache_nodes": ("model", "state"), "kubegpu_model_cache_copies": ("model", "kind"),
                      "kubegpu_model_cache_mixed_version_replicas": ("model", "workload")}
MODEL_FAMILIES += [Family(name, METRIC_HELP[name], labels, _model_cache_rows(name, labels))
                   for name, labels in MODEL_CACHE_LABELS.items()]
POD_FAMILIES: list[Family] = [
    Family("kubegpu_pod_gpus", "Physical GPUs allocated to a pod (--metrics-pods).", ("namespace", "pod", "node"),
           _pod_gpus),
    Family("kubegpu_pending_gpu_pod", "1 per pending GPU pod, with its blocker (--metrics-pods).",
           ("namespace", "pod", "blocker"), _pending_pods),
]


class FamilyCollector(Collector):
    """One metric family from the current views; samples cached per cluster state."""

    def __init__(self, store: ModelStore, family: Family) -> None:
        self.store = store
        self.family = family

    def describe(self):
        return [GaugeMetricFamily(self.family.name, self.family.help, labels=self.family.labels)]

    def build(self, views: ClusterViews) -> GaugeMetricFamily:
        f = self.family
        gauge = GaugeMetricFamily(f.name, f.help, labels=f.labels)
        for labels, value in views.cached(("metric", f.name), lambda: list(f.rows(views))):
            gauge.add_metric(labels, value)
        return gauge

    def collect(self):
        views = self.store.views
        if views is not None:
            yield self.build(views)


class _Built:
    """Families already built (what the encoders call `collect` on)."""

    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self):
        return iter(self.families)


class HealthCollector(Collector):
    """Data age, staleness, refreshes and refresh errors: answered even when the data is stale."""

    def __init__(self, store: ModelStore, mix_name: str) -> None:
        self.store = store
        self.mix_name = mix_name

    def collect(self):
        s, h = self.store, self.store.health
        age = s.age()
        yield GaugeMetricFamily("kubegpu_data_age_seconds", "Seconds since the model was last rebuilt from the "
                                "cluster (NaN before the first load).", value=float("nan") if age is None else age,
                                unit="seconds")
        yield GaugeMetricFamily("kubegpu_data_stale", "1 when the data is older than the staleness bound "
                                "(or not loaded yet).", value=1 if s.stale() else 0)
        yield GaugeMetricFamily("kubegpu_data_stale_after_seconds", "The staleness bound (live sources).",
                                value=s.stale_after, unit="seconds")
        if h.loaded_at is not None:
            yield GaugeMetricFamily("kubegpu_last_refresh_timestamp_seconds", "Unix time of the last successful "
                                    "model rebuild.", value=h.loaded_at, unit="seconds")
        yield GaugeMetricFamily("kubegpu_model_build_seconds", "Seconds the last model rebuild took.",
                                value=h.last_build_seconds, unit="seconds")
        yield CounterMetricFamily("kubegpu_refreshes", "Successful model rebuilds.", value=h.refreshes)
        yield CounterMetricFamily("kubegpu_refresh_errors", "Failed attempts to read the cluster.",
                                  value=h.refresh_errors)
        mix = InfoMetricFamily("kubegpu_fragmentation_mix", "The workload mix the fragmentation metrics use.")
        shapes = str(s.views.frag.mix_shapes) if s.views is not None else "0"
        mix.add_metric([], {"mix": self.mix_name, "shapes": shapes})
        yield mix
        build = InfoMetricFamily("kubegpu_build", "kubegpu version.")
        build.add_metric([], {"version": __version__})
        yield build


class RebalanceCollector(Collector):
    """`serve --rebalance-journal DIR`: the rebalancer's `kubegpu_rebalance_*` families, same names and
    meaning, from its journal directory (web/rebalance.py). The families are built once per change
    of the summary; the caller refreshes the journal off the event loop before a scrape."""

    def __init__(self, journal) -> None:
        self.journal = journal
        self._built: tuple[int, list] | None = None

    def collect(self):
        version = self.journal.version
        if self._built is None or self._built[0] != version:
            self._built = (version, rebalance_families(self.journal.summary))
        return iter(self._built[1])


def rebalance_families(s) -> list:
    """The families of a RebalanceSummary (HELP texts as rebalance/metrics.py writes them)."""
    moves = CounterMetricFamily("kubegpu_rebalance_moves", "Pod moves by outcome (moved: replacement on the "
                                "planned node).", labels=("outcome",))
    for outcome, n in sorted(s.moves.items()):
        moves.add_metric((outcome,), n)
    stranded = GaugeMetricFamily("kubegpu_rebalance_stranded_gpus", "Stranded GPUs for the cluster's own demand "
                                 "around the last round.", labels=("when",))
    for when, value in (("before", s.stranded_before), ("after", s.stranded_after)):
        if value is not None:
            stranded.add_metric((when,), value)
    rounds = CounterMetricFamily("kubegpu_rebalance_rounds", "Rounds by status.", labels=("status",))
    for status, n in sorted(s.rounds.items()):
        rounds.add_metric((status,), n)
    skipped = CounterMetricFamily("kubegpu_rebalance_skipped_by_budget", "Rounds or plans a budget or window "
                                  "held back.", labels=("reason",))
    for reason, n in sorted(s.skipped_by_budget.items()):
        skipped.add_metric((reason,), n)
    return [moves, CounterMetricFamily("kubegpu_rebalance_gpu_seconds_lost", "Work thrown away by evictions, in "
                                       "GPU-seconds (Prometheus base unit; / 3600 = GPU-hours).",
                                       value=round(s.gpu_hours_lost * 3600, 3)),
            stranded,
            GaugeMetricFamily("kubegpu_rebalance_reservations_held", "Placeholder pods held right now.",
                              value=s.reservations_held),
            rounds, skipped,
            GaugeMetricFamily("kubegpu_rebalance_journal_errors", "Files of the rebalance journal directory "
                              "that could not be read (serve --rebalance-journal).", value=len(s.errors))]


class RequestMetrics:
    """The exporter's own HTTP metrics (route templates as labels: bounded)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("kubegpu_http_requests", "HTTP requests served.", ("route", "method", "code"),
                                registry=registry)
        self.duration = Histogram("kubegpu_http_request_duration_seconds", "HTTP request latency.", ("route",),
                                  registry=registry, buckets=(.005, .025, .1, .5, 2.5))

    def observe(self, route: str, method: str, code: int, seconds: float) -> None:
        self.requests.labels(route, method, str(code)).inc()
        self.duration.labels(route).observe(seconds)


LIVE_TTL = 1.0   # seconds the health/request part of /metrics is reused (scrapes are 15-60 s apart)


class Exposition:
    """/metrics: the model families are encoded once per cluster state and format; the health and
    request families are re-encoded at most once per LIVE_TTL per format and appended."""

    def __init__(self, store: ModelStore, *, pods: bool = False, mix_name: str = "cluster",
                 live_ttl: float = LIVE_TTL) -> None:
        disable_created_metrics()   # no *_created series: half the samples, nothing a dashboard uses
        self.store = store
        self.pods = pods
        self.model = CollectorRegistry(auto_describe=False)
        self.collectors = [FamilyCollector(store, f) for f in MODEL_FAMILIES + (POD_FAMILIES if pods else [])]
        for collector in self.collectors:
            self.model.register(collector)
        self.live = CollectorRegistry(auto_describe=False)
        self.live.register(HealthCollector(store, mix_name))
        self.requests = RequestMetrics(self.live)
        self.live_ttl = live_ttl
        self._live_cache: dict[str, tuple[float, bytes]] = {}

    def render(self, accept: str) -> tuple[bytes, str]:
        """The exposition in the format the scraper asked for (OpenMetrics or classic text)."""
        encoder, content_type = choose_encoder(accept)
        views = self.store.views
        model = self.model_part(views, encoder, content_type) if views is not None else b""
        if content_type.startswith("application/openmetrics-text"):
            model = model.removesuffix(b"# EOF\n")   # one EOF, at the very end
        now = time.monotonic()
        stamp, live = self._live_cache.get(content_type, (0.0, b""))
        if now - stamp >= self.live_ttl or not live:
            live = encoder(self.live)
            self._live_cache[content_type] = (now, live)
        return model + live, content_type

    def model_part(self, views: ClusterViews, encoder, content_type: str) -> bytes:
        return views.cached(("exposition", content_type, self.pods),
                            lambda: encoder(_Built([c.build(views) for c in self.collectors])))

    def warm(self, views: ClusterViews) -> None:
        """Encode both formats for new views before they go live (the first scrape is then cheap)."""
        for accept in ("", "application/openmetrics-text; version=1.0.0"):
            encoder, content_type = choose_encoder(accept)
            self.model_part(views, encoder, content_type)
