"""`kubegpu status`: per node, pool, GPU model, GPUs total/allocated/free, pods."""

from __future__ import annotations

import click

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import load_state, output_option, source_options
from kubegpu.cli.render import emit
from kubegpu.cli.render import literal
from kubegpu.model.text import counted
from kubegpu.status import StatusReport, cluster_status


def status_columns(report: StatusReport, *, wide: bool) -> list[Col]:
    scoped = report.namespace is not None
    cols = [Col("NODE"), Col("POOL", drop=2), Col("GPU MODEL", drop=3), Col("GPUS", right=True),
            Col("ALLOC", right=True), Col("FREE", right=True)]
    if scoped:
        cols.append(Col("NS GPUS", right=True))
    cols += [Col("SHARING", drop=4), Col("PODS", right=True, drop=1), Col("STATUS", drop=5)]
    if wide:
        cols += [Col("CPU ALLOC/TOTAL", right=True), Col("MEM GiB ALLOC/TOTAL", right=True),
                 Col("DEVICES (milli used)"), Col("GPU PODS", wrap=True)]
    return cols


def status_rows(report: StatusReport, *, wide: bool, gpu_only: bool) -> list[list[str]]:
    """Table cells, GPU nodes first."""
    out = []
    for r in sorted(report.nodes, key=lambda r: (r.gpus.total == 0, r.pool, r.name)):
        if gpu_only and not r.gpus.total:
            continue
        state = "Ready" if r.ready else "NotReady"
        if not r.schedulable:
            state += ",SchedulingDisabled"
        sharing = r.sharing if r.sharing == "none" else f"{r.sharing} x{r.replicas}"
        free = f"[green]{r.gpus.free}[/]" if r.gpus.free else "0"
        cells = [literal(r.name), literal(r.pool or "-"), literal(r.gpu_model or "-"), str(r.gpus.total), str(r.gpus.allocated), free]
        if report.namespace is not None:
            cells.append(str(r.namespace_gpus))
        cells += [sharing, str(r.pods), state]
        if wide:
            cells += [f"{r.cpu.allocated}/{r.cpu.total}", f"{r.memory_gib.allocated}/{r.memory_gib.total}",
                      " ".join(str(d) for d in r.devices_milli_used) or "-", literal(", ".join(r.gpu_pods) or "-")]
        out.append(cells)
    return out


@click.command()
@source_options(k8s_version=False)  # no kube-scheduler wording here
@output_option()
@click.option("--gpu-only", is_flag=True, help="Show only nodes with GPUs.")
def status(source, output, gpu_only):
    """Per node: pool, GPU model, GPUs total / allocated / free (physical), sharing, pods.

    GPUs are counted as physical devices: time-slicing replicas and MIG slices are folded
    back, and `-o wide` shows per-device use. Nodes are cluster-scoped, so every node is listed;
    with -n NS the PODS column and `gpu_pods` count only pods of NS, and a column shows the
    GPUs that NS holds on each node. Narrow terminals drop columns (SHARING, POOL, ...) rather
    than cut a name; -o wide shows everything.

    \b
    Examples:
      kubegpu status --demo
      kubegpu status --demo -n inference --gpu-only
      kubegpu status --snapshot nodes-and-pods.json -o json
      kubectl gpu status --context prod -o wide
    """
    state = load_state(source)
    report = cluster_status(state, scope=source.scope(state))
    wide = output == "wide"

    def table(con):
        show(con, status_columns(report, wide=wide), status_rows(report, wide=wide, gpu_only=gpu_only), wide=wide)
        t = report.totals
        if not t.nodes:
            con.print("no nodes in this cluster source")
            return
        con.print(f"\n{counted(t.nodes, 'node')}, {t.gpu_nodes} with GPUs: {counted(t.gpus.total, 'GPU')}, "
                  f"{t.gpus.allocated} allocated ({t.allocation_ratio:.1%}), {t.gpus.free} free", soft_wrap=True)
        if report.namespace is not None:
            held = sum(r.namespace_gpus for r in report.nodes)
            pods = sum(r.pods for r in report.nodes)
            con.print(f"namespace {report.namespace} (NS GPUS): {counted(pods, 'pod')} bound to nodes, holding "
                      f"{counted(held, 'GPU')}", soft_wrap=True)
        if not t.gpu_nodes:
            con.print("no GPU nodes (no node advertises nvidia.com/gpu or a MIG resource)")

    emit(report, output, table)
