"""`kubegpu decisions`: read the extender's decision log (why each pod went where)."""

from __future__ import annotations

import click

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import output_option
from kubegpu.cli.render import emit, literal


@click.command()
@click.argument("pod", required=False, metavar="[POD]")
@click.option("--ledger", "path", required=True, metavar="PATH", type=click.Path(dir_okay=False),
              help="The NDJSON decision log written by `kubegpu extender --ledger PATH` (PATH.1 is read too).")
@click.option("--mode", type=click.Choice(["extender-filter", "extender-prioritize", "extender-preempt", "shadow"]),
              help="Only decisions of this kind.")
@click.option("--last", type=click.IntRange(min=1), default=None, metavar="N", help="Only the N most recent.")
@output_option()
def decisions(pod, path, mode, last, output):
    """Print the decisions the extender recorded, oldest first (a pod's, with POD).

    POD is NAMESPACE/NAME, or NAME in any namespace. -o wide adds the full time, the cluster
    generation and the milliseconds each call took; -o json prints the records exactly as the
    log holds them (docs/schemas/decision.schema.json).

    \b
    Examples:
      kubegpu decisions --ledger /var/log/kubegpu/decisions.ndjson --last 20
      kubegpu decisions ml/train-0 --ledger decisions.ndjson -o json
    """
    from kubegpu.extender.ledger import matches, read_ledger, summary

    records = read_ledger(path)
    if pod:
        records = [d for d in records if matches(d, pod)]
    if mode:
        records = [d for d in records if d.mode == mode]
    if last:
        records = records[-last:]
    wide = output == "wide"

    def table(con):
        if not records:
            con.print("no decisions" + (f" for {literal(pod)}" if pod else "") + f" in {literal(path)}")
            return
        cols = [Col("TIME"), Col("MODE"), Col("POD"), Col("OUTCOME"), Col("CHOSEN")]
        if wide:
            cols += [Col("GEN", right=True), Col("MS", right=True)]
        cols.append(Col("WHY", wrap=True))
        rows = []
        for d in records:
            row = [literal(d.time[11:19] if not wide else d.time), d.mode.removeprefix("extender-"),
                   literal(f"{d.pod.namespace}/{d.pod.name}"), d.outcome, literal(d.chosen or "-")]
            if wide:
                row += [str(d.generation), f"{d.timings.total_ms:.2f}" if d.timings else "-"]
            rows.append([*row, literal(summary(d))])
        show(con, cols, rows, wide=wide)

    emit(records, output, table)
