"""`kubegpu frag`: what fits now, which free GPUs are stranded, and the FGD fragmentation measure."""

from __future__ import annotations

import io

import click
from rich.table import Table

from kubegpu.cli.options import load_state, output_option, source_options
from kubegpu.cli.render import emit, write_atomic
from kubegpu.cli.render import literal
from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement
from kubegpu.fragmentation.report import FragReport, frag_report
from kubegpu.fragmentation.shapes import load_mix


def frag_table(report: FragReport, *, wide: bool):
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("POOL", "NODES", "GPUS", "ALLOC", "FREE", "FIT 1", "FIT 2", "FIT 4", "FIT 8", "FRAG GPUs", "FRAG RATE"):
        table.add_column(col, justify="left" if col == "POOL" else "right")
    for row in report.pools:
        if not row.gpus.total and not wide:
            continue
        f = row.fits_by_size
        table.add_row(literal(row.pool or "-"), str(row.nodes), str(row.gpus.total), f"{row.gpus.allocated:g}",
                      f"{row.gpus.free:g}", *(str(f[k]) for k in ("1", "2", "4", "8")),
                      f"{row.fragmentation.amount_milli_gpu / 1000:.2f}", f"{row.fragmentation.rate:.1%}")
    return table


@click.command()
@source_options
@output_option()
@click.option("--mix", "mix_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Workload mix to measure against: an openb pod-list CSV or a JSON list of "
                   "{cpu_milli, num_gpu, gpu_milli, gpu_model, weight} (default: the cluster's own pods).")
@click.option("--plot", "plot_file", metavar="FILE.png", type=click.Path(dir_okay=False),
              help="Also draw every GPU node's devices (allocated / free / stranded) to a PNG.")
def frag(source, output, mix_file, plot_file):
    """GPU fragmentation: k-GPU pods that fit now, stranded GPUs, and the FGD measure.

    GPUs are physical devices (time-slicing replicas and MIG slices folded back).
    fits_by_size[k] counts k-GPU pods placeable at once on entirely free devices of
    schedulable nodes (capped by CPU when the mix has k-GPU pods); stranded_by_size[k] is the
    free GPU a k-GPU pod cannot use. `fragmentation` is the FGD measure (Weng et al., ATC '23)
    against the workload mix: the expected idle GPU that a task drawn from the mix could not use.

    \b
    Examples:
      kubegpu frag --demo
      kubegpu frag --snapshot dump.json -o json --mix mix.json --plot gpus.png
    """
    cluster = load_state(source)
    mix = load_mix(mix_file) if mix_file else cluster_mix(cluster)
    state = cluster_placement(cluster)
    report = frag_report(state, mix)
    if plot_file:
        from kubegpu.fragmentation.plot import frag_figure

        buffer = io.BytesIO()
        frag_figure(state, mix).savefig(buffer, format="png", dpi=120)
        write_atomic(plot_file, buffer.getvalue())

    def table(con):
        g, f = report.gpus, report.fragmentation
        if not g.total:
            con.print("no GPU nodes: nothing to fragment (no node advertises nvidia.com/gpu or a MIG resource)")
            return
        con.print(frag_table(report, wide=output == "wide"))
        fits = ", ".join(f"{k}-GPU: {v}" for k, v in report.fits_by_size.items())
        stranded = ", ".join(f"{k}-GPU: {v:g}" for k, v in report.stranded_by_size.items())
        con.print(f"\n{g.total} GPUs, {g.allocated:g} allocated ({report.allocation_ratio:.1%}), {g.free:g} free")
        con.print(f"pods that fit now   {fits}")
        con.print(f"stranded GPUs       {stranded}")
        con.print(f"fragmentation (FGD) {f.amount_milli_gpu / 1000:.2f} GPUs = {f.rate:.1%} of idle GPU "
                  f"(mix of {report.mix_shapes} task shapes)")
        if plot_file:
            con.print(f"device map written to {plot_file}")

    emit(report, output, table)
