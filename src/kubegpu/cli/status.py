"""`kubegpu status`: per node, pool, GPU model, GPUs total/allocated/free, pods."""

from __future__ import annotations

import click
from rich.table import Table

from kubegpu.cli.options import load_state, output_option, source_options
from kubegpu.cli.render import emit
from kubegpu.cli.render import literal
from kubegpu.status import StatusReport, cluster_status


def status_table(report: StatusReport, *, wide: bool, gpu_only: bool):
    """A rich Table of the report (GPU nodes first)."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("NODE", "POOL", "GPU MODEL", "GPUS", "ALLOC", "FREE", "SHARING", "PODS", "STATUS"):
        table.add_column(col, justify="right" if col in ("GPUS", "ALLOC", "FREE", "PODS") else "left")
    if wide:
        table.add_column("CPU ALLOC/TOTAL", justify="right")
        table.add_column("MEM GiB ALLOC/TOTAL", justify="right")
        table.add_column("DEVICES (milli used)")
        table.add_column("GPU PODS")
    rows = sorted(report.nodes, key=lambda r: (r.gpus.total == 0, r.pool, r.name))
    for r in rows:
        if gpu_only and not r.gpus.total:
            continue
        state = "Ready" if r.ready else "NotReady"
        if not r.schedulable:
            state += ",SchedulingDisabled"
        sharing = r.sharing if r.sharing == "none" else f"{r.sharing} x{r.replicas}"
        free = f"[green]{r.gpus.free}[/]" if r.gpus.free else "0"
        cells = [literal(r.name), literal(r.pool or "-"), literal(r.gpu_model or "-"), str(r.gpus.total), str(r.gpus.allocated), free,
                 sharing, str(r.pods), state]
        if wide:
            cells += [f"{r.cpu.allocated}/{r.cpu.total}", f"{r.memory_gib.allocated}/{r.memory_gib.total}",
                      " ".join(str(d) for d in r.devices_milli_used) or "-", literal(", ".join(r.gpu_pods) or "-")]
        table.add_row(*cells)
    return table


@click.command()
@source_options
@output_option()
@click.option("--gpu-only", is_flag=True, help="Show only nodes with GPUs.")
def status(source, output, gpu_only):
    """Per node: pool, GPU model, GPUs total / allocated / free (physical), sharing, pods.

    GPUs are counted as physical devices: time-slicing replicas and MIG slices are folded
    back, and `-o wide` shows per-device use on shared nodes.

    \b
    Examples:
      kubegpu status --demo
      kubegpu status --snapshot nodes-and-pods.json -o json
      kubectl gpu status --context prod -o wide
    """
    report = cluster_status(load_state(source))

    def table(con):
        t = report.totals
        if not t.nodes:
            con.print("no nodes in this cluster source")
            return
        con.print(status_table(report, wide=output == "wide", gpu_only=gpu_only))
        if not t.gpu_nodes:
            con.print("\nno GPU nodes (no node advertises nvidia.com/gpu or a MIG resource)")
        con.print(f"\n{t.nodes} nodes, {t.gpu_nodes} with GPUs: {t.gpus.total} GPUs, "
                  f"{t.gpus.allocated} allocated ({t.allocation_ratio:.1%}), {t.gpus.free} free")

    emit(report, output, table)
