"""`kubegpu share`: GPU sharing advice with its predicted effect."""

from __future__ import annotations

import click

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import load_prices, load_state, output_option, source_options
from kubegpu.cli.render import emit, literal
from kubegpu.model.text import counted
from kubegpu.money.amount import money_text
from kubegpu.money.cluster import cluster_prices
from kubegpu.model.quantity import resource_amount
from kubegpu.sharing.candidates import Thresholds, audit_thresholds, default_replicas
from kubegpu.sharing.config import MAX_REPLICAS
from kubegpu.sharing.report import ShareReport, share_report


def prediction_lines(r: ShareReport) -> list[str]:
    p = r.prediction
    if p is None:
        return []
    saves = money_text(p.saves_per_day) if p.saves_per_day else f"{p.saves_gpu_hours_per_day:g} GPU-hours/day"
    lines = [
        f"shared nodes         {', '.join(p.shared_nodes) or 'none'} (x{r.replicas} replicas per GPU)",
        f"candidates           {p.candidates_placed} placed on {counted(p.candidate_gpus.after, 'GPU')} "
        f"(today {p.candidate_gpus.before:g} whole GPUs)"
        + (f"; not placed: {', '.join(p.candidates_not_placed)}" if p.candidates_not_placed else ""),
        f"GPUs free for whole-GPU work  {p.whole_gpus_free.before:g} -> {p.whole_gpus_free.after:g} "
        f"({p.gpus_freed:+g})",
        f"stranded GPUs        {p.stranded_gpus.before:g} -> {p.stranded_gpus.after:g} on the unshared nodes; "
        f"{counted(p.shared_free_gpus, 'GPU')} of replicas left free on the shared nodes for more candidates",
        f"pending pods that fit {p.pods_fit_now.before:g} -> {p.pods_fit_now.after:g}"
        + (f" ({', '.join(p.newly_fit)})" if p.newly_fit else ""),
        f"worth                {saves} of GPUs put back to work; {counted(p.moved_pods, 'running pod')} "
        "restart elsewhere",
    ]
    if p.displaced_not_placed:
        lines.append(f"would not fit again  {', '.join(p.displaced_not_placed)}")
    if p.saves_per_day:
        lines.append(f"price                {r.prices.note}: {'; '.join(r.prices.sources)}")
    return lines


def _table(con, r: ShareReport, wide: bool) -> None:
    scope = f"pool {r.pool}" if r.pool else "the cluster"
    con.print(literal(f"GPU sharing for {scope}: {counted(r.nodes, 'GPU node')}, {counted(len(r.candidates), 'candidate')}"))
    if r.candidates:
        rows = [[literal(c.pod), literal(c.workload or "-"), literal(c.node or "(pending)"), f"{c.gpus:g}",
                 f"{c.cpu_milli / 1000:g}", f"{c.memory_bytes / 2**30:.1f}Gi"] for c in r.candidates]
        show(con, [Col("POD", wrap=True), Col("WORKLOAD", drop=1), Col("NODE", drop=2), Col("GPUS", right=True),
                   Col("CPU", right=True, drop=3), Col("MEMORY", right=True, drop=3)], rows, wide=wide)
    con.print()
    if r.message:
        con.print(literal(r.message))
    if r.config is None:
        return
    con.print("\n[bold]Prediction[/] (the cluster's own pods replayed with the placement model)")
    for line in prediction_lines(r):
        con.print(literal("  " + line), soft_wrap=not con.is_terminal)
    con.print(f"\n[bold]Configuration[/] (NVIDIA device plugin, via the GPU Operator; "
              f"{'checked field by field' if r.config.valid else 'INVALID: ' + '; '.join(r.config.errors)})")
    con.print(literal(r.config.configmap.rstrip()), soft_wrap=True)
    for step in r.config.apply:
        con.print(literal(f"  {step}"), soft_wrap=True)
    con.print("\n[bold]Risks[/]")
    for risk in r.risks:
        con.print(literal(f"  - {risk}"), soft_wrap=not con.is_terminal)
    if r.alternatives:
        con.print("\n[bold]Alternatives[/]")
        for a in r.alternatives:
            con.print(literal(f"  {a.method}: when {a.when}"), soft_wrap=not con.is_terminal)


@click.command()
@source_options
@output_option()
@click.option("--pool", metavar="POOL", help="Only this node pool's GPU nodes (default: every GPU node).")
@click.option("--replicas", type=click.IntRange(2, MAX_REPLICAS), default=None, metavar="N",
              help="Time-slicing replicas per GPU (default: the audit's KG-102 setting, 4).")
@click.option("--max-cpu", metavar="QUANTITY", default=None,
              help="A candidate requests at most this much CPU (default: the audit's KG-102 limit, 8).")
@click.option("--max-memory", metavar="QUANTITY", default=None,
              help="A candidate requests at most this much memory (default: the audit's KG-102 limit, 32Gi).")
def share(source, output, pool, replicas, max_cpu, max_memory):
    """GPU sharing advice: which pods could share GPUs, the NVIDIA device plugin / GPU Operator
    time-slicing configuration that would do it (checked field by field), and its predicted effect.

    Candidates are inference pods (the audit's workload classes) asking one GPU or less, small in
    CPU and memory (the audit's KG-102 limits). The prediction replays the cluster's own pods with
    the placement model: candidates packed onto the fewest nodes of the pool at REPLICAS per GPU,
    the other GPU pods of those nodes moved to the rest of the pool, then the pending GPU pods
    placed: pods that fit, stranded GPUs, GPUs freed for whole-GPU work and what they are worth
    a day (at --prices). Nothing is changed on the cluster.

    \b
    Examples:
      kubegpu share --demo --pool inference
      kubegpu share --demo -o json
      kubegpu share --snapshot dump.json --pool a100 --replicas 2 --prices prices.yaml
    """
    state = load_state(source)
    scope = source.scope(state)
    limits = audit_thresholds()
    if max_cpu is not None or max_memory is not None:
        limits = Thresholds(
            max_cpu_milli=resource_amount("cpu", max_cpu) if max_cpu is not None else limits.max_cpu_milli,
            max_memory_bytes=resource_amount("memory", max_memory) if max_memory is not None
            else limits.max_memory_bytes)
    report = share_report(state, cluster_prices(state, load_prices(source)), pool=pool,
                          replicas=replicas or default_replicas(), limits=limits, scope=scope)
    emit(report, output, lambda con: _table(con, report, output == "wide"))
