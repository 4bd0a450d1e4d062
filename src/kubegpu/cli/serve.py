"""`kubegpu serve`: the dashboard, the JSON API and Prometheus /metrics, from any source."""

from __future__ import annotations

import click

from kubegpu.cli.options import load_prices, load_state, source_options


@click.command()
@source_options
@click.option("--address", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0 inside a pod; the default is this machine only).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="TCP port (0: any free).")
@click.option("--results", "results_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Folder of `kubegpu simulate run -o json` results to show on /simulate.")
@click.option("--metrics-pods", is_flag=True, help="Also export per-pod series (kubegpu_pod_gpus, ...).")
@click.option("--refresh", type=click.FloatRange(min=1), default=300.0, show_default=True, metavar="SECONDS",
              help="Live source: relist the kinds that are not watched this often (nodes, pods and events "
                   "are watched).")
@click.option("--stale-after", type=click.FloatRange(min=1), default=300.0, show_default=True, metavar="SECONDS",
              help="Live source: data older than this is stale (/readyz answers 503).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
              default="warning", show_default=True, help="uvicorn's log level.")
@click.option("--ledger", metavar="PATH", type=click.Path(dir_okay=False),
              help="The decision log of `kubegpu extender --ledger PATH`: shown on /decisions and at /api/decisions.")
@click.option("--rebalance-journal", metavar="DIR", type=click.Path(exists=True, file_okay=False),
              help="The journal directory of `kubegpu rebalance --journal-dir DIR` (read-only): its "
                   "kubegpu_rebalance_* metrics on /metrics and a line on the overview.")
def serve(source, address, port, results_dir, metrics_pods, refresh, stale_after, log_level, ledger,
          rebalance_journal):
    """Serve the GPU dashboard, the JSON API and Prometheus /metrics (read-only).

    /api/status, /api/frag, /api/why[?pod=NS/NAME], /api/defrag?size=K|for=NS/NAME and
    /api/audit return exactly what the command of the same name prints with -o json. With
    --ledger, /decisions and /api/decisions[?pod=NS/NAME] show the extender's decision log. With
    --rebalance-journal, /metrics adds the rebalancer's kubegpu_rebalance_* totals from its ledger.
    Views are computed once per cluster change, never per request. Never changes the cluster
    and never reads Secrets. Binds to 127.0.0.1 unless --address says otherwise.

    \b
    Examples:
      kubegpu serve --demo                      then open http://127.0.0.1:8080/
      kubegpu serve --snapshot dump.json --port 9400
      kubegpu serve --address 0.0.0.0           in a pod (see deploy/helm/kubegpu)
    """
    from kubegpu.web.app import create_app
    from kubegpu.web.serving import run_server
    from kubegpu.web.store import ModelStore

    live = not (source.demo or source.snapshots)
    store = ModelStore(k8s_version=source.k8s_version, namespace=source.namespace, stale_after=stale_after,
                       live=live, prices=load_prices(source))
    if live:
        from functools import partial

        from kubegpu.web.watch import LiveCache, LiveRefresher

        LiveCache(source.kubeconfig, source.context).close()   # no cluster configured: one line, exit 2, now
        LiveRefresher(store, partial(LiveCache, source.kubeconfig, source.context), relist_every=refresh).start()
    else:
        store.install(load_state(source))  # bad input fails here: one line, exit 2
    app = create_app(store, metrics_pods=metrics_pods, results_dir=results_dir, ledger=ledger,
                     rebalance_journal=rebalance_journal)
    click.echo(f"kubegpu serve: http://{address}:{port}/ ({source.describe()}; read-only)", err=True)
    run_server(app, address=address, port=port, log_level=log_level)
