"""`kubegpu extender`: kubegpu's placement inside kube-scheduler, as an HTTP extender."""

from __future__ import annotations

import click

from kubegpu.cli.options import load_state, source_options
from kubegpu.placement.registry import POLICY_NAMES

# The policy the extender scores with unless --policy says otherwise. `fgd` because it is never
# worse than itself: `kubegpu` over-reserves pinned GPU models on traces where few pods pin one
# (issue 20); the choice is being re-evaluated, so it lives in this one constant.
DEFAULT_POLICY = "fgd"


def live_server_options(fn):
    """--refresh, --stale-after and --log-level of a long-running server fed by the live watch."""
    for option in reversed([
        click.option("--refresh", type=click.FloatRange(min=1), default=300.0, show_default=True, metavar="SECONDS",
                     help="Live source: relist the kinds that are not watched this often."),
        click.option("--stale-after", type=click.FloatRange(min=1), default=300.0, show_default=True,
                     metavar="SECONDS", help="Live source: data older than this is stale (/readyz answers 503)."),
        click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
                     default="warning", show_default=True, help="uvicorn's log level."),
    ]):
        fn = option(fn)
    return fn


@click.command()
@source_options(namespaces=False)
@click.option("--address", default="127.0.0.1", show_default=True,
              help="Address to listen on (the chart runs it as a sidecar of kube-scheduler on 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=8888, show_default=True, help="TCP port (0: any free).")
@click.option("--prefix", default="", metavar="PATH",
              help="URL path prefix of the verbs: with --prefix kubegpu, urlPrefix is http://HOST:PORT/kubegpu.")
@click.option("--policy", type=click.Choice(POLICY_NAMES), default=DEFAULT_POLICY, show_default=True,
              help="Placement policy whose choice /prioritize scores 10 (see docs/policies.md).")
@click.option("--ledger", metavar="PATH", type=click.Path(dir_okay=False),
              help="Append one decision record per call to this NDJSON file (read it with `kubegpu decisions`).")
@click.option("--ledger-max-bytes", type=click.IntRange(min=4096), default=64 << 20, show_default=True,
              metavar="BYTES", help="Rotate the ledger to PATH.1 beyond this size.")
@click.option("--max-work-lost", type=click.FloatRange(min=0), default=8.0, show_default=True, metavar="GPU_HOURS",
              help="/preempt drops a node whose victims would lose more work than this since their last checkpoint.")
@click.option("--assume-ttl", type=click.FloatRange(min=0), default=30.0, show_default=True, metavar="SECONDS",
              help="How long the node scored top counts the pod as placed before the watch shows the bind.")
@click.option("--max-body", type=click.IntRange(min=1024), default=40 << 20, show_default=True, metavar="BYTES",
              help="Largest request body accepted (413 beyond).")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=None, help="Seed of the random policy.")
@click.option("--events", is_flag=True,
              help="Live source only: post an events.k8s.io/v1 Event (reason KubegpuDecision) on the pod that "
                   "names its decision record (needs RBAC to create events). Off: the extender writes nothing.")
@click.option("--events-qps", type=click.FloatRange(min=0.1), default=5.0, show_default=True, metavar="QPS",
              help="Most Events posted per second (burst twice that); more are queued, then dropped and counted.")
@live_server_options
def extender(source, address, port, prefix, policy, ledger, ledger_max_bytes, max_work_lost, assume_ttl, max_body,
             seed, events, events_qps, refresh, stale_after, log_level):
    """Serve the kube-scheduler HTTP extender protocol (filter, prioritize, preempt).

    POST /filter passes only nodes the scheduling core passes and the GPU rules kube-scheduler
    cannot see (GPU model pins, time-sliced devices, room on one device, whole gangs); POST
    /prioritize scores the policy's choice 10 and everything else lower (0-10); POST /preempt
    drops candidates that would split a running gang or lose more than --max-work-lost. Never
    answers a node name it was not sent; never binds; writes nothing to the cluster unless
    --events (then one short Event per decision on the pod, pointing at the ledger record).
    /healthz, /readyz and /metrics as `kubegpu serve`. Binds to 127.0.0.1 unless --address says
    otherwise. Configure kube-scheduler with nodeCacheCapable: true (names only) at scale.

    \b
    Examples:
      kubegpu extender --demo --ledger decisions.ndjson
      kubegpu extender --policy kubegpu --prefix kubegpu      (live: your kubeconfig's cluster)
      kubegpu decisions ml/train-0 --ledger decisions.ndjson
    """
    from kubegpu.extender.app import create_app
    from kubegpu.extender.ledger import Ledger
    from kubegpu.extender.metrics import ExtenderMetrics
    from kubegpu.extender.service import Extender
    from kubegpu.extender.state import ExtenderStore
    from kubegpu.web.serving import run_server

    live = not (source.demo or source.snapshots)
    if events and not live:
        raise click.UsageError("--events posts to a live cluster: drop --demo/--snapshot, or drop --events")
    store = ExtenderStore(policy=policy, k8s_version=source.k8s_version, stale_after=stale_after, live=live,
                          assume_ttl=assume_ttl, seed=seed)
    if live:
        from functools import partial

        from kubegpu.extender.live import ExtenderLiveCache
        from kubegpu.web.watch import LiveCache, LiveRefresher

        LiveCache(source.kubeconfig, source.context).close()   # no cluster configured: one line, exit 2, now
        LiveRefresher(store, partial(ExtenderLiveCache, source.kubeconfig, source.context, store=store),
                      relist_every=refresh).start()
    else:
        store.install(load_state(source))   # bad input fails here: one line, exit 2
    book = Ledger(ledger, max_bytes=ledger_max_bytes)
    metrics = ExtenderMetrics(store, book)
    poster = None
    if events:
        from kubegpu.extender.events import EventPoster, lightkube_post

        poster = EventPoster(lightkube_post(source.kubeconfig, source.context), qps=events_qps,
                             burst=max(1, int(2 * events_qps)), ledger_path=ledger)
        book.listeners.append(poster.offer)
        metrics.count_events(poster.counts)
    service = Extender(store, book, metrics, max_work_lost=max_work_lost)
    app = create_app(service, prefix=prefix, max_body=max_body)
    shown = ("/" + prefix.strip("/")) if prefix.strip("/") else ""
    click.echo(f"kubegpu extender: http://{address}:{port}{shown}/{{filter,prioritize,preempt}} "
               f"({source.describe()}; policy {policy})", err=True)
    try:
        run_server(app, address=address, port=port, log_level=log_level)
    finally:
        if poster is not None:
            poster.close()
        book.close()
