"""`kubegpu audit`: every GPU-cluster pitfall checked, with the fix; table, JSON, YAML, SARIF, JUnit."""

from __future__ import annotations


import click
from rich.text import Text

from kubegpu.cli.options import load_state, output_option, source_options
from kubegpu.cli.render import emit, emit_text, strip_controls
from kubegpu.money.amount import Money, money_text

STYLES = {"error": "bold red", "warn": "yellow", "info": "cyan"}


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _list_checks(output: str, selected) -> None:
    from kubegpu.audit.catalog import CATALOG

    if output in ("json", "yaml"):
        emit([c for c in CATALOG if c.id in selected], output)
        return

    def table(con):
        from kubegpu.cli.columns import Col, show

        rows = [[c.id, str(c.pitfall), f"[{STYLES[c.severity]}]{c.severity}[/]", c.title]
                for c in CATALOG if c.id in selected]
        show(con, [Col("ID"), Col("PITFALL", right=True), Col("SEVERITY"), Col("TITLE", wrap=True)], rows,
             wide=output == "wide")

    emit(None, "table", table)


def _cost_text(cost: dict) -> str:
    m = cost["cost"]
    money = f" = {money_text(Money(**m))}" if m else ""
    hours = f"{cost['gpu_hours']:,.1f}" if cost["gpu_hours"] >= 1 else f"{cost['gpu_hours']:.3g}"
    assumed = f" (assumed: {cost['assumed']})" if cost.get("assumed") else ""
    return f"{hours} GPU-hours{money}: {cost['what']}{assumed}"


def _table(report, wide: bool, costs: list[dict] = ()):
    from kubegpu.audit.catalog import PITFALLS

    def draw(con):
        if not report.findings:
            con.print(f"No findings. Score {report.score}/100 ({len(report.checks_run)} checks).")
            return
        from rich.table import Table

        from kubegpu.cli.columns import print_table, table_width

        width = table_width(con, True) if not con.is_terminal else con.width
        priced: dict[tuple[str, str], list[dict]] = {}
        for c in costs:
            priced.setdefault((c["id"], c["object"]), []).append(c)
        groups: dict[int, list] = {}
        for f in report.findings:
            groups.setdefault(f.pitfall, []).append(f)
        for pitfall, findings in groups.items():
            con.print(Text(f"\nPitfall {pitfall}: {PITFALLS[pitfall]}", style="bold"))
            # severity and ID stay in their columns; the finding wraps under itself (hanging indent)
            grid = Table.grid(padding=(0, 1))
            grid.add_column(no_wrap=True, min_width=7)
            grid.add_column(no_wrap=True, min_width=8)
            grid.add_column(overflow="fold")
            for f in findings:
                scope = " (cluster-scoped)" if report.namespace and f.scope == "cluster" else ""
                lines = [Text.assemble((strip_controls(f.object), "bold"), scope, f"  {strip_controls(f.message)}")]
                lines += [Text("cost: " + strip_controls(_cost_text(c))) for c in priced.get((f.id, f.object), [])]
                if wide:
                    lines.append(Text(f"fix: {strip_controls(f.remediation)}"))
                    lines += [Text(strip_controls(e)) for e in f.evidence]
                    if f.patch is not None:
                        target = f" {f.patch.target}" if f.patch.target else ""
                        lines.append(Text(f"patch ({f.patch.kind}{target}):"))
                        lines += [Text("  " + strip_controls(line)) for line in f.patch.content.rstrip().splitlines()]
                grid.add_row(Text("  " + f.severity.upper(), STYLES[f.severity]), Text(f.id), Text("\n").join(lines))
            print_table(con, grid, width)
        s = report.summary
        con.print(f"\n{s['error']} error, {s['warn']} warn, {s['info']} info"
                  + (f", {report.suppressed} suppressed" if report.suppressed else "")
                  + f". Score {report.score}/100 ({len(report.checks_run)} checks)."
                  + ("" if wide else " -o wide shows fixes, evidence and patches."))
    return draw


@click.command()
@source_options
@output_option("sarif", "junit")
@click.option("--config", "config_path", metavar="FILE",
              help="Audit config (YAML): severity overrides, disabled checks, exclusions, parameters.")
@click.option("--fail-on", type=click.Choice(["warn", "error"]), default=None,
              help="Exit 1 when a finding is at or above this severity.")
@click.option("--checks", "checks", multiple=True, metavar="ID,..",
              help="Run only these checks (IDs or pitfall:N). Repeatable or comma-separated.")
@click.option("--list-checks", is_flag=True, help="List the check catalog and exit.")
def audit(source, output, config_path, fail_on, checks, list_checks):
    """Check the cluster for the ten GPU-cluster pitfalls, with the fix for each finding.

    Findings are grouped by pitfall, worst first. With -n NS the checks still read the whole
    cluster, and the report keeps findings about objects of NS plus cluster-scoped findings (nodes,
    StorageClasses, PriorityClasses, the cluster as a whole), marked "cluster-scoped". Suppress one object's finding with the
    annotation `kubegpu.io/ignore: KG-101,KG-202`, or in --config (`exclude:` by kind /
    namespace / name regex); override severities there too. See docs/audit-checks.md.

    \b
    Examples:
      kubegpu audit --demo
      kubegpu audit --snapshot dump.yaml -o sarif > kubegpu.sarif
      kubegpu audit --fail-on error -o junit > audit.xml
      kubegpu audit --checks pitfall:5,KG-601 -o wide
    """
    from kubegpu.audit.config import AuditConfig, load_config
    from kubegpu.audit.engine import run_audit, select_checks
    from kubegpu.audit.findings import Severity

    config = load_config(config_path) if config_path else AuditConfig()
    only = _split(checks) or None
    selected = {c.id for c in select_checks(config, only)}
    if list_checks:
        _list_checks(output, selected)
        return
    if output == "sarif":
        from kubegpu.cli.options import read_documents, wording_version
        from kubegpu.sources.documents import load_cluster

        # read the documents here (not through load_state) so each result can name its file and line
        docs = read_documents(source)
        state = load_cluster(docs)
        state.k8s_version = wording_version(source)  # the wording only, as options.load_state
    else:
        docs, state = None, load_state(source)
    report = run_audit(state, config, checks=only, scope=source.scope(state))
    threshold = Severity.parse(fail_on) if fail_on else None
    if output == "sarif":
        from kubegpu.audit.origins import fallback_origin, object_origins
        from kubegpu.audit.sarif import to_sarif

        emit(to_sarif(report, object_origins(docs), fallback_origin(docs)), "json")
    elif output == "junit":
        from kubegpu.audit.junit import to_junit

        emit_text(to_junit(report, fail_on=threshold or Severity.WARN))
    else:
        from kubegpu.cli.options import load_prices
        from kubegpu.money.cluster import cluster_prices
        from kubegpu.money.findings import audit_json

        data = audit_json(report, state, cluster_prices(state, load_prices(source)))
        emit(data, output, _table(report, wide=output == "wide", costs=data["costs"]))
    if threshold is not None and report.failing(threshold):
        raise click.exceptions.Exit(1)
