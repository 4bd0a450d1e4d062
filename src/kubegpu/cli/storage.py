"""`kubegpu storage estimate`: model load time per storage class."""

from __future__ import annotations

import click

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import load_state, output_option, source_options
from kubegpu.cli.render import emit
from kubegpu.cli.render import literal


@click.group()
def storage():
    """Storage for model weights: how long a model takes to load from each class."""


@storage.command()
@click.option("--size", required=True, metavar="SIZE", help="Model size: 14GB, 13GiB, 700MB, or a Kubernetes quantity "
                   "(14G, 13Gi, 1e9).")
@click.option("--class", "classes", multiple=True, metavar="NAME=THROUGHPUT",
              help="Throughput of a class or StorageClass (nfs=200MB/s, local-nvme=3GB/s, fsx-lustre=1GB/s). "
                   "Repeatable.")
@source_options(namespaces=False, k8s_version=False)
@output_option()
def estimate(size, classes, source, output):
    """Load time of one model per storage class, from its size and each class's throughput.

    Without a cluster source: the built-in classes (NFS 200 MB/s, local NVMe 3 GB/s, parallel
    filesystems such as Lustre 1 GB/s, other network filesystems 200 MB/s, object store 500 MB/s,
    network block 1 GB/s; one reader each, see docs/audit-checks.md). With
    --demo/--snapshot/--kubeconfig/--context: each StorageClass of the cluster, classified by its
    provisioner and parameters. SIZE needs a unit (a bare number is refused).

    \b
    Examples:
      kubegpu storage estimate --size 14GB                  # NFS 70 s, local NVMe ~5 s
      kubegpu storage estimate --size 140GB --class nfs=1GB/s
      kubegpu storage estimate --size 14GB --demo -o json
    """
    from kubegpu.storage.throughput import estimate as estimate_load
    from kubegpu.storage.throughput import parse_class_overrides, parse_size

    size_bytes = parse_size(size, field="--size")
    overrides = parse_class_overrides(classes)
    state = load_state(source) if (source.demo or source.snapshots or source.kubeconfig or source.context) else None
    result = estimate_load(size_bytes, overrides, state)

    def table(con):
        wide = output == "wide"
        cols = [Col("STORAGE"), Col("KIND"), Col("MB/s", right=True), Col("LOAD TIME", right=True),
                Col("PROVISIONER", drop=1)]
        rows = [[literal(r.storage), r.kind, f"{r.throughput_mb_s:g}", f"{r.seconds:g} s", literal(r.provisioner or "-")]
                for r in result.estimates]
        show(con, cols, rows, wide=wide)
        con.print(f"\nModel {result.size_gb:g} GB; time = size / sustained read throughput (one reader).")

    emit(result, output, table)
