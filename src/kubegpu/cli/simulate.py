"""`kubegpu simulate`: replay traces. `inflation` is the FGD paper's experiment."""

from __future__ import annotations

import io
import sys

import click
from rich.progress import Progress

from kubegpu.cli.options import output_option
from kubegpu.cli.render import console, emit, write_atomic
from kubegpu.errors import UsageError
from kubegpu.fragmentation.shapes import load_mix
from kubegpu.scheduling.placement.registry import POLICY_NAMES
from kubegpu.simulate.inflation import ARRIVAL_POINTS, DEFAULT_TUNE, InflationResult, run_experiment
from kubegpu.simulate.trace import load_nodes, load_pods


def parse_seeds(text: str) -> list[int]:
    """'42-51', '1,2,7' or '40-42,50' -> list of ints."""
    seeds: list[int] = []
    try:
        for part in (p.strip() for p in text.split(",")):
            if part:
                lo, sep, hi = part.partition("-")
                seeds.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    except ValueError:
        raise UsageError(f"--seeds {text!r}: expected numbers or ranges like 42-51") from None
    if not seeds:
        raise UsageError("--seeds: no seed given")
    return seeds


def parse_policies(values: tuple[str, ...]) -> list[str]:
    names = [p.strip() for v in values for p in v.split(",") if p.strip()]
    unknown = [p for p in names if p not in POLICY_NAMES]
    if unknown:
        raise UsageError(f"unknown policy {unknown[0]!r}; choose from {', '.join(POLICY_NAMES)}")
    return list(dict.fromkeys(names))


def results_table(results: list[InflationResult], *, width: int | None = None):
    """The mean allocation curve per policy; at `width` columns, arrival points far from 100 % go
    first (names and `4.61 ± 0.01` are never cut)."""
    from kubegpu.cli.columns import Col, make_table

    # drop order when narrow: the tails first, 100 % last
    rank = {50: 8, 130: 7, 80: 6, 120: 5, 90: 4, 110: 3, 95: 2, 105: 1, 100: 0}
    cols = [Col("POLICY"), Col("UNALLOC@100 %", right=True)] + [
        Col(f"ALLOC@{x}", right=True, drop=rank.get(x, 9)) for x in ARRIVAL_POINTS]
    best = min(r.unallocated_pct_at_100.mean for r in results)
    rows = []
    for r in results:
        mean = {x: sum(run.alloc_pct.get(str(x), float("nan")) for run in r.runs) / len(r.runs) for x in ARRIVAL_POINTS}
        summary = f"{r.unallocated_pct_at_100.mean:.2f} ± {r.unallocated_pct_at_100.sd:.2f}"
        if r.unallocated_pct_at_100.mean == best and len(results) > 1:
            summary = f"[bold green]{summary}[/]"
        rows.append([r.policy, summary, *[f"{mean[x]:.2f}" for x in ARRIVAL_POINTS]])
    return make_table(cols, rows, width=width)


def _print_results(con, results: list[InflationResult], *, wide: bool) -> None:
    from kubegpu.cli.columns import print_table, table_width

    width = table_width(con, wide)
    print_table(con, results_table(results, width=width), width)


def alloc_figure(results: list[InflationResult]):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    ax.plot(ARRIVAL_POINTS, [min(x, 100) for x in ARRIVAL_POINTS], "k:", label="ideal")
    for r in results:
        ys = [sum(run.alloc_pct.get(str(x), float("nan")) for run in r.runs) / len(r.runs) for x in ARRIVAL_POINTS]
        ax.plot(ARRIVAL_POINTS, ys, marker="o", label=f"{r.policy} ({r.unallocated_pct_at_100.mean:.2f} % unalloc.)")
    ax.set_xlabel("arrived GPU request, % of capacity")
    ax.set_ylabel("GPU allocation, %")
    ax.set_title(f"Workload inflation on {results[0].trace}" if results else "Workload inflation")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@click.group()
def simulate():
    """Replay traces against placement policies (the FGD paper's inflation experiment)."""


@simulate.command()
@click.option("--nodes", "nodes_file", required=True, metavar="CSV", help="openb node list (sn,cpu_milli,memory_mib,gpu,model).")
@click.option("--pods", "pods_file", required=True, metavar="CSV", help="openb pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec]).")
@click.option("--policy", "policies", multiple=True, default=("fgd",), show_default=True, metavar="NAME",
              help=f"Placement policy; repeat or comma-separate. One of: {', '.join(POLICY_NAMES)}.")
@click.option("--seeds", default="42-51", show_default=True, help="Seeds: ranges and comma lists, e.g. 42-51.")
@click.option("--tune", type=float, default=DEFAULT_TUNE, show_default=True,
              help="Resample the pod list to this multiple of the cluster's GPU capacity.")
@click.option("--mix", "mix_file", metavar="FILE", help="Target workload for fgd/kubegpu (default: the pod list's shapes).")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Parallel processes.")
@click.option("--plot", "plot_file", metavar="FILE.png", help="Also plot allocation vs arrival per policy.")
@output_option()
def inflation(nodes_file, pods_file, policies, seeds, tune, mix_file, workers, plot_file, output):
    """Shuffle the pods, resample to TUNE x GPU capacity, submit one by one with no departures.

    Records GPU allocation % and fragmentation rate at each arrival point (50 ... 130 % of
    capacity); the key number is unallocated GPU % at 100 % arrival, mean ± sd over seeds.

    \b
    Example:
      kubegpu simulate inflation --nodes openb_node_list_gpu_node.csv \\
          --pods openb_pod_list_default.csv --policy fgd,kubegpu --seeds 42-51 -o json
    """
    names = parse_policies(policies)
    seed_list = parse_seeds(seeds)
    if not tune > 0:
        raise UsageError("--tune must be positive")
    nodes = load_nodes(nodes_file)
    pods = load_pods(pods_file)
    if not pods:
        raise UsageError(f"{pods_file}: no pods")
    mix = load_mix(mix_file) if mix_file else None
    trace = pods_file.rsplit("/", 1)[-1].removesuffix(".csv").removeprefix("openb_pod_list_")
    total = len(names) * len(seed_list)
    if sys.stderr.isatty():
        with Progress(console=console(stderr=True), transient=True) as progress:
            bar = progress.add_task("inflation runs", total=total)
            results = run_experiment(nodes, pods, names, seed_list, trace=trace, tune=tune, mix=mix, workers=workers,
                                     on_run=lambda policy, seed: progress.advance(bar))
    else:
        results = run_experiment(nodes, pods, names, seed_list, trace=trace, tune=tune, mix=mix, workers=workers)
    if plot_file:
        buffer = io.BytesIO()
        alloc_figure(results).savefig(buffer, format="png", dpi=120)
        write_atomic(plot_file, buffer.getvalue())
    emit(results[0] if len(results) == 1 else results, output,
         lambda con: _print_results(con, results, wide=output == "wide"))
