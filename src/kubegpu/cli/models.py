"""`kubegpu models`: model weights on node-local disks, verified, versioned, rolled out when ready."""

from __future__ import annotations

import sys

import click

from kubegpu.cli.options import output_option, source_options
from kubegpu.cli.render import emit


@click.group()
def models():
    """Model weights pre-distributed to every GPU node's local disk (kubegpu.io/v1alpha1 ModelCache).

    \b
    A ModelCache names a model, its version (a revision plus a manifest of files with sizes and
    sha256 digests), the source (HTTP(S) with Range, S3-compatible, or a mounted folder), the
    target nodes and the workloads whose rollout waits until the nodes hold the version.

    \b
      kubegpu models plan --cache llama.yaml --demo     what each node must move, and when it is ready
      kubegpu models pull --cache llama.yaml --root /mnt/nvme/models    one node's pull, verified
      kubegpu models agent / controller                 the DaemonSet and the rollout gate
    """


def _in_use_on_node(node: str | None, cache, kubeconfig: str | None, context: str | None) -> set[str] | None:
    if not node:
        return None
    from kubegpu.models.kube import KubeEdge

    return KubeEdge.connect(kubeconfig, context).versions_in_use(cache, node)


@models.command()
@click.option("--cache", "cache_file", required=True, metavar="FILE", help="The ModelCache (YAML or JSON).")
@click.option("--root", metavar="DIR", help="Local root of the copies (default: the cache's spec.root).")
@click.option("--node", metavar="NAME",
              help="This node's name: old versions are removed only when no pod of this node uses them "
                   "(read from the cluster). Without it, the version `current` pointed at is kept.")
@click.option("--rate", metavar="BYTES/S", help="Bandwidth cap (quantity: 200M, 1Gi); default: the cache's.")
@click.option("--kubeconfig", metavar="FILE", help="Kubeconfig for --node.")
@click.option("--context", metavar="NAME", help="Kubeconfig context for --node.")
@output_option()
def pull(cache_file, root, node, rate, kubeconfig, context, output):
    """Pull one node's copy of the cache's version, verify every file, then switch `current`.

    Downloads resume from `.partial` files; every file's sha256 must match the manifest; the
    version folder appears by one atomic rename and `ROOT/<model>/current` is swapped only when
    the whole version verifies. A kill at any moment leaves the previous version usable; run it
    again to resume. Exit 0 only when the version verifies; 1 when it could not be pulled (the
    disk-space guard refused, the source failed after retries); 2 on bad input (manifest,
    digest, size, redirect to another host).
    """
    from kubegpu.models.pull import PullFailed, pull as run_pull
    from kubegpu.models.spec import load_cache_file, quantity_bytes

    cache = load_cache_file(cache_file)
    cap = quantity_bytes(rate, None, "--rate") if rate else None
    in_use = _in_use_on_node(node, cache, kubeconfig, context)
    try:
        result = run_pull(cache, root or cache.spec.root, in_use=in_use, rate=cap)
    except PullFailed as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(1)

    def table(con):
        verb = "switched to" if result.switched else "already on"
        con.print(f"{cache.ref}: {verb} {result.version} (verified, {result.bytes_total} bytes, "
                  f"{result.bytes_fetched} fetched) at {result.root}/{result.model}/current"
                  + (f"; removed {', '.join(result.removed)}" if result.removed else ""))

    emit(result.as_dict(), output, table)
