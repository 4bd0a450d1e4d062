"""Loop mode: hold the Lease, run a round every interval, serve /metrics; `--once` is one round.

Only the replica holding the Lease runs rounds; the others retry every retry period. Between rounds
the leader renews while it waits (LeaderElector.sleeping). A round that loses the Lease stops where
it is (the executor undoes its own cordons, placeholders are deleted) and the next leader resumes
from the journal directory. ^C/SIGTERM end the loop after the round has cleaned up; the Lease is
released so another replica takes over at once.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Callable

from kubegpu.defrag.executor import ExecutorOptions
from kubegpu.defrag.signals import SignalGuard, Terminated
from kubegpu.rebalance.api import LightkubeRebalanceApi
from kubegpu.rebalance.controller import RebalanceOptions, Rebalancer
from kubegpu.rebalance.leader import LeaderElector, LeaseConfig, LeadershipLost
from kubegpu.rebalance.metrics import MetricsServer, RebalanceMetrics
from kubegpu.rebalance.move import MoveContext
from kubegpu.rebalance.reservation import Owner
from kubegpu.rebalance.round import RoundReport
from kubegpu.sources.documents import load_cluster
from kubegpu.sources.live import read_live


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def live_rebalancer(source, opts: RebalanceOptions, *, reserve_timeout_s: float, owner: Owner | None,
                    identity: str) -> Rebalancer:
    """A Rebalancer acting on the live cluster of `source` (kubeconfig/context)."""
    api = LightkubeRebalanceApi.from_kubeconfig(source.kubeconfig, source.context)
    ctx = MoveContext(api=api, executor=ExecutorOptions(), policy=opts.policy, namespace=opts.placeholder_namespace,
                      ttl_s=opts.ttl_s, reserve_timeout_s=reserve_timeout_s, owner=owner, identity=identity,
                      now=utc_now)
    return Rebalancer(opts, lambda: load_cluster(read_live(kubeconfig=source.kubeconfig, context=source.context)),
                      ctx=ctx, now=utc_now)


def run_loop(rebalancer: Rebalancer, *, interval_s: float, lease_name: str, lease_namespace: str, identity: str,
             metrics_address: str = "127.0.0.1", metrics_port: int = 0,
             on_round: Callable[[RoundReport], None] = lambda r: None,
             sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
             rounds: int | None = None, max_tries: int | None = None) -> int:
    """Run rounds while leading; returns the exit code (128+N after signal N). `rounds` and `max_tries`
    (attempts to lead; 1 when they run out) bound a test."""
    ctx = rebalancer.ctx
    assert ctx is not None, "loop mode acts on a live cluster"
    metrics: RebalanceMetrics = rebalancer.metrics
    elector = LeaderElector(ctx.api, LeaseConfig(namespace=lease_namespace, name=lease_name, identity=identity),
                            clock=clock, now=ctx.now)
    ctx.elector = elector
    server = MetricsServer(metrics, metrics_address, metrics_port).start() if metrics_port else None
    guard = SignalGuard()
    done = tries = 0
    try:
        with guard.running():
            while rounds is None or done < rounds:
                if not elector.try_acquire_or_renew():
                    metrics.leader = 0
                    tries += 1
                    if max_tries is not None and tries >= max_tries:
                        return 1
                    sleep(elector.cfg.retry_period_s)
                    continue
                metrics.leader = 1
                report = rebalancer.round()
                done += 1
                on_round(report)
                if report.signal:
                    return 128 + report.signal
                if rounds is not None and done >= rounds:
                    break
                try:
                    elector.sleeping(sleep)(interval_s)
                except LeadershipLost:
                    metrics.leader = 0
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    finally:
        metrics.leader = 0
        elector.release()
        if server is not None:
            server.stop()
    return 0
