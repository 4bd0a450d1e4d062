"""`kubegpu rebalance`: keep the cluster compact on its own (reserve the destination, then move)."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import click
from rich.table import Table

from kubegpu.cli.options import load_prices, load_state, output_option, source_options
from kubegpu.cli.defrag import money_line
from kubegpu.cli.render import emit, literal, to_plain
from kubegpu.errors import UsageError
from kubegpu.model.timeutil import parse_duration
from kubegpu.rebalance.budget import PER_NODE_DEFAULT
from kubegpu.model.text import counted


def _duration(ctx, param, value):
    if value is None:
        return None
    seconds = parse_duration(str(value))
    if seconds is None or seconds < 0:
        raise click.BadParameter(f"{value!r} is not a duration like 30s, 10m or 1h30m", ctx=ctx, param=param)
    return seconds


def _fmt_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def round_table(con, report, *, wide: bool) -> None:
    mode = "dry run" if report.mode == "dry-run" else "live"
    con.print(f"[bold]rebalance round {literal(report.at)} ({mode}): {literal(report.message)}[/]")
    for gone in report.leftovers_removed:
        con.print(f"  removed leftover placeholder {literal(gone)}")
    for number, entry in enumerate(report.plans, start=1):
        if entry.status == "skipped":
            con.print(f"[yellow]held back[/] {literal(entry.target)}: {literal(entry.reason)}")
            continue
        why = (f"waiting {_fmt_age(entry.pending_seconds)}" if entry.pending_seconds is not None else
               "stranded GPUs" if entry.trigger == "stranded" else "resumed from its journal")
        con.print(f"[bold]plan {number}[/]: make room for {literal(entry.target)} ({why}): "
                  f"{counted(len(entry.moves), 'move')}, {entry.gpu_hours_lost:.2f} GPU-hours lost - {literal(entry.status)}"
                  + (f": {literal(entry.reason)}" if entry.reason and entry.status != "planned" else ""))
        t = Table(box=None, pad_edge=False, header_style="bold")
        cols = ["POD", "FROM", "TO (HELD FIRST)", "GPUS", "GPU-H LOST", "OUTCOME"] + (["PLACEHOLDER"] if wide else [])
        for col in cols:
            t.add_column(col, justify="right" if col in ("GPUS", "GPU-H LOST") else "left")
        held = {r["pod"]: r for r in entry.reservations}
        for m in entry.moves:
            outcome = m.outcome + (f" ({m.replacement})" if m.replacement and wide else "")
            row = [literal(m.pod), literal(m.from_), literal(m.to), f"{m.gpus:g}", f"{m.gpu_hours:.2f}",
                   literal(outcome)]
            if wide:
                r = held.get(m.pod)
                row.append(literal(f"{r['namespace']}/{r['name']}") if r else "-")
            t.add_row(*row)
        con.print(t)
        for line in entry.lands_on:
            con.print(f"  -> {literal(line)}")
        if entry.money and entry.moves:
            con.print(literal("  " + money_line(entry.money)), soft_wrap=not con.is_terminal)
    if report.fits_by_size:
        b, a = report.fits_by_size["before"], report.fits_by_size["after"]
        con.print("fits_by_size before -> after (waiting pods placed): " + ", ".join(f"{k}-GPU {b[k]}->{a[k]}" for k in b))
    s = report.stranded
    if s and s.get("after") is not None:
        con.print(f"stranded GPUs for the cluster's demand (largest size {s['size']}): "
                  f"{s['before']:g} -> {s['after']:g}")
    waiting = [c for c in report.candidates if c["outcome"] in ("no-plan", "fits-already")]
    for c in waiting:
        con.print(f"[dim]{literal(c['target'])} (pending {_fmt_age(c['pending_seconds'])}): "
                  f"{literal(c['reason'])}[/]")
    if report.mode == "dry-run" and any(p.status == "planned" for p in report.plans):
        con.print("[dim]dry run, nothing changed. Live (--yes), each plan: a placeholder pod of priority class "
                  "kubegpu-placeholder holds every destination first; then the sources are cordoned and each "
                  "step is re-checked by the defrag gate and evicted through the Eviction API.[/]")


def _identity() -> str:
    return os.environ.get("KUBEGPU_POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4()}"


def _owner():
    from kubegpu.rebalance.reservation import Owner

    name, uid = os.environ.get("KUBEGPU_POD_NAME"), os.environ.get("KUBEGPU_POD_UID")
    return Owner(name=name, uid=uid) if name and uid else None


@click.command()
@source_options(namespaces=False, k8s_version=False)
@output_option()
@click.option("--once", is_flag=True, help="Run one round and exit: 0 moved or nothing to do, 1 a plan was needed "
                                            "but could not run (budget, window, failure).")
@click.option("--interval", default="5m", show_default=True, callback=_duration, metavar="DURATION", help="Loop mode: time between rounds.")
@click.option("--min-pending-age", default="10m", show_default=True, callback=_duration, metavar="DURATION",
              help="A pending GPU pod (or gang) must have waited this long.")
@click.option("--stranded-above", type=click.FloatRange(min=0), metavar="GPUS",
              help="Also act when stranded GPUs for the cluster's own demand stay above this (off by default).")
@click.option("--sustained", default="30m", show_default=True, callback=_duration, metavar="DURATION",
              help="How long --stranded-above must hold; the time it went above is kept in the ledger in "
                   "--journal-dir, so separate --once runs (a CronJob) honour it too.")
@click.option("--max-moves", type=click.IntRange(min=0), default=6, show_default=True, help="Pod moves per round.")
@click.option("--max-moves-per-node", type=click.IntRange(min=1), default=PER_NODE_DEFAULT, show_default=True,
              metavar="N", help="Moves at once on one node: reservations held there plus pods leaving it "
                                "(Koordinator's migration default is 2).")
@click.option("--max-gpu-hours-lost", type=click.FloatRange(min=0), metavar="H",
              help="GPU-hours of work thrown away per round (checkpoint annotations count, as in defrag).")
@click.option("--max-gpu-hours-lost-per-day", type=click.FloatRange(min=0), metavar="H",
              help="The same per UTC day, across rounds (kept in the ledger in --journal-dir).")
@click.option("--cooldown", default="0s", show_default=True, callback=_duration, metavar="DURATION",
              help="Time after a round that moved pods before the next may.")
@click.option("--quiet-hours", metavar="HH:MM-HH:MM[,...]", help="UTC windows with no rounds, e.g. 22:00-06:00.")
@click.option("--ttl", default="5m", show_default=True, callback=_duration, metavar="DURATION",
              help="A reservation unused this long is deleted and its move counted failed.")
@click.option("--reserve-timeout", default="60s", show_default=True, callback=_duration, metavar="DURATION",
              help="Time for every placeholder to be bound before the plan is dropped (nothing evicted).")
@click.option("--placeholder-namespace", default=lambda: os.environ.get("KUBEGPU_NAMESPACE", "kubegpu"),
              show_default="$KUBEGPU_NAMESPACE or kubegpu", help="Where placeholder pods are created.")
@click.option("--journal-dir", "--journal", "journal_dir", default=".", show_default=True, metavar="DIR",
              help="Journals (one per plan) and the budget ledger; share it between replicas to resume "
                   "(--journal is the same, DESIGN section 4's name).")
@click.option("--allow-local-storage", is_flag=True, help="Also move pods whose emptyDir/hostPath data would be lost.")
@click.option("--lease-name", default="kubegpu-rebalance", show_default=True, help="Loop mode: the Lease to hold.")
@click.option("--lease-namespace", metavar="NS", help="Loop mode: the Lease's namespace (default: --placeholder-namespace).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Loop mode: serve /metrics on this port (0: off).")
@click.option("--metrics-address", default="127.0.0.1", show_default=True, help="Address for /metrics.")
@click.option("--yes", is_flag=True, help="Act on the live cluster. Without it a live source is a dry run too.")
def rebalance(source, output, once, interval, min_pending_age, stranded_above, sustained, max_moves,
              max_moves_per_node, max_gpu_hours_lost, max_gpu_hours_lost_per_day, cooldown, quiet_hours, ttl, reserve_timeout,
              placeholder_namespace, journal_dir, allow_local_storage, lease_name, lease_namespace, metrics_port,
              metrics_address, yes):
    """Make room for GPU pods that wait too long, by the fewest safe moves, reserving each destination first.

    A round is due when a pending GPU pod (or gang) has waited longer than --min-pending-age and the
    defrag planner finds a plan for it (every defrag rule: PDBs, gangs whole, controllers, local
    storage, priorities, safe-to-evict), or when --stranded-above holds for --sustained. The smallest
    plan goes first, within the budgets (the three smallest are each tried first; the round serving
    the most pods with the fewest moves wins). Each move's destination is held by a placeholder pod of the
    lowest priority class (kubegpu-placeholder, shipped with the chart) before anything is evicted;
    the replacement preempts it. Then the sources are cordoned and every step passes defrag's safety
    gate right before its eviction (Eviction API), all journaled in --journal-dir.

    \b
    Examples:
      kubegpu rebalance --demo --once              the round it would run on the demo
      kubegpu rebalance --once --yes --max-gpu-hours-lost 4
      kubegpu rebalance --yes --interval 5m --quiet-hours 08:00-18:00 --metrics-port 9108

    Loop mode (no --once) holds a coordination.k8s.io Lease and never acts without it; --once refuses
    to run while another process holds it. ^C/SIGTERM
    at any point leaves no cordon and no placeholder. Exit codes: 0 moved / nothing to do / dry
    run, 1 a plan was needed but could not run, 2 usage or input errors, 130/143 on signals.
    """
    from kubegpu.rebalance.budget import Budget, parse_quiet_hours
    from kubegpu.defrag.scope import namespace_policy
    from kubegpu.rebalance.controller import RebalanceOptions, Rebalancer

    budget = Budget(max_moves=max_moves, per_node=max_moves_per_node, max_gpu_hours_round=max_gpu_hours_lost,
                    max_gpu_hours_day=max_gpu_hours_lost_per_day, cooldown_s=cooldown,
                    quiet_hours=tuple(parse_quiet_hours(quiet_hours)))
    dry = bool(source.demo or source.snapshots) or not yes
    if not dry and not once and interval <= 0:
        raise UsageError("--interval must be longer than 0s")
    directory = Path(journal_dir)
    if not dry and not directory.is_dir():
        raise UsageError(f"--journal-dir {journal_dir}: not a directory")
    opts = RebalanceOptions(min_pending_age_s=min_pending_age, stranded_above=stranded_above, sustained_s=sustained,
                            budget=budget, journal_dir=None if dry else directory,
                            policy=namespace_policy(None, allow_local_storage=allow_local_storage), ttl_s=ttl,
                            placeholder_namespace=placeholder_namespace, prices=load_prices(source))
    if dry:
        if not once and not (source.demo or source.snapshots):
            raise UsageError("a live loop acts on the cluster: add --yes (or --once for a dry run)")
        state = load_state(source)
        report = Rebalancer(opts, lambda: state).round()
        _print(report, output)
        raise click.exceptions.Exit(_exit_code(report))
    from kubegpu.rebalance.loop import live_rebalancer, run_loop

    rebalancer = live_rebalancer(source, opts, reserve_timeout_s=reserve_timeout, owner=_owner(),
                                 identity=_identity())
    if once:
        from kubegpu.rebalance.leader import held_by_other
        from kubegpu.rebalance.loop import utc_now

        holder = held_by_other(rebalancer.ctx.api, lease_namespace or placeholder_namespace, lease_name, _identity(),
                               utc_now())
        if holder is not None:
            click.echo(f"error: rebalancer {holder} holds the Lease {lease_name} and is acting; not running a "
                       "round beside it", err=True)
            raise click.exceptions.Exit(1)
        report = rebalancer.round()
        _print(report, output)
        raise click.exceptions.Exit(_exit_code(report))
    code = run_loop(rebalancer, interval_s=interval, lease_name=lease_name,
                    lease_namespace=lease_namespace or placeholder_namespace, identity=_identity(),
                    metrics_address=metrics_address, metrics_port=metrics_port,
                    on_round=lambda report: _print(report, output))
    raise click.exceptions.Exit(code)


def _print(report, output: str) -> None:
    emit(to_plain(report), output, lambda con: round_table(con, report, wide=output == "wide"))


def _exit_code(report) -> int:
    if report.signal:
        return 128 + int(report.signal)
    return 0 if report.status in ("moved", "nothing-to-do", "dry-run") else 1
