"""`kubegpu nccl LOG...`: which transport NCCL really used, and why a job failed."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from kubegpu.cli.options import output_option
from kubegpu.cli.render import emit
from kubegpu.nccl import NcclReport, analyze_files

_SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}
_STATUS_STYLE = {"healthy": "green", "degraded": "yellow", "failed": "bold red", "no-evidence": "dim"}


def _summary_table(report: NcclReport) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("TRANSPORT", "GDR", "NCCL", "HOSTS", "RANKS", "INTERFACES", "PATHS"):
        table.add_column(col)
    gdr = {True: "yes", False: "no", None: "?"}[report.gdr]
    ifaces = ", ".join(f"{i.name}" + (f" ({i.kind})" if i.kind in ("virtual", "loopback") else "")
                       for i in report.interfaces) or "-"
    ranks = str(report.nranks) if report.nranks else (str(len(report.ranks)) if report.ranks else "-")
    table.add_row(report.transport, gdr, report.nccl_version or "-", str(len(report.hosts) or "-"), ranks,
                  escape(ifaces), ", ".join(report.paths) or "-")
    return table


def _findings_table(report: NcclReport, *, wide: bool) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("SEVERITY", "ID", "FINDING", "COUNT", "FIRST SEEN"):
        table.add_column(col, justify="right" if col == "COUNT" else "left")
    if wide:
        table.add_column("CAUSE")
    for f in report.findings:
        where = f"{f.evidence[0].file}:{f.evidence[0].line}" if f.evidence else "-"
        cells = [f"[{_SEVERITY_STYLE[f.severity]}]{f.severity}[/]", f.id, escape(f.message), str(f.count),
                 escape(where)]
        if wide:
            cells.append(escape(f.cause))
        table.add_row(*cells)
    return table


def _print_table(con, report: NcclReport, *, wide: bool) -> None:
    con.print(f"[{_STATUS_STYLE[report.status]}]{escape(report.verdict)}[/]\n")
    con.print(_summary_table(report))
    if report.findings:
        con.print()
        con.print(_findings_table(report, wide=wide))
        con.print()
        for f in report.findings:
            if f.severity == "info" and not wide:
                continue
            con.print(f"[bold]{f.id}[/] fix: {escape(f.fix)}")
            if wide:
                for ev in f.evidence:
                    con.print(f"  [dim]{escape(ev.file)}:{ev.line}:[/] {escape(ev.text)}")
    if wide and report.env:
        con.print("\nNCCL environment: " + escape(", ".join(f"{k}={v}" for k, v in report.env.items())))
    if report.bus_bandwidth_gbps is not None:
        con.print(f"\nnccl-tests average bus bandwidth: {report.bus_bandwidth_gbps:g} GB/s")


_FAIL_LEVELS = ("info", "warn", "error", "never")


@click.command()
@click.argument("logs", nargs=-1, required=True, metavar="LOGFILE...")
@output_option()
@click.option("--fail-on", type=click.Choice(_FAIL_LEVELS), default="error", show_default=True,
              help="Exit 1 when a finding at this severity or above is present ('never' to always exit 0).")
@click.pass_context
def nccl(ctx: click.Context, logs: tuple[str, ...], output: str, fail_on: str) -> None:
    """Read NCCL_DEBUG=INFO/WARN output and PyTorch watchdog messages; report the transport NCCL
    actually used (IB, RoCE, Socket, a net plugin), GPUDirect RDMA, the interfaces, and diagnose
    failures with their likely cause and fix.

    LOGFILE may be plain or gzip'ed, have any prefix (kubectl --prefix, [rankN]:, timestamps,
    ANSI colours); '-' reads stdin. Several files (one per rank or pod) are read as one run.

    \b
    Exit codes:
      0  no finding at --fail-on severity (default: error) - the logs show a healthy run
      1  a finding at or above --fail-on is present (e.g. a collective timeout)
      2  a log cannot be read, or bad usage

    \b
    Examples:
      kubegpu nccl worker-0.log worker-1.log
      kubectl logs -l job-name=train --prefix | kubegpu nccl - -o json
      kubegpu nccl run.log.gz --fail-on warn
    """
    report = analyze_files(list(logs))
    emit(report, output, lambda con: _print_table(con, report, wide=output == "wide"))
    if fail_on != "never" and report.has_severity(fail_on):
        ctx.exit(1)
