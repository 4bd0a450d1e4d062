"""`kubegpu shadow`: price every bind of a live cluster's schedulers against the policy's choice."""

from __future__ import annotations

import click

from kubegpu.cli.extender import DEFAULT_POLICY, live_server_options
from kubegpu.cli.options import source_options
from kubegpu.errors import UsageError
from kubegpu.placement.registry import POLICY_NAMES


@click.command()
@source_options(namespaces=False)
@click.option("--ledger", metavar="PATH", type=click.Path(dir_okay=False), required=True,
              help="Append one `mode: shadow` decision record per bind (read it with `kubegpu decisions`).")
@click.option("--ledger-max-bytes", type=click.IntRange(min=4096), default=64 << 20, show_default=True,
              metavar="BYTES", help="Rotate the ledger to PATH.1 beyond this size.")
@click.option("--policy", type=click.Choice(POLICY_NAMES), default=DEFAULT_POLICY, show_default=True,
              help="Placement policy whose choice each bind is compared with.")
@click.option("--address", default="127.0.0.1", show_default=True, help="Address of /healthz, /readyz, /metrics.")
@click.option("--port", type=click.IntRange(0, 65535), default=8889, show_default=True, help="TCP port (0: any free).")
@live_server_options
def shadow(source, ledger, ledger_max_bytes, policy, address, port, refresh, stale_after, log_level):
    """Watch a live cluster and record, for every bind by any scheduler, the policy's node too.

    Each record (mode: shadow) holds the node the cluster's scheduler chose, the node --policy
    would have chosen from the same state, and the GPUs the cluster's own workload could not use
    on each after the pod (the FGD measure). /metrics keeps running totals
    (kubegpu_shadow_binds_total, kubegpu_shadow_stranded_gpus_total{by="scheduler|policy"}).
    Writes nothing to the cluster: the evidence for moving pods to the kubegpu-scheduler profile.

    \b
    Examples:
      kubegpu shadow --ledger /var/log/kubegpu/shadow.ndjson
      kubegpu decisions --ledger /var/log/kubegpu/shadow.ndjson --mode shadow --last 50
    """
    if source.demo or source.snapshots:
        raise UsageError("kubegpu shadow watches a live cluster's binds; --demo and --snapshot have none to watch")
    from functools import partial

    from kubegpu.extender.app import create_app
    from kubegpu.extender.ledger import Ledger
    from kubegpu.extender.metrics import ExtenderMetrics
    from kubegpu.extender.service import Extender
    from kubegpu.extender.shadow import ShadowStore, ShadowTotals
    from kubegpu.web.serving import run_server
    from kubegpu.web.watch import LiveCache, LiveRefresher

    book = Ledger(ledger, max_bytes=ledger_max_bytes)
    store = ShadowStore(ledger=book, policy=policy, k8s_version=source.k8s_version, stale_after=stale_after,
                        live=True)
    metrics = ExtenderMetrics(store, book)
    store.totals = ShadowTotals(metrics.registry)
    LiveCache(source.kubeconfig, source.context).close()   # no cluster configured: one line, exit 2, now
    LiveRefresher(store, partial(LiveCache, source.kubeconfig, source.context), relist_every=refresh).start()
    app = create_app(Extender(store, book, metrics, max_work_lost=0.0), verbs=False)
    click.echo(f"kubegpu shadow: {source.describe()}, policy {policy}, records to {ledger}; "
               f"metrics on http://{address}:{port}/metrics", err=True)
    try:
        run_server(app, address=address, port=port, log_level=log_level)
    finally:
        book.close()
