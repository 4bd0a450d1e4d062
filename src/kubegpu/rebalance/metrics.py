"""The rebalancer's Prometheus metrics (`kubegpu_rebalance_*`) and a small /metrics exporter.

Counters and gauges are plain numbers kept by the loop; `exposition()` writes the classic text
format (version 0.0.4). The exporter is a stdlib HTTP server on a daemon thread: the loop is
single-threaded and only needs /metrics and /healthz answered while it sleeps or works.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OUTCOMES = ("moved", "elsewhere", "failed", "not-run")


@dataclass
class RebalanceMetrics:
    moves: dict[str, int] = field(default_factory=lambda: {o: 0 for o in OUTCOMES})
    gpu_hours_lost: float = 0.0
    stranded_before: float | None = None
    stranded_after: float | None = None
    reservations_held: int = 0
    rounds: dict[str, int] = field(default_factory=dict)          # status -> rounds
    skipped_by_budget: dict[str, int] = field(default_factory=dict)  # reason class -> rounds or plans
    leader: int = 0
    events_failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_round(self, status: str) -> None:
        with self.lock:
            self.rounds[status] = self.rounds.get(status, 0) + 1

    def count_skip(self, reason: str) -> None:
        with self.lock:
            self.skipped_by_budget[reason] = self.skipped_by_budget.get(reason, 0) + 1

    def count_move(self, outcome: str, gpu_hours: float) -> None:
        with self.lock:
            self.moves[outcome] = self.moves.get(outcome, 0) + 1
            if outcome in ("moved", "elsewhere", "failed"):
                self.gpu_hours_lost = round(self.gpu_hours_lost + gpu_hours, 6)

    def exposition(self) -> str:
        with self.lock:
            lines = [
                "# HELP kubegpu_rebalance_moves_total Pod moves by outcome (moved: replacement on the planned node).",
                "# TYPE kubegpu_rebalance_moves_total counter",
                *[f'kubegpu_rebalance_moves_total{{outcome="{o}"}} {n}' for o, n in sorted(self.moves.items())],
                "# HELP kubegpu_rebalance_gpu_seconds_lost_total Work thrown away by evictions, in GPU-seconds "
                "(Prometheus base unit; / 3600 = GPU-hours).",
                "# TYPE kubegpu_rebalance_gpu_seconds_lost_total counter",
                f"kubegpu_rebalance_gpu_seconds_lost_total {self.gpu_hours_lost * 3600:g}",
                "# HELP kubegpu_rebalance_stranded_gpus Stranded GPUs for the cluster's own demand around the last "
                "round.",
                "# TYPE kubegpu_rebalance_stranded_gpus gauge",
            ]
            for when, value in (("before", self.stranded_before), ("after", self.stranded_after)):
                if value is not None:
                    lines.append(f'kubegpu_rebalance_stranded_gpus{{when="{when}"}} {value:g}')
            lines += [
                "# HELP kubegpu_rebalance_reservations_held Placeholder pods held right now.",
                "# TYPE kubegpu_rebalance_reservations_held gauge",
                f"kubegpu_rebalance_reservations_held {self.reservations_held}",
                "# HELP kubegpu_rebalance_rounds_total Rounds by status.",
                "# TYPE kubegpu_rebalance_rounds_total counter",
                *[f'kubegpu_rebalance_rounds_total{{status="{s}"}} {n}' for s, n in sorted(self.rounds.items())],
                "# HELP kubegpu_rebalance_skipped_by_budget_total Rounds or plans a budget or window held back.",
                "# TYPE kubegpu_rebalance_skipped_by_budget_total counter",
                *[f'kubegpu_rebalance_skipped_by_budget_total{{reason="{r}"}} {n}'
                  for r, n in sorted(self.skipped_by_budget.items())],
                "# HELP kubegpu_rebalance_leader 1 while this replica holds the Lease.",
                "# TYPE kubegpu_rebalance_leader gauge",
                f"kubegpu_rebalance_leader {self.leader}",
                "# HELP kubegpu_rebalance_events_failed_total Events on moved pods the API server refused.",
                "# TYPE kubegpu_rebalance_events_failed_total counter",
                f"kubegpu_rebalance_events_failed_total {self.events_failed}",
            ]
        return "\n".join(lines) + "\n"


def budget_reason(text: str) -> str:
    """A low-cardinality label for why a budget held a plan or round back."""
    for key, label in (("quiet hours", "quiet-hours"), ("cooldown", "cooldown"), ("--max-moves", "max-moves"),
                       ("per node", "per-node"), ("per-day", "gpu-hours-day"), ("per round", "gpu-hours-round")):
        if key in text:
            return label
    return "other"


class MetricsServer:
    """/metrics and /healthz on address:port (daemon thread)."""

    def __init__(self, metrics: RebalanceMetrics, address: str, port: int) -> None:
        self.metrics = metrics
        handler = _handler(metrics)
        self.httpd = ThreadingHTTPServer((address, port), handler)
        self.httpd.daemon_threads = True

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def start(self) -> "MetricsServer":
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True,
                         name="kubegpu-rebalance-metrics").start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(metrics: RebalanceMetrics) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args) -> None:  # noqa: A002 - no access log on stderr
            pass

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            if self.path.split("?")[0] == "/metrics":
                body, ctype = metrics.exposition().encode(), "text/plain; version=0.0.4; charset=utf-8"
                code = 200
            elif self.path in ("/healthz", "/readyz"):
                body, ctype, code = b"ok\n", "text/plain", 200
            else:
                body, ctype, code = b"not found\n", "text/plain", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
