"""`kubegpu doctor`: the one-command overview of a GPU cluster."""

from __future__ import annotations

import sys

import click
from rich.table import Table

from kubegpu.cli.options import file_option, load_state, output_option, source_options
from kubegpu.cli.render import emit, emit_text, to_plain
from kubegpu.cli.render import literal

_SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}


def _print_tables(con, data: dict) -> None:
    s = data["sections"]
    con.print(f"[bold]kubegpu doctor[/] — {literal(data['source'])}"
              + (f" (Kubernetes {data['server_version']})" if data.get("server_version") else ""))
    if "status" in s:
        t = s["status"]["totals"]
        con.print(f"\n[bold]Status[/]  {t['nodes']} nodes, {t['gpu_nodes']} with GPUs: {t['gpus']['total']} GPUs, "
                  f"{t['gpus']['allocated']} allocated ({t['allocation_ratio']:.1%}), {t['gpus']['free']} free")
    f = s.get("fragmentation")
    if f:
        fits = ", ".join(f"{k}-GPU: {v}" for k, v in f["fits_by_size"].items())
        stranded = ", ".join(f"{k}-GPU: {v}" for k, v in f["stranded_by_size"].items())
        con.print(f"\n[bold]Fragmentation[/]  FGD rate {f['fragmentation']['rate']:.1%} of idle GPU "
                  f"({f['fragmentation']['amount_milli_gpu'] / 1000:g} GPUs fragmented)\n"
                  f"  pods that fit now   {fits}\n  stranded GPUs       {stranded}")
    pending = s.get("pending") or []
    if "pending" in s:
        con.print(f"\n[bold]Pending GPU pods[/]  {len(pending)}")
    if pending:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("POD", "KUBE-SCHEDULER SAYS", "FIRST REMEDY"):
            table.add_column(col, overflow="fold")
        for p in pending:
            table.add_row(literal(p["pod"] + (f"\n{p['gang']}" if p.get("gang") else "")), literal(p["reason"]),
                          literal(p["first_remedy"] or "-"))
        con.print(table)
    plan = s.get("defrag")
    if plan:
        con.print(f"\n[bold]Defrag preview[/] (not applied)  {literal(plan.get('message', ''))}")
        for m in plan.get("moves", []):
            con.print(f"  move {literal(m['pod'])}  {literal(m['from'])} -> {literal(m['to'])}  ({m['gpu_hours']:.2f} GPU-h lost)")
        if plan.get("command"):
            con.print(f"  to plan it in full: {literal(plan['command'])}")
    audit = s.get("audit")
    if audit:
        by_pitfall: dict[int, list] = {}
        for finding in audit["findings"]:
            by_pitfall.setdefault(finding["pitfall"], []).append(finding)
        counts = audit.get("summary", {})
        con.print(f"\n[bold]Audit[/]  score {audit['score']}/100  "
                  + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("PITFALL", "WORST", "FINDINGS", "EXAMPLE"):
            table.add_column(col, overflow="fold")
        order = {"error": 0, "warn": 1, "info": 2}
        for pitfall in sorted(by_pitfall):
            items = sorted(by_pitfall[pitfall], key=lambda x: order.get(x["severity"], 3))
            worst = items[0]["severity"]
            table.add_row(str(pitfall), f"[{_SEVERITY_STYLE.get(worst, '')}]{worst}[/]", str(len(items)),
                          literal(f"{items[0]['object']}: {items[0]['message']}"))
        con.print(table)
        con.print("  details: kubegpu audit -o wide")


@click.command()
@source_options
@output_option("html")
@file_option("Write the report to FILE (atomically) instead of stdout.")
@click.option("--fail-on", type=click.Choice(["warn", "error"]), default=None,
              help="Exit 1 when the audit has a finding at or above this severity.")
@click.option("--section", "sections", multiple=True,
              type=click.Choice(["status", "fragmentation", "pending", "defrag", "audit"]),
              help="Only these sections (repeatable; default all).")
def doctor(source, output, file, fail_on, sections):
    """The whole picture in one report: status, fragmentation, every Pending GPU pod explained,
    a defrag plan preview (never applied here), and the audit of all ten pitfalls.

    \b
    Examples:
      kubegpu doctor --demo                      the 40-node demo cluster
      kubegpu doctor --demo clean                the same cluster with every pitfall fixed
      kubegpu doctor --snapshot dump.json -o html --file report.html
      kubectl gpu doctor --context prod --fail-on error

    Exit codes: 0 ok, 1 audit findings at/above --fail-on, 2 bad input or usage.
    """
    from kubegpu.doctor import doctor_report

    state = load_state(source)
    report = doctor_report(state, only=set(sections) or None)
    data = to_plain(report)
    if output == "html":
        from kubegpu.web.report_html import figure_png, render_html

        png = None
        if "fragmentation" in report.sections:
            from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement
            from kubegpu.fragmentation.plot import frag_figure

            png = figure_png(frag_figure(cluster_placement(state), cluster_mix(state)))
        emit_text(render_html(report, data["sections"], png), file=file)
    else:
        emit(data, output, lambda con: _print_tables(con, data), file=file)
    audit = data["sections"].get("audit")
    if fail_on and audit:
        levels = {"info": 0, "warn": 1, "error": 2}
        if any(levels.get(f["severity"], 0) >= levels[fail_on] for f in audit["findings"]):
            sys.exit(1)
