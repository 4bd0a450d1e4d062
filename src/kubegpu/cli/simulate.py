"""`kubegpu simulate`: `run` and `sweep` the dynamic event simulation; `inflation` is the FGD paper's experiment."""

from __future__ import annotations

import io
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import click
from rich.progress import Progress

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import check_seeds, output_option, source_options
from kubegpu.cli.render import console, emit, literal
from kubegpu.cli.writer import write_atomic
from kubegpu.cli.writer import write_all
from kubegpu.errors import OutputError, UsageError
from kubegpu.jsontext import json_bytes
from kubegpu.fragmentation.shapes import load_mix
from kubegpu.placement.registry import POLICY_NAMES
from kubegpu.simulate.inflation import ARRIVAL_POINTS, DEFAULT_TUNE, InflationResult, run_experiment
from kubegpu.simulate.sweep_journal import JOURNAL, journal_line, read_journal
from kubegpu.simulate.trace import load_nodes, load_pods
from kubegpu.guards.bounded import path_text


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
    """Simulate the cluster over time (run, sweep) or replay the FGD paper's inflation experiment."""


@simulate.command()
@click.option("--nodes", "nodes_file", required=True, metavar="CSV", help="openb node list (sn,cpu_milli,memory_mib,gpu,model).")
@click.option("--pods", "pods_file", required=True, metavar="CSV", help="openb pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec]).")
@click.option("--policy", "policies", multiple=True, default=("fgd",), show_default=True, metavar="NAME",
              help=f"Placement policy; repeat or comma-separate. One of: {', '.join(POLICY_NAMES)}.")
@click.option("--seeds", default="42-51", show_default=True, callback=check_seeds,
              help="Seeds: ranges and comma lists, e.g. 42-51 (at most 10000).")
@click.option("--tune", type=click.FloatRange(0.01, 10), default=DEFAULT_TUNE, show_default=True,
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
    if not tune > 0:
        raise UsageError("--tune must be positive")
    nodes = load_nodes(nodes_file)
    pods = load_pods(pods_file)
    if not pods:
        raise UsageError(f"{path_text(pods_file)}: no pods")
    mix = load_mix(mix_file) if mix_file else None
    trace = path_text(pods_file).rsplit("/", 1)[-1].removesuffix(".csv").removeprefix("openb_pod_list_")
    total = len(names) * len(seeds)
    sources = {"nodes_source": path_text(nodes_file), "pods_source": path_text(pods_file)}
    if sys.stderr.isatty():
        with Progress(console=console(stderr=True), transient=True) as progress:
            bar = progress.add_task("inflation runs", total=total)
            results = run_experiment(nodes, pods, names, seeds, trace=trace, tune=tune, mix=mix, workers=workers,
                                     on_run=lambda policy, seed: progress.advance(bar), **sources)
    else:
        results = run_experiment(nodes, pods, names, seeds, trace=trace, tune=tune, mix=mix, workers=workers,
                                 **sources)
    if plot_file:
        buffer = io.BytesIO()
        alloc_figure(results).savefig(buffer, format="png", dpi=120)
        write_atomic(plot_file, buffer.getvalue())
    emit(results[0] if len(results) == 1 else results, output,
         lambda con: _print_results(con, results, wide=output == "wide"))


# ---- simulate run / sweep -----------------------------------------------------------------------------

def _scenario_arg(scenario_file: str | None, scenario_name: str | None) -> str:
    if bool(scenario_file) == bool(scenario_name):
        raise UsageError("give a scenario file or --scenario NAME (one of them)")
    return scenario_file or scenario_name


RUN_COLS = [Col("GROUP"), Col("UPS", right=True), Col("DOWNS", right=True), Col("CYCLES", right=True),
            Col("NODE-H", right=True), Col("BILLED-H", right=True), Col("COST", right=True)]
POD_COLS = [Col("CLASS"), Col("PODS", right=True), Col("WAIT-MEAN", right=True), Col("WAIT-P95", right=True),
            Col("WAIT-P99", right=True), Col("DONE", right=True), Col("TIMED-OUT", right=True)]


def run_rows(result: dict) -> list[list[str]]:
    """Node groups, then the total (cost with its currency), for RUN_COLS."""
    a, c = result["autoscaler"], result["cost"]
    rows = [[literal(g["name"]), str(g["scale_ups"]), str(g["scale_downs"]), str(g["cycles"]),
             f"{g['node_hours']:.1f}", f"{g['billed_node_hours']:.1f}", f"{g['cost']:,.2f}"] for g in a["groups"]]
    rows.append(["[bold]total[/]", str(a["scale_ups"]), str(a["scale_downs"]), f"{a['cycles_per_day']:g}/day",
                 f"{a['node_hours']:.1f}", f"{a['billed_node_hours']:.1f}", f"[bold]{c['total']:,.2f} {c['currency']}[/]"])
    return rows


def pod_rows(result: dict) -> list[list[str]]:
    rows = []
    for name, x in result["pods"]["by_class"].items():
        w = x["wait_seconds"]
        rows.append([literal(name), str(x["pods"]), f"{w['mean']:.0f}s", f"{w['p95']:.0f}s", f"{w['p99']:.0f}s",
                     str(x["completed"]), str(x["timed_out"])])
    return rows


def print_run(con, result: dict, *, wide: bool = False) -> None:
    con.print(f"[bold]{literal(result['scenario'])}[/] (seed {result['seed']}, {result['duration_s'] / 3600:g} h)")
    show(con, RUN_COLS, run_rows(result), wide=wide)
    con.print()
    show(con, POD_COLS, pod_rows(result), wide=wide)
    pr, u = result["preemption"], result["utilization"]
    con.print()
    con.print(f"preemptions {pr['count']}, GPU-hours lost {pr['gpu_hours_lost']:.2f} "
              f"(work {pr['work_gpu_hours_lost']:.2f} + restarts {pr['restart_gpu_hours']:.2f}); "
              f"allocation {u['allocation_mean']:.1%}, effective utilization {u['effective']:.1%}")


@simulate.command("run")
@click.argument("scenario_file", required=False, metavar="SCENARIO")
@click.option("--scenario", "scenario_name", metavar="NAME[/VARIANT]",
              help="A built-in scenario (seed-flapping, seed-preemption), optionally with a variant.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override any field by its dotted path, e.g. autoscaler.scale-down-delay-after-add=30m, seed=7.")
@click.option("--plot", "plot_file", metavar="FILE.png", help="Timeline: nodes per group, pending pods, GPUs, cost.")
@click.option("--events", "events_file", metavar="FILE.ndjson", help="Write every simulated event as NDJSON.")
@click.option("--from-cluster", is_flag=True,
              help="Start from the live cluster's nodes, node groups, running pods and cluster-autoscaler flags "
                   "(implied by --demo / --snapshot).")
@source_options(namespaces=False, k8s_version=False)
@output_option()
def run_cmd(scenario_file, scenario_name, sets, plot_file, events_file, from_cluster, source, output):
    """Run one scenario in simulated time: arrivals, gangs, preemption, cluster-autoscaler, billing.

    A scenario is a YAML file (docs/simulate.md) or a built-in NAME[/VARIANT]. The same scenario
    and seed always give the same result, byte for byte.

    \b
    Examples:
      kubegpu simulate run --scenario seed-flapping
      kubegpu simulate run --scenario seed-flapping --set autoscaler.scale-down-delay-after-add=30m -o json
      kubegpu simulate run --scenario seed-preemption/checkpoint-1h --plot timeline.png
    """
    from kubegpu.simulate.results import simulate as simulate_engine
    from kubegpu.simulate.results import summarise
    from kubegpu.simulate.scenario import load_scenario

    base, running = None, None
    if from_cluster or source.demo or source.snapshots:
        from kubegpu.cli.options import load_state
        from kubegpu.simulate.cluster_source import cluster_overrides

        base, running = cluster_overrides(load_state(source))
    scenario = load_scenario(_scenario_arg(scenario_file, scenario_name), list(sets), base=base)
    if sys.stderr.isatty():  # a long run (a week, thousands of nodes) shows how far it is
        with Progress(console=console(stderr=True), transient=True) as progress:
            bar = progress.add_task(f"simulating {scenario.name}", total=scenario.duration_s)
            engine = simulate_engine(scenario, record_events=bool(events_file), running=running,
                                     on_progress=lambda t: progress.update(bar, completed=t))
    else:
        engine = simulate_engine(scenario, record_events=bool(events_file), running=running)
    result = summarise(engine)
    outputs: list[tuple[str, bytes]] = []
    if plot_file:
        from kubegpu.simulate.plot import timeline_png
        outputs.append((plot_file, timeline_png(engine)))
    if events_file:
        import msgspec
        outputs.append((events_file, b"".join(msgspec.json.encode(x) + b"\n" for x in engine.log)))
    for path, data in outputs:
        write_atomic(path, data)
    emit(result, output, lambda con: print_run(con, result, wide=output == "wide"))


@simulate.command("sweep")
@click.argument("scenario_file", required=False, metavar="SCENARIO")
@click.option("--scenario", "scenario_name", metavar="NAME[/VARIANT]", help="A built-in scenario.")
@click.option("--grid", "grid_file", required=True, metavar="GRID.yaml",
              help="Maps --set keys (and seed) to lists of values; every combination runs for every seed.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Fixed overrides for every run.")
@click.option("--out", "out_dir", metavar="DIR",
              help="Write results.csv, results.json, comparison.png and the resume journal runs.ndjson here; "
                   "running again with the same DIR resumes.")
@click.option("--workers", type=click.IntRange(1, 256), default=2, show_default=True, help="Local processes.")
@click.option("--address", metavar="tcp://HOST:PORT",
              help="Run on this dask distributed scheduler instead (tcp:// or tls:// with dask's TLS "
                   "configuration); checked before anything runs, reached within 10 s or refused.")
@output_option()
def sweep_cmd(scenario_file, scenario_name, grid_file, sets, out_dir, workers, address, output):
    """Run a scenario for every combination in GRID x seeds and compare them.

    \b
    GRID.yaml example:
      autoscaler.scale-down-delay-after-add: [10m, 30m, 60m]
      autoscaler.scale-down-unneeded-time: [10m, 40m]
      seed: [1, 2, 3]
    JSON: a list of {"params", "seed", "result"} (result = the `simulate run -o json` object).
    """
    from kubegpu.simulate import sweep as sw

    name = _scenario_arg(scenario_file, scenario_name)
    if address:
        sw.check_address(address)
    combos, seeds = sw.load_grid(grid_file)
    points = sw.plan(name, list(sets), combos, seeds)
    folder = out_folder(out_dir) if out_dir else None
    journal = read_journal(folder / JOURNAL) if folder else None
    with journal_appender(folder / JOURNAL if folder else None, journal.complete_bytes if journal else 0) as record:
        run = lambda done: sw.execute(name, list(sets), points, done_rows=journal.rows if journal else [],  # noqa: E731
                                      record=record, workers=workers, address=address, on_done=done)
        if sys.stderr.isatty():
            with Progress(console=console(stderr=True), transient=True) as progress:
                bar = progress.add_task(f"sweep {name}", total=len(points))
                rows = run(lambda: progress.advance(bar))
        else:
            rows = run(lambda: None)
    if folder is not None:
        write_atomic(folder / "results.csv", sw.results_csv(rows).encode())
        write_atomic(folder / "results.json", json_bytes(rows))
        write_atomic(folder / "comparison.png", sw.comparison_png(rows, name))
    emit(rows, output, lambda con: show(con, *sweep_table(rows), wide=output == "wide", records_when_narrow=True))


def out_folder(out_dir: str) -> Path:
    """The `--out` folder, created if missing; OutputError (one line) if it cannot be one."""
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError("is not a folder (--out names a folder for results.csv, results.json, comparison.png "
                          "and runs.ndjson)", where=out_dir) from None
    except NotADirectoryError:
        raise OutputError("cannot create the folder: a parent is a file", where=out_dir) from None
    except OSError as err:
        raise OutputError(f"cannot create the folder: {err.strerror or err}", where=out_dir) from None
    return folder


@contextmanager
def journal_appender(path: Path | None, keep_bytes: int) -> Iterator[Callable[[dict], None]]:
    """`record(row)`: one checked write of the row's journal line (a short write or a full disk is exit 2).

    The journal is opened before any run, so an unwritable folder fails first; a last line cut
    short by an interruption is cut off (`keep_bytes`) so the next run starts on a line of its own.
    """
    if path is None:
        yield lambda row: None
        return
    try:  # O_NONBLOCK: a FIFO planted since the journal was read fails here instead of blocking
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as err:
        raise OutputError(f"cannot write: {err.strerror or err}", where=str(path)) from None
    try:
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_size != keep_bytes:
                os.ftruncate(fd, keep_bytes)
        except OSError as err:
            raise OutputError(f"cannot write: {err.strerror or err}", where=str(path)) from None
        if not stat.S_ISREG(st.st_mode):
            raise OutputError("is not a regular file (a sweep journal is one run per line)", where=str(path))
        yield lambda row: write_all(fd, journal_line(row), str(path))
    finally:
        os.close(fd)


def sweep_table(rows: list[dict]) -> tuple[list[Col], list[list[str]]]:
    """One column per grid key, then the seed and the headline metrics; one row per run."""
    keys = list(dict.fromkeys(k for r in rows for k in r["params"]))
    cols = [Col(k.rsplit(".", 1)[-1].upper()) for k in keys] + [
        Col(c, right=True) for c in ("SEED", "CYCLES/DAY", "COST", "WAIT-P95", "LOST-GPU-H")]
    out = []
    for r in rows:
        x = r["result"]
        out.append([*(literal(str(r["params"].get(k))) for k in keys), str(r["seed"]),
                    f"{x['autoscaler']['cycles_per_day']:g}", f"{x['cost']['total']:,.2f}",
                    f"{x['pods']['wait_seconds']['p95']:.0f}s", f"{x['preemption']['gpu_hours_lost']:.1f}"])
    return cols, out
