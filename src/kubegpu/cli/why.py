"""`kubegpu why`: why a pod is Pending, in kube-scheduler's words first, then everything else."""

from __future__ import annotations

import click
from rich.table import Table

from kubegpu.cli.options import load_state, output_option, source_options
from kubegpu.cli.render import emit
from kubegpu.cli.render import literal
from kubegpu.errors import UsageError


def _print_report(con, report, wide: bool) -> None:
    con.print(f"[bold]{literal(report.pod)}[/]  priority {report.priority}  requests "
              + literal(", ".join(f"{k}={v}" for k, v in report.requests.items())))
    if report.schedulable:
        con.print("  fits now: kube-scheduler can place it")
        return
    con.print(f"  [bold]event:[/] {literal(report.message)}")
    if report.observed_message and not report.matches_observed:
        con.print(f"  [dim]cluster recorded:[/] {literal(report.observed_message)}")
    if report.gang:
        con.print(f"  [bold]gang:[/] {literal(report.gang.summary)}")
    con.print("  [bold]nodes by pool:[/]")
    for line in report.pools:
        con.print(f"    {literal(line.summary)}")
    if wide:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("NODE", "POOL", "FIRST FILTER", "EVERY BLOCKER"):
            table.add_column(col)
        for n in report.nodes:
            every = "; ".join(f"{f.plugin}: " + ("; ".join(f.detail) if f.detail else ", ".join(f.reasons))
                              for f in n.failing)
            table.add_row(literal(n.name), literal(n.pool or "-"), n.plugin or ("fits" if n.fits else "-"), literal(every or "-"))
        con.print(table)
    if report.remedies:
        con.print("  [bold]remedies (smallest change first):[/]")
        for i, r in enumerate(report.remedies, 1):
            con.print(f"    {i}. {literal(f'[{r.kind}]')} {literal(r.summary)}")
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


@click.command()
@click.argument("pod", required=False)
@click.option("--all", "all_pods", is_flag=True, help="Explain every Pending pod.")
@click.option("--event", "event_text", metavar="TEXT", help="Parse a FailedScheduling message you pasted.")
@source_options
@output_option()
def why(pod, all_pods, event_text, source, output):
    """Why a pod is Pending: kube-scheduler's own event text, every blocker per node, the fix.

    The first line is exactly what kube-scheduler writes in FailedScheduling for the cluster's
    version (--k8s-version to pick another). Then every failing filter per node (the event shows
    only the first), nodes grouped by pool, gangs as one unit, and remedies ranked by how small
    a change they ask for.

    \b
    Examples:
      kubegpu why --all --demo
      kubegpu why train-0 -n ml --snapshot dump.json -o json
      kubegpu why --event "0/6 nodes are available: 6 Insufficient nvidia.com/gpu."
    """
    from kubegpu.scheduling.message import parse_event_message

    if event_text is not None:
        if pod or all_pods:
            raise UsageError("--event reads pasted text; do not combine it with a pod or --all")
        parsed = parse_event_message(event_text)
        emit(parsed, output, _event_table(parsed))
        return
    if bool(pod) == bool(all_pods):
        raise UsageError("name one pod (kubegpu why POD -n NS) or use --all")
    from kubegpu.explain.report import explain_all, explain_pod
    from kubegpu.scheduling.gang import find_gangs
    from kubegpu.scheduling.snapshot import SchedulingSnapshot
    from kubegpu.scheduling.versions import version_of

    state = load_state(source)
    version = version_of(state.server_version, source.k8s_version)
    if all_pods:
        reports = explain_all(state, namespace=source.namespace, version=version)
        data = reports
    else:
        ns = source.namespace or "default"
        if "/" in pod:
            ns, pod = pod.split("/", 1)
        target = state.pod(ns, pod)
        if target is None:
            raise UsageError(f"pod {ns}/{pod} is not in {state.source or 'the cluster'}")
        snap = SchedulingSnapshot.from_cluster(state)
        reports = [explain_pod(snap, target, version=version, gangs=find_gangs(state))]
        data = reports[0]

    def table(con):
        if not reports:
            con.print("no Pending pods")
        for r in reports:
            _print_report(con, r, wide=output == "wide")
            con.print()

    emit(data, output, table)
