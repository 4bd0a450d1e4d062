"""`kubegpu doctor`: the one-command overview of a GPU cluster."""

from __future__ import annotations

import sys

import click

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import file_option, load_prices, load_state, output_option, source_options
from kubegpu.cli.render import emit, emit_text, literal, to_plain
from kubegpu.model.text import counted
from kubegpu.sources.documents import paused_gc
from kubegpu.money.text import money_lines

_SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}
_ORDER = {"error": 0, "warn": 1, "info": 2}


def fragmentation_lines(f: dict) -> list[str]:
    """The fragmentation section: the demand-weighted headline first, the FGD rate last."""
    s, g = f["stranded_for_demand"], f["gpus"]
    shares = ", ".join(f"{k}-GPU {v:.0%}" for k, v in f["demand"]["gpu_share_by_size"].items())
    largest = counted(s["largest_fit"], "GPU") if s["largest_fit"] else "none"
    return [
        f"  stranded for demand  {s['gpus']:.2f} of {counted(g['free'], 'free GPU')} ({s['rate']:.0%}) unusable "
        f"by the cluster's GPU pods (requested GPUs by pod size: {shares})",
        f"  largest pod that fits {largest}",
        "  pods that fit now    " + ", ".join(f"{k}-GPU: {v}" for k, v in f["fits_by_size"].items()),
        "  stranded GPUs        " + ", ".join(f"{k}-GPU: {v:g}" for k, v in f["stranded_by_size"].items()),
        f"  FGD measure          {f['fragmentation']['rate']:.1%} of idle GPU "
        f"({f['fragmentation']['amount_milli_gpu'] / 1000:.2f} GPUs; mix of {f['demand']['shapes']} task shapes, "
        "CPU-only included)",
    ]


def pending_title(data: dict) -> str:
    n = len(data["sections"].get("pending") or [])
    title = f"[bold]Pending GPU pods[/]  {n} waiting for a node"
    phase = data.get("pending_phase")
    if phase:
        title += (f" (kubectl's phase=Pending: {phase['phase_pending']} = {phase['waiting_for_node']} waiting "
                  f"for a node + {phase['bound_not_started']} bound to a node, not started)")
    return title


def _print_tables(con, data: dict) -> None:
    s = data["sections"]
    wide = False
    scope = f", namespace {data['namespace']}" if data.get("namespace") else ""
    con.print(f"[bold]kubegpu doctor[/] — {literal(data['source'])}{literal(scope)}"
              + (f" (Kubernetes {data['server_version']})" if data.get("server_version") else ""), soft_wrap=True)
    if "status" in s:
        t = s["status"]["totals"]
        con.print(f"\n[bold]Status[/]  {t['nodes']} nodes, {t['gpu_nodes']} with GPUs: {t['gpus']['total']} GPUs, "
                  f"{t['gpus']['allocated']} allocated ({t['allocation_ratio']:.1%}), {t['gpus']['free']} free")
    f = s.get("fragmentation")
    if f:
        con.print("\n[bold]Fragmentation[/]")
        for line in fragmentation_lines(f):
            con.print(line)
    if s.get("money"):
        con.print("\n[bold]Money[/]")
        for line in money_lines(s["money"]):
            con.print(literal(line), soft_wrap=not con.is_terminal)
    pending = s.get("pending") or []
    if "pending" in s:
        con.print("\n" + pending_title(data))
        bound = (data.get("pending_phase") or {}).get("bound_not_started_pods") or []
        if bound:
            con.print("  bound, not started (see `kubegpu audit`, pitfall 8 for mounts): "
                      + ", ".join(bound[:5]) + (f", ... ({len(bound)} in all)" if len(bound) > 5 else ""))
    if pending:
        # the gang note in a column of its own, so that it never widens the POD column of a piped table
        gangs = any(p.get("gang") for p in pending)
        rows = [[literal(p["pod"]), literal(p["reason"]), literal(p["first_remedy"] or "-")]
                + ([literal(p.get("gang") or "-")] if gangs else []) for p in pending]
        cols = [Col("POD", wrap=True), Col("KUBE-SCHEDULER SAYS", wrap=True), Col("FIRST REMEDY", wrap=True)]
        show(con, cols + ([Col("GANG", wrap=True)] if gangs else []), rows, wide=wide, records_when_narrow=True)
    plan = s.get("defrag")
    if plan:
        con.print(f"\n[bold]Defrag preview[/] (not applied)  {literal(plan.get('message', ''))}")
        for m in plan.get("moves", []):
            con.print(f"  move {literal(m['pod'])}  {literal(m['from'])} -> {literal(m['to'])}  ({m['gpu_hours']:.2f} GPU-hours lost)")
        if plan.get("command"):
            con.print(f"  to plan it in full: {literal(plan['command'])}")
    audit = s.get("audit")
    if audit:
        by_pitfall: dict[int, list] = {}
        for finding in audit["findings"]:
            by_pitfall.setdefault(finding["pitfall"], []).append(finding)
        counts = audit.get("summary", {})
        counted_levels = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        con.print(f"\n[bold]Audit[/]  score {audit['score']}/100" + (f"  {counted_levels}" if counted_levels else ""))
        rows = []
        for pitfall in sorted(by_pitfall):
            items = sorted(by_pitfall[pitfall], key=lambda x: _ORDER.get(x["severity"], 3))
            worst = items[0]["severity"]
            rows.append([str(pitfall), f"[{_SEVERITY_STYLE.get(worst, '')}]{worst}[/]", str(len(items)),
                         literal(f"{items[0]['object']}: {items[0]['message']}")])
        if rows:
            show(con, [Col("PITFALL", right=True), Col("WORST"), Col("FINDINGS", right=True),
                       Col("EXAMPLE", wrap=True)], rows, wide=wide, records_when_narrow=True)
        con.print("  details: kubegpu audit -o wide")
    models = s.get("models")
    if models:
        _print_models(con, models)


def _print_models(con, models: dict) -> None:
    """The ModelCache section: per cache, its version, target nodes by state, copies and gated workloads."""
    sm = models["summary"]
    con.print(f"\n[bold]Model caches[/]  {counted(sm['caches'], 'ModelCache')}, {sm['ready']} ready"
              + (f", {sm['invalid']} invalid" if sm["invalid"] else ""))
    rows = []
    for c in models["caches"]:
        if c.get("error"):
            rows.append([literal(c["model"]), "-", "-", "-", literal(f"invalid: {c['error']}")])
            continue
        nodes = ", ".join(f"{n} {state}" for state, n in c["nodes"].items() if n) or "no target nodes"
        copies = c["copies"]
        mixed = [f"{w['workload']} {w['mixed_replicas']} mixed" for w in c["workloads"] if w.get("mixed_replicas")]
        rows.append([literal(c["model"]), literal(c["version"] or "-"), literal(nodes),
                     f"{copies.get('available', 0)}/{copies.get('total', 0)}" + (" ready" if c["ready"] else ""),
                     literal("; ".join(mixed) or "-")])
    show(con, [Col("MODEL"), Col("VERSION", drop=2), Col("NODES", wrap=True), Col("COPIES"),
               Col("MIXED REPLICAS", wrap=True, drop=1)], rows, wide=False, records_when_narrow=True)
    con.print("  pull plan of one: kubegpu models plan --model NAME")


@click.command()
@source_options
@output_option("html")
@file_option("Write the report to FILE (atomically) instead of stdout.")
@click.option("--fail-on", type=click.Choice(["warn", "error"]), default=None,
              help="Exit 1 when the audit has a finding at or above this severity.")
@click.option("--section", "sections", multiple=True,
              type=click.Choice(["status", "fragmentation", "pending", "defrag", "audit", "models", "money"]),
              help="Only these sections (repeatable; default all).")
def doctor(source, output, file, fail_on, sections):
    """The whole picture in one report: status, fragmentation, every Pending GPU pod explained,
    a defrag plan preview (never applied here), the audit of all ten pitfalls, and the model
    caches (only when the cluster has ModelCache objects).

    "Pending GPU pods" are pods waiting for a node; the report also counts kubectl's
    phase=Pending, which includes bound pods whose containers have not started (e.g. FailedMount).
    With -n NS, pods, pending pods and findings are those of NS (plus cluster-scoped findings);
    nodes and capacity are the whole cluster's.

    \b
    Examples:
      kubegpu doctor --demo                      the 40-node demo cluster
      kubegpu doctor --demo clean                the same cluster with every pitfall fixed
      kubegpu doctor --demo -n ml-training       one team's view
      kubegpu doctor --snapshot dump.json -o html --file report.html
      kubectl gpu doctor --context prod --fail-on error

    Exit codes: 0 ok, 1 audit findings at/above --fail-on, 2 bad input or usage.
    """
    from kubegpu.doctor import doctor_report

    state = load_state(source)
    scope = source.scope(state)
    # one shot: what the sections derive lives until the command ends, so a full collection finds
    # nothing to free, yet at 20,000 nodes it ran 25 times over millions of live objects (9 of 41 CPU s);
    # frozen after, so the first collection does not walk them either
    with paused_gc(freeze=True):
        report = doctor_report(state, only=set(sections) or None, scope=scope, prices=load_prices(source))
        data = to_plain(report)
    if output == "html":
        from kubegpu.web.report_html import render_html

        png = None
        if "fragmentation" in report.sections:
            from kubegpu.fragmentation.cluster import cluster_mix
            from kubegpu.fragmentation.gpumap import gpu_map
            from kubegpu.fragmentation.plot import figure_png, gpu_map_figure

            gmap = gpu_map(state, report.sections["fragmentation"], cluster_mix(state, scope))
            png = figure_png(gpu_map_figure(gmap))
        emit_text(render_html(report, data, png), file=file)
    else:
        emit(data, output, lambda con: _print_tables(con, data), file=file)
    audit = data["sections"].get("audit")
    if fail_on and audit:
        levels = {"info": 0, "warn": 1, "error": 2}
        if any(levels.get(f["severity"], 0) >= levels[fail_on] for f in audit["findings"]):
            sys.exit(1)
