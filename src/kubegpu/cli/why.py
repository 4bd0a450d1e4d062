"""`kubegpu why`: why a pod is Pending, in kube-scheduler's words first, then everything else."""

from __future__ import annotations


import click
from rich.markup import escape
from rich.table import Table

from kubegpu.cli.options import load_prices, load_state, output_option, source_options
from kubegpu.cli.render import emit, emit_stream
from kubegpu.cli.render import literal
from kubegpu.errors import UsageError
from kubegpu.money.amount import money_text
from kubegpu.money.cluster import cluster_prices


def _money(m) -> str:
    return money_text(m) if m is not None else ""


def wait_line(w) -> str | None:
    """How long the pod has waited and what that cost (GPU-hours without a price)."""
    if w is None or w.waited_seconds is None:
        return None
    line = f"waited {round(w.waited_seconds / 3600, 1):g} h: {w.delay_gpu_hours:g} GPU-hours of work delayed"
    line += f" ({_money(w.delay_cost)})" if w.delay_cost else ""
    if w.idle_reserved_gpus:
        line += (f"; its gang holds {w.idle_reserved_gpus:g} GPUs idle meanwhile: {w.idle_reserved_gpu_hours:g} "
                 "GPU-hours" + (f" ({_money(w.idle_reserved_cost)})" if w.idle_reserved_cost else ""))
    return line


def remedy_cost_text(c) -> str:
    if c is None or c.one_off_gpu_hours is None:
        return ""
    what = _money(c.one_off) if c.one_off else f"{c.one_off_gpu_hours:g} GPU-hours"
    return f"  (one-off {what} to start {c.unblocks_gpus:g} GPUs)"


def _print_report(con, report, wide: bool, money=None) -> None:
    con.print(f"[bold]{literal(report.pod)}[/]  priority {report.priority}  requests "
              + literal(", ".join(f"{k}={v}" for k, v in report.requests.items())))
    if report.node is not None or report.phase != "Pending":
        con.print("  " + literal("; ".join(report.notes)))
        return
    for note in report.notes:
        con.print(f"  [dim]note:[/] {literal(note)}")
    if report.schedulable:
        con.print("  fits now: kube-scheduler can place it")
        for note in report.notes:
            con.print("  [dim]note:[/] " + literal(note))
        return
    con.print(f"  [bold]event:[/] {literal(report.message)}")
    waited = wait_line(money.wait) if money else None
    if waited:
        con.print(f"  [bold]cost:[/] {literal(waited)}")
    if report.observed_message and not report.matches_observed:
        con.print(f"  [dim]cluster recorded:[/] {literal(report.observed_message)}")
    if report.gang:
        con.print(f"  [bold]gang:[/] {literal(report.gang.summary)}")
    con.print("  [bold]nodes by pool:[/]")
    for line in report.pools:
        con.print(f"    {literal(line.summary)}")
    if wide and report.nodes is None:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("NODES", "FIRST FILTER", "REASONS", "FOR EXAMPLE"):
            table.add_column(col)
        for g in report.node_groups:
            table.add_row(str(g.count), g.plugin or ("fits" if g.fits else "-"), literal(", ".join(g.reasons) or "-"),
                          literal(", ".join(g.nodes[:3]) + (" ..." if g.count > 3 else "")))
        con.print(table)
    elif wide:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("NODE", "POOL", "FIRST FILTER", "EVERY BLOCKER"):
            table.add_column(col)
        for n in report.nodes or []:
            every = "; ".join([f"{f.plugin}: " + ("; ".join(f.detail) if f.detail else ", ".join(f.reasons))
                               for f in n.failing] + n.notes)
            table.add_row(literal(n.name), literal(n.pool or "-"), n.plugin or ("fits" if n.fits else "-"), literal(every or "-"))
        con.print(table)
    if report.remedies:
        con.print("  [bold]remedies (smallest change first):[/]")
        costs = money.remedies if money else []
        for i, r in enumerate(report.remedies, 1):
            cost = remedy_cost_text(costs[i - 1]) if i <= len(costs) else ""
            con.print(f"    {i}. {literal(f'[{r.kind}]')} {literal(r.summary)}{literal(cost)}")
    if report.not_evaluated:
        con.print(f"  [dim]not evaluated: {', '.join(report.not_evaluated)} (ResourceClaims are not read)[/]")


def _event_table(parsed):
    def table(con):
        con.print(f"nodes: {parsed.total_nodes if parsed.total_nodes is not None else 'unknown'}"
                  + ("  (truncated at 1024 characters)" if parsed.truncated else ""))
        if parsed.prefilter:
            con.print(f"PreFilter rejected the pod: {literal(parsed.prefilter)}")
        t = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("COUNT", "REASON", "PLUGIN", "CODE"):
            t.add_column(col)
        for r in parsed.reasons:
            t.add_row(str(r.count), literal(r.reason), r.plugin or "?", r.code or "?")
        con.print(t)
        if parsed.preemption:
            p = parsed.preemption
            con.print("preemption: " + literal(p.message or ", ".join(f"{r.count} {r.reason}" for r in p.reasons)))
        for hint in parsed.version_hints:
            con.print(f"[dim]{hint}[/]")
    return table


def _event_report(event_text: str, output: str) -> None:
    from kubegpu.explain.event_remedies import event_remedies
    from kubegpu.scheduling.message import parse_event_message

    parsed = parse_event_message(event_text)
    if parsed.total_nodes is None and not parsed.reasons and parsed.prefilter is None:
        raise UsageError("--event: not a FailedScheduling message (expected \"0/N nodes are available: ...\")")
    from kubegpu.cli.render import to_plain

    remedies = event_remedies(parsed)
    data = {**to_plain(parsed), "remedies": remedies}

    def table(con):
        _event_table(parsed)(con)
        if remedies:
            con.print("remedies (from the reasons alone; run `kubegpu why POD` for a checked plan):")
            for i, r in enumerate(remedies, 1):
                con.print(escape(f"  {i}. [{r['kind']}] {r['summary']}"))

    emit(data, output, table)


@click.command()
@click.argument("pod", required=False)
@click.option("--all", "all_pods", is_flag=True, help="Explain every Pending pod (JSON: a streamed list).")
@click.option("--nodes", "with_nodes", is_flag=True,
              help="With --all: also list every node's verdict (default: node_groups only).")
@click.option("--event", "event_text", metavar="TEXT", help="Parse a FailedScheduling message you pasted.")
@source_options
@output_option()
def why(pod, all_pods, with_nodes, event_text, source, output):
    """Why a pod is Pending: kube-scheduler's own event text, every blocker per node, the fix.

    The first line is exactly what kube-scheduler writes in FailedScheduling for the cluster's
    version (--k8s-version to pick another). Then every failing filter per node (the event shows
    only the first), nodes grouped by pool, gangs as one unit, and remedies ranked by how small
    a change they ask for. With --all, nodes with the same outcome are grouped (node_groups);
    --nodes adds the full per-node list. A pod that is not pending is reported as such.

    \b
    Examples:
      kubegpu why --all --demo
      kubegpu why train-0 -n ml --snapshot dump.json -o json
      kubegpu why --event "0/6 nodes are available: 6 Insufficient nvidia.com/gpu."
    """
    if event_text is not None:
        if pod or all_pods:
            raise UsageError("--event reads pasted text; do not combine it with a pod or --all")
        _event_report(event_text, output)
        return
    if bool(pod) == bool(all_pods):
        raise UsageError("name one pod (kubegpu why POD -n NS) or use --all")
    if with_nodes and not all_pods:
        raise UsageError("--nodes goes with --all (a single pod's report always lists every node)")
    from kubegpu.explain.batch import explain_one, iter_reports
    from kubegpu.scheduling.versions import version_of
    from kubegpu.money.waits import WaitCosts  # prices waits through the scheduling core's gangs
    from kubegpu.money.why import why_json, why_money

    state = load_state(source)
    version = version_of(state.server_version, state.k8s_version)
    if all_pods:
        scope = source.scope(state)  # -A, and the unknown-namespace note, as every command
        # the wide table shows example names per group, so there every group lists its nodes
        reports = iter_reports(state, namespace=scope.namespace, version=version, with_nodes=with_nodes,
                               shared_node_sets=output != "wide")
        costs = WaitCosts(state, cluster_prices(state, load_prices(source)))
        if output in ("json", "yaml"):
            emit_stream((why_json(r, costs) for r in reports), output)
            return

        def table_all(con):
            empty = True
            for r in reports:
                empty = False
                _print_report(con, r, wide=output == "wide", money=why_money(r, costs))
                con.print()
            if empty:
                con.print("no Pending pods")

        emit(None, output, table_all)
        return
    ns = source.namespace or "default"
    if "/" in pod:
        ns, pod = pod.split("/", 1)
    target = state.pod(ns, pod)
    if target is None:
        raise UsageError(f"pod {ns}/{pod} is not in {state.source or 'the cluster'}")
    report = explain_one(state, target, version=version)
    costs = WaitCosts(state, cluster_prices(state, load_prices(source)))

    def table(con):
        _print_report(con, report, wide=output == "wide", money=why_money(report, costs))

    emit(why_json(report, costs), output, table)
