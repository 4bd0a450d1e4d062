"""`kubegpu nccl LOG...`: which transport NCCL really used, and why a job failed."""

from __future__ import annotations

import click
from rich.markup import escape

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import output_option
from kubegpu.cli.render import emit
from kubegpu.nccl import NcclReport, analyze_files

_SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}
_STATUS_STYLE = {"healthy": "green", "degraded": "yellow", "failed": "bold red", "no-evidence": "dim"}


def _summary_rows(report: NcclReport) -> tuple[list[Col], list[list[str]]]:
    cols = [Col("TRANSPORT"), Col("GDR"), Col("NCCL", drop=2), Col("HOSTS", right=True, drop=3),
            Col("RANKS", right=True, drop=4), Col("INTERFACES", wrap=True), Col("PATHS", wrap=True, drop=1)]
    gdr = {True: "yes", False: "no", None: "?"}[report.gdr]
    ifaces = ", ".join(f"{i.name}" + (f" ({i.kind})" if i.kind in ("virtual", "loopback") else "")
                       for i in report.interfaces) or "-"
    ranks = str(report.nranks) if report.nranks else (str(len(report.ranks)) if report.ranks else "-")
    return cols, [[report.transport, gdr, report.nccl_version or "-", str(len(report.hosts) or "-"), ranks,
                   escape(ifaces), ", ".join(report.paths) or "-"]]


def _findings_rows(report: NcclReport, *, wide: bool) -> tuple[list[Col], list[list[str]]]:
    """Findings; narrow terminals drop FIRST SEEN (a file:line never cut) before COUNT."""
    cols = [Col("SEVERITY"), Col("ID"), Col("FINDING", wrap=True), Col("COUNT", right=True, drop=1),
            Col("FIRST SEEN", drop=2)]
    if wide:
        cols.append(Col("CAUSE", wrap=True))
    rows = []
    for f in report.findings:
        where = f"{f.evidence[0].file}:{f.evidence[0].line}" if f.evidence else "-"
        cells = [f"[{_SEVERITY_STYLE[f.severity]}]{f.severity}[/]", f.id, escape(f.message), str(f.count),
                 escape(where)]
        if wide:
            cells.append(escape(f.cause))
        rows.append(cells)
    return cols, rows


def _print_table(con, report: NcclReport, *, wide: bool) -> None:
    con.print(f"[{_STATUS_STYLE[report.status]}]{escape(report.verdict)}[/]\n")
    show(con, *_summary_rows(report), wide=wide)
    if report.findings:
        con.print()
        show(con, *_findings_rows(report, wide=wide), wide=wide)
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
