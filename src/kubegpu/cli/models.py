"""`kubegpu models`: model weights on node-local disks, verified, versioned, rolled out when ready."""

from __future__ import annotations

import sys

import click

from kubegpu.cli.options import output_option, source_options
from kubegpu.cli.columns import Col, show
from kubegpu.cli.render import emit, literal


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
    from kubegpu.modelcache.kube import KubeEdge

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
    from kubegpu.modelcache.pull import PullFailed, pull as run_pull
    from kubegpu.modelcache.spec import load_cache_file, quantity_bytes

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


def _human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _choose_cache(cache_file, model, source):
    """The ModelCache to plan: --cache FILE, else the one (or --model) of the cluster source."""
    from kubegpu.errors import UsageError
    from kubegpu.modelcache.spec import decode_cache, load_cache_file

    if cache_file:
        return load_cache_file(cache_file)
    from kubegpu.cli.options import load_state

    state = load_state(source)
    from kubegpu.modelcache.plan import caches_in_state

    bodies = caches_in_state(state)
    if not bodies and not (source.demo or source.snapshots):
        from kubegpu.modelcache.kube import KubeEdge

        bodies = KubeEdge.connect(source.kubeconfig, source.context).list_caches()
    if model:
        bodies = [b for b in bodies if (b.get("metadata") or {}).get("name") == model]
    if len(bodies) != 1:
        names = sorted((b.get("metadata") or {}).get("name", "?") for b in bodies)
        what = f"{len(bodies)} ModelCaches ({', '.join(names)})" if bodies else "no ModelCache"
        raise UsageError(f"{what} in {source.describe()}" + (f" named {model!r}" if model else "")
                         + ": pass --cache FILE" + (" or --model NAME" if len(bodies) > 1 else ""))
    return decode_cache(bodies[0], where=source.describe())


def _figures(figures_file, classes) -> dict[str, float]:
    from kubegpu.storage.throughput import parse_class_overrides
    from kubegpu.errors import InputError

    out: dict[str, float] = {}
    if figures_file:
        import json

        try:
            data = json.loads(open(figures_file).read())
            out.update({str(k): float(v) for k, v in data["throughputs"].items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise InputError(f"not a `kubegpu models bench -o json` file: {err}", where=figures_file,
                             field="throughputs") from None
        for k, v in out.items():
            if not 0 < v < float("inf"):
                raise InputError(f"{v!r} is not a positive throughput in bytes/s", where=figures_file,
                                 field=f"throughputs.{k}")
    out.update(parse_class_overrides(classes))
    return out


@models.command()
@click.option("--cache", "cache_file", metavar="FILE", help="The ModelCache (default: the cluster's).")
@click.option("--model", metavar="NAME", help="Which of the cluster's ModelCaches to plan.")
@click.option("--class", "classes", multiple=True, metavar="PATH=THROUGHPUT",
              help="Throughput of a storage path: nfs=200MB/s, local-nvme=3GB/s, object-store, peer. Repeatable.")
@click.option("--figures", "figures_file", metavar="FILE", help="Throughputs measured by `kubegpu models bench -o json`.")
@source_options(namespaces=False, k8s_version=False)
@output_option()
def plan(cache_file, model, classes, figures_file, source, output):
    """Per target node: what it holds, what it needs, bytes to move, disk headroom, ETA; when the rollout may start.

    Read-only. ETAs come from documented per-path throughputs (NFS 200 MB/s, local NVMe 3 GB/s,
    object store 500 MB/s, peer copy 1.25 GB/s) or figures you measured (`--figures`, `--class`),
    capped by the cache's bandwidth limits; nodes pull `spec.fanOut.maxNodesPulling` at a time.

    \b
    Examples:
      kubegpu models plan --cache llama.yaml --snapshot cluster.json
      kubegpu models plan --model llama -o json            # the live cluster's ModelCache
      kubegpu models plan --cache llama.yaml --demo --class nfs=1GB/s
    """
    from kubegpu.cli.options import load_state
    from kubegpu.modelcache.plan import plan as make_plan

    cache = _choose_cache(cache_file, model, source)
    result = make_plan(cache, load_state(source), _figures(figures_file, classes))

    def table(con):
        cols = [Col("NODE"), Col("STATE"), Col("HOLDS", drop=1), Col("TO MOVE", right=True), Col("START", right=True),
                Col("READY IN", right=True), Col("HEADROOM", right=True, drop=2)]
        rows = [[literal(n.name), literal(n.state), literal(n.holds or "-"), _human_bytes(n.bytes_needed),
                 f"{n.start_seconds:g} s", f"{n.eta_seconds:g} s", _human_bytes(n.headroom_bytes)]
                for n in result.nodes]
        con.print(f"{cache.ref} -> {result.version}: {_human_bytes(result.total_bytes)} to move from "
                  f"{result.source_path} at {_human_bytes(result.rate_bytes_per_second)}/s per node, "
                  f"{result.max_nodes_pulling} nodes at a time")
        show(con, cols, rows, wide=output == "wide")
        ready = "never (see notes)" if result.ready_at_seconds is None else f"in {result.ready_at_seconds:g} s"
        con.print(f"\nRollout may start {ready}: {result.required_nodes} of {result.copies['total']} nodes "
                  f"verified (now {result.copies['available']}).")
        for w in result.workloads:
            con.print(f"{w.workload} on {w.version or '?'}: restarts {len(w.restarts)} pods"
                      + (f" ({', '.join(w.restarts[:5])}{', ...' if len(w.restarts) > 5 else ''})" if w.restarts
                         else ""))
        for note in result.notes:
            con.print(f"note: {note}")

    emit(result, output, table)


def _cluster_options(fn):
    fn = click.option("--context", metavar="NAME", help="Kubeconfig context (default: current-context).")(fn)
    fn = click.option("--kubeconfig", metavar="FILE",
                      help="Kubeconfig (default: $KUBECONFIG, ~/.kube/config, else the in-cluster account).")(fn)
    fn = click.option("--interval", default=30.0, show_default=True, metavar="SECONDS",
                      help="Seconds between turns.")(fn)
    return click.option("--once", is_flag=True, help="One turn, then exit (0: all good, 1: not yet / findings).")(fn)


def _log(line: str) -> None:
    click.echo(line, err=True)


@models.command()
@click.option("--node", envvar="NODE_NAME", required=True, metavar="NAME",
              help="This node (default: $NODE_NAME, from the downward API).")
@click.option("--root", metavar="DIR", help="Where the caches' spec.root is mounted in this container.")
@_cluster_options
def agent(node, root, once, interval, kubeconfig, context):
    """The node agent (a DaemonSet): pull every ModelCache that targets this node, report, untaint.

    Reports Pending|Downloading|Verified|Error with bytes done to the ModelCache status; at most
    spec.fanOut.maxNodesPulling nodes download at once; removes the kubegpu.io/model-not-ready
    taint once every cache targeting the node is verified here. RBAC: deploy/rbac/kubegpu-models-agent.yaml.
    """
    from kubegpu.modelcache.agent import Agent, run
    from kubegpu.modelcache.kube import KubeEdge

    sys.exit(run(Agent(KubeEdge.connect(kubeconfig, context), node, root, log=_log), once=once, interval=interval))


@models.command()
@click.option("--no-taint", is_flag=True, help="Do not taint target nodes that hold no copy yet.")
@_cluster_options
def controller(no_taint, once, interval, kubeconfig, context):
    """The rollout gate (a Deployment): point gated workloads at a version only when the nodes hold it.

    When the readiness rule holds (all target nodes, or spec.readiness.minNodes) for spec.version,
    patches each gated Deployment/StatefulSet/LeaderWorkerSet (annotation or env var) so its normal
    rolling update starts; reports replicas on mixed versions beyond spec.readiness.maxMixedSeconds;
    taints target nodes without any copy with kubegpu.io/model-not-ready:NoSchedule.
    RBAC: deploy/rbac/kubegpu-models-controller.yaml.
    """
    from kubegpu.modelcache.controller import Controller, run
    from kubegpu.modelcache.kube import KubeEdge

    edge = KubeEdge.connect(kubeconfig, context)
    sys.exit(run(Controller(edge, taint_new_nodes=not no_taint, log=_log), once=once, interval=interval))


@models.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--name", required=True, help="The model (metadata.name).")
@click.option("--version", "version", required=True, help="The revision name (spec.version).")
@click.option("--url", help="HTTP(S) base URL the files are served under.")
@click.option("--path", "shared_path", help="Shared folder the nodes mount, holding the files.")
@output_option(default="yaml")
def manifest(folder, name, version, url, shared_path, output):
    """Write a ModelCache for the files of FOLDER: every file's path, size and sha256.

    \b
      kubegpu models manifest ./llama-3-8b --name llama-3-8b --version rev1 --url https://models/llama/rev1/
    """
    from kubegpu.errors import UsageError
    from kubegpu.modelcache.spec import API_VERSION, KIND, decode_cache
    from kubegpu.modelcache.store import sha256_of
    from pathlib import Path

    if bool(url) == bool(shared_path):
        raise UsageError("give exactly one source: --url or --path")
    base = Path(folder)
    files = [{"path": p.relative_to(base).as_posix(), "size": p.stat().st_size, "sha256": sha256_of(p).hexdigest()}
             for p in sorted(base.rglob("*")) if p.is_file()]
    obj = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name},
           "spec": {"version": version, "files": files, "source": {"url": url} if url else {"path": shared_path}}}
    decode_cache(obj, where=folder)  # the same checks a reader applies
    emit(obj, output)


@models.command()
@click.option("--root", required=True, type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="A folder on the local disk the copies live on.")
@click.option("--size", default="1Gi", show_default=True, metavar="SIZE", help="Bytes to write and read back.")
@click.option("--cache", "cache_file", metavar="FILE", help="Also pull this ModelCache once (into a scratch "
                                                            "folder, removed) to measure its source path.")
@output_option()
def bench(root, size, cache_file, output):
    """Measure this node's local-disk and source throughput, for `kubegpu models plan --figures`.

    \b
      kubegpu models bench --root /mnt/nvme --size 2Gi --cache llama.yaml -o json > figures.json
      kubegpu models plan --cache llama.yaml --figures figures.json
    """
    from pathlib import Path

    from kubegpu.modelcache.bench import measure
    from kubegpu.modelcache.spec import load_cache_file, quantity_bytes

    cache = load_cache_file(cache_file) if cache_file else None
    result = measure(Path(root), quantity_bytes(size, None, "--size") or 0, cache)

    def table(con):
        con.print(f"local disk {root}: write+fsync {_human_bytes(result['local_write_bytes_per_second'])}/s, "
                  f"read {_human_bytes(result['local_read_bytes_per_second'])}/s (may be the page cache)")
        for path, rate in result["throughputs"].items():
            con.print(f"  {path}: {_human_bytes(rate)}/s")

    emit(result, output, table)
