"""`kubegpu frag`: what fits now, which free GPUs are stranded, and the FGD fragmentation measure."""

from __future__ import annotations

import click

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import load_prices, load_state, output_option, source_options
from kubegpu.cli.render import emit, literal
from kubegpu.cli.writer import write_atomic
from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_mix, cluster_placement
from kubegpu.fragmentation.report import FragReport, frag_report
from kubegpu.fragmentation.shapes import load_mix
from kubegpu.model.text import counted
from kubegpu.guards.bounded import path_text
from kubegpu.money.amount import money_text
from kubegpu.money.cluster import cluster_prices
from kubegpu.money.stranded import FragCost, frag_cost, frag_json


def demand_text(report: FragReport) -> str:
    """Which demand the headline uses, in words."""
    d = report.demand
    shares = ", ".join(f"{k}-GPU {v:.0%}" for k, v in d.gpu_share_by_size.items())
    if d.source.startswith("file:"):
        whose = f"the mix in {d.source[5:]}"
    elif d.source == "default":
        whose = "1, 2, 4 and 8-GPU pods alike (no GPU pods to learn the demand from)"
    elif d.namespace:
        whose = f"the GPU pods of namespace {d.namespace}"
    else:
        whose = "this cluster's GPU pods"
    return f"{whose} (requested GPUs by pod size: {shares})"


def headline_lines(report: FragReport) -> list[str]:
    """The numbers an operator reads first: stranded for the demand, the largest pod that fits."""
    g, s = report.gpus, report.stranded_for_demand
    fits = ", ".join(f"{k}-GPU: {v}" for k, v in report.fits_by_size.items())
    stranded = ", ".join(f"{k}-GPU: {v:g}" for k, v in report.stranded_by_size.items())
    largest = counted(s.largest_fit, "GPU") if s.largest_fit else "none (no entirely free GPU)"
    return [
        f"{g.total} GPUs, {g.allocated:g} allocated ({report.allocation_ratio:.1%}), {g.free:g} free",
        f"stranded for demand  {s.gpus:.2f} of {counted(g.free, 'free GPU')} ({s.rate:.0%}) cannot be used by "
        f"{demand_text(report)}",
        f"largest pod that fits {largest}",
        f"pods that fit now    {fits}",
        f"stranded GPUs        {stranded}  (free GPUs a k-GPU pod cannot use)",
        f"FGD measure          {report.fragmentation.amount_milli_gpu / 1000:.2f} GPUs = "
        f"{report.fragmentation.rate:.1%} of idle GPU (Weng et al. ATC '23; mix of {report.demand.shapes} task "
        "shapes, CPU-only included)",
    ]


def cost_lines(cost: FragCost) -> list[str]:
    """What the stranded GPUs cost, per day and per pool, and where the price came from."""
    s = cost.stranded
    if s.per_day is None:
        head = f"stranded cost         {s.gpu_hours_per_day:g} GPU-hours/day idle and unusable (no price: {cost.prices.note})"
        return [head]
    pools = ", ".join(f"{p.pool or '-'} {money_text(p.per_day)}" for p in cost.pools if p.stranded_gpus > 0)
    return [f"stranded cost        {money_text(s.per_day)} ({money_text(s.per_hour)}; {s.gpu_hours_per_day:g} "
            f"GPU-hours/day) if the cluster stays as it is" + (f"; by pool: {pools}" if pools else ""),
            f"price                {cost.prices.note}: {'; '.join(cost.prices.sources)}"]


def frag_table_rows(report: FragReport, *, wide: bool) -> tuple[list[Col], list[list[str]]]:
    cols = [Col("POOL"), Col("NODES", right=True, drop=2), Col("GPUS", right=True), Col("ALLOC", right=True),
            Col("FREE", right=True), Col("STRANDED", right=True), Col("FIT 1", right=True),
            Col("FIT 2", right=True), Col("FIT 4", right=True), Col("FIT 8", right=True),
            Col("FGD GPUS", right=True, drop=3), Col("FGD RATE", right=True, drop=1)]
    rows = []
    for row in report.pools:
        if not row.gpus.total and not wide:
            continue
        f = row.fits_by_size
        rows.append([literal(row.pool or "-"), str(row.nodes), str(row.gpus.total), f"{row.gpus.allocated:g}",
                     f"{row.gpus.free:g}", f"{row.stranded_for_demand.gpus:.2f}", *(str(f[k]) for k in ("1", "2", "4", "8")),
                     f"{row.fragmentation.amount_milli_gpu / 1000:.2f}", f"{row.fragmentation.rate:.1%}"])
    return cols, rows


@click.command()
@source_options(k8s_version=False)  # no kube-scheduler wording here
@output_option()
@click.option("--mix", "mix_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Workload mix to measure against: an openb pod-list CSV or a JSON list of "
                   "{cpu_milli, num_gpu, gpu_milli, gpu_model, weight} (default: the cluster's own pods).")
@click.option("--plot", "plot_file", metavar="FILE.png", type=click.Path(dir_okay=False),
              help="Also draw the GPU map (one cell per device, coloured by owner) to a PNG.")
def frag(source, output, mix_file, plot_file):
    """GPU fragmentation: stranded GPUs for the cluster's demand, k-GPU pods that fit now, the FGD measure.

    GPUs are physical devices (time-slicing replicas and MIG slices folded back).
    The headline, stranded_for_demand, is the free GPU that the cluster's own GPU pods cannot use:
    stranded_by_size[k] averaged over the pod sizes k of the demand, weighted by their share of
    requested GPUs. fits_by_size[k] counts k-GPU pods placeable at once on entirely free devices of
    schedulable nodes (capped by CPU when the mix has k-GPU pods); stranded_by_size[k] is the free
    GPU a k-GPU pod cannot use. `fragmentation` is the FGD measure (Weng et al., ATC '23) against
    the workload mix, CPU-only shapes included (every idle GPU is fragment for them).
    With -n NS the demand is the pods of NS; the capacity is always the whole cluster's.

    \b
    Examples:
      kubegpu frag --demo
      kubegpu frag --demo -n ml-training
      kubegpu frag --snapshot dump.json -o json --mix mix.json --plot gpus.png
    """
    cluster = load_state(source)
    scope = source.scope(cluster)
    mix = load_mix(mix_file) if mix_file else None
    if mix is not None:
        report = frag_report(cluster_placement(cluster), mix, source=f"file:{path_text(mix_file)}", namespace=scope.namespace)
    else:
        report = cluster_frag_report(cluster, scope=scope)
    cost = frag_cost(report, cluster_prices(cluster, load_prices(source)))
    if plot_file:
        from kubegpu.fragmentation.gpumap import gpu_map
        from kubegpu.fragmentation.plot import figure_png, gpu_map_figure

        gmap = gpu_map(cluster, report, mix if mix is not None else cluster_mix(cluster, scope))
        write_atomic(plot_file, figure_png(gpu_map_figure(gmap), dpi=120))

    def table(con):
        g = report.gpus
        if not g.total:
            con.print("no GPU nodes: nothing to fragment (no node advertises nvidia.com/gpu or a MIG resource)")
            return
        cols, rows = frag_table_rows(report, wide=output == "wide")
        show(con, cols, rows, wide=output == "wide")
        con.print()
        lines = headline_lines(report)
        for line in lines[:-1] + cost_lines(cost) + lines[-1:]:     # the FGD measure stays last
            con.print(literal(line), soft_wrap=not con.is_terminal)
        if plot_file:
            con.print(f"GPU map written to {path_text(plot_file)}")

    emit(frag_json(report, cost), output, table)
