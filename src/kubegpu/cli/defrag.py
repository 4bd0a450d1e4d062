"""`kubegpu defrag`: the fewest safe moves that make room; `--apply` carries them out through the Eviction API."""

from __future__ import annotations

from datetime import datetime, timezone

import click
import msgspec

from kubegpu.cli.columns import Col, show
from kubegpu.cli.options import load_prices, load_state, output_option, source_options
from kubegpu.cli.render import emit, to_plain
from kubegpu.cli.writer import write_atomic
from kubegpu.jsontext import dump_json
from kubegpu.cli.render import literal
from kubegpu.defrag import Goal, Plan, after_state, plan_defrag
from kubegpu.defrag.scope import namespace_policy, plan_in_namespace
from kubegpu.errors import UsageError
from kubegpu.money.cluster import cluster_prices
from kubegpu.money.fixes import defrag_json
from kubegpu.model.text import counted


def headline(plan: Plan) -> str:
    """One line: the goal and what reaching it costs (GPU-hours with two decimals)."""
    if plan.feasible and plan.moves:
        return (f"{plan.goal.describe()}: {counted(len(plan.moves), 'move')} in {counted(len(plan.steps), 'step')}, "
                f"{plan.total_cost_gpu_hours:.2f} GPU-hours of work lost")
    return plan.message


def solver_line(plan: Plan) -> str | None:
    s = plan.solver
    if s is None:
        return None
    heur = (f"heuristic: {counted(s.heuristic_moves, 'move')} in {s.heuristic_seconds:g} s" if s.heuristic_moves is not None
            else "heuristic: no plan")
    exact = f"exact: {s.milp_status}" if s.milp_status else "exact: not run"
    if s.milp_moves is not None:
        exact += f", {counted(s.milp_moves, 'move')}"
    gap = f"; heuristic gap {s.optimality_gap:.1%}" if s.optimality_gap is not None else ""
    return f"planner: {s.method} ({heur}; {exact}{gap})"


def stay_groups(stay) -> list[tuple[str, int, float, list[str]]]:
    """(reason, pods, GPUs, pod names) per distinct reason, most GPUs first."""
    groups: dict[str, list] = {}
    for s in stay:
        reason = s.reasons[0] if s.reasons else "not movable"
        g = groups.setdefault(reason, [0, 0.0, []])
        g[0] += 1
        g[1] += s.gpus
        g[2].append(s.pod)
    return sorted(((r, n, gpus, names) for r, (n, gpus, names) in groups.items()), key=lambda x: (-x[2], x[0]))


def money_line(value: dict) -> str:
    """The plan's one-off cost against what its freed GPUs are worth a day."""
    def fmt(m: dict | None, hours: float, unit: str) -> str:
        return f"{m['amount']:,.2f} {m['currency']}" if m else f"{hours:g} {unit}"
    line = (f"money: costs {fmt(value['one_off'], value['one_off_gpu_hours'], 'GPU-hours')} once (work lost); "
            f"frees GPUs worth {fmt(value['saves_per_day'], value['saves_gpu_hours_per_day'], 'GPU-hours')}/day")
    if value["payback_hours"] is not None:
        line += f"; pays back in {value['payback_hours']:g} h"
    source = (value["one_off"] or {}).get("source")
    return line + (f" (price: {source})" if source else " (no price: GPU-hours)")


MOVE_COLS = [Col("STEP", right=True), Col("POD"), Col("FROM"), Col("TO"), Col("GPUS", right=True, drop=1),
             Col("GPU-H LOST", right=True), Col("GANG", drop=2)]  # narrow: GANG goes first, then GPUS
BASIS_COL = Col("COST BASIS", wrap=True)  # -o wide only


def move_row(m, wide: bool) -> list[str]:
    c = m.cost
    row = [str(m.step), literal(m.pod), literal(m.from_), literal(m.to), f"{c.gpus:g}" if c else "-",
           f"{c.gpu_hours:.2f}" if c else "-", literal(m.gang or "-")]
    return [*row, literal(c.basis) if c else "-"] if wide else row


def plan_table(con, plan: Plan, *, wide: bool, applying: bool = False, money: dict | None = None) -> None:
    con.print(f"[bold]{literal(headline(plan))}[/]")
    if plan.moves:
        show(con, [*MOVE_COLS, BASIS_COL] if wide else MOVE_COLS, [move_row(m, wide) for m in plan.moves], wide=wide)
    for target in plan.targets:
        what = target.pod or (f"a {target.gpus}-GPU pod" if target.gpus else "emptied")
        con.print(f"  -> {literal(target.node)}: {literal(what)}")
    if plan.before and plan.after:
        b, a = plan.before["fits_by_size"], plan.after["fits_by_size"]
        con.print("fits_by_size before -> after: " + ", ".join(f"{k}-GPU {b[k]}->{a[k]}" for k in b))
    if money and plan.moves:
        con.print(literal(money_line(money)), soft_wrap=not con.is_terminal)
    stay = [s for s in plan.pods if not s.movable and (wide or s.gpus)]
    if stay and wide:
        con.print("pods that stay")
        show(con, [Col("POD"), Col("NODE"), Col("GPUS", right=True), Col("WHY IT STAYS", wrap=True)],
             [[literal(s.pod), literal(s.node), f"{s.gpus:g}", literal("; ".join(s.reasons))] for s in stay], wide=wide)
    elif stay:
        con.print("GPU pods that stay (each pod: -o wide)")
        show(con, [Col("PODS", right=True), Col("GPUS", right=True), Col("WHY THEY STAY", wrap=True)],
             [[str(n), f"{gpus:g}", literal(reason)] for reason, n, gpus, _ in stay_groups(stay)], wide=wide)
    line = solver_line(plan)
    if line:
        con.print(f"[dim]{line}[/]")
    if plan.moves and applying:
        con.print(f"[bold]about to: cordon {literal(', '.join(plan.cordon))}; evict {counted(len(plan.moves), 'pod')} in "
                  f"{counted(len(plan.steps), 'step')}, each re-checked on the live pods first; then uncordon.[/]")
    elif plan.moves and not plan.applied:
        con.print(f"[dim]dry run, nothing changed. --apply would: cordon {literal(', '.join(plan.cordon))}; evict "
                  f"{counted(len(plan.moves), 'pod')} in {counted(len(plan.steps), 'step')}, each step re-checked on the live pods "
                  f"and waiting for its pods to be gone and replaced; then uncordon.[/]")


def _state_list(state) -> dict:
    """The after-state as a v1 List that `kubegpu why --snapshot` reads."""
    from kubegpu.model.kinds import GenericObject
    from kubegpu.sources.documents import snapshot_info_object

    items = [snapshot_info_object(server_version=state.server_version,
                                  captured_at=state.captured_at or datetime.now(timezone.utc).isoformat(),
                                  source="kubegpu defrag (planned after-state)")]
    for obj in state.objects:
        items.append(obj.body if isinstance(obj, GenericObject) and obj.body else msgspec.to_builtins(obj))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _goal(for_pod, size, count, empty, max_moves, max_cost, namespace) -> Goal:
    chosen = [x for x in (for_pod, size, empty) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError("choose one goal: --for POD, --size K or --empty-nodes N")
    if for_pod is not None:
        name = for_pod if "/" in for_pod or not namespace else f"{namespace}/{for_pod}"
        return Goal(kind="pod", pod=name, max_moves=max_moves, max_cost_gpu_hours=max_cost)
    if size is not None:
        return Goal(kind="size", size=size, count=count, max_moves=max_moves, max_cost_gpu_hours=max_cost)
    return Goal(kind="empty-nodes", count=empty, max_moves=max_moves, max_cost_gpu_hours=max_cost)


@click.command()
@source_options
@output_option()
@click.option("--for", "for_pod", metavar="POD", help="Make this pending pod (or its whole gang) schedulable.")
@click.option("--size", type=click.IntRange(min=1), metavar="K",
              help="Make room for more K-GPU pods (fits_by_size[K]).")
@click.option("--count", type=click.IntRange(1, 10_000), default=1, show_default=True, help="With --size: how many more (1-10000).")
@click.option("--empty-nodes", "empty", type=click.IntRange(min=1), metavar="N",
              help="Empty N GPU nodes (scale-down).")
@click.option("--max-moves", type=click.IntRange(min=0),
              help="Never plan more pod moves than this; with --apply/--resume, evict at most this many in this run.")
@click.option("--max-cost", type=click.FloatRange(min=0), metavar="GPU_HOURS",
              help="Never lose more GPU-hours of work (with --apply/--resume: in this run, priced on the live pods).")
@click.option("--allow-local-storage", is_flag=True, help="Also move pods whose emptyDir/hostPath data would be lost.")
@click.option("--exact", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Run the exact (MILP) planner too: on small and medium clusters, always, or never.")
@click.option("--time-limit", type=click.FloatRange(min=1), default=20.0, show_default=True,
              help="Seconds the exact planner may take.")
@click.option("--write-after", metavar="FILE",
              help="Write the planned after-state as a snapshot (kubegpu why --snapshot FILE).")
@click.option("--apply", "do_apply", is_flag=True, help="Carry the plan out: cordon, evict step by step, uncordon.")
@click.option("--yes", is_flag=True, help="With --apply: do not ask for confirmation.")
@click.option("--journal", metavar="FILE",
              help="With --apply: the journal to write (default kubegpu-defrag-<time>.jsonl).")
@click.option("--resume", metavar="JOURNAL",
              help="Continue a stopped run from its journal (same cluster only; no new plan; live source only).")
@click.option("--rate", type=click.FloatRange(min=0.01), metavar="PODS_PER_MIN",
              help="With --apply: at most this many evictions per minute.")
@click.option("--eviction-timeout", type=click.FloatRange(min=1), default=120.0, show_default=True,
              help="Seconds to keep retrying an eviction refused with 429.")
@click.option("--replacement-timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds to wait for each replacement pod to run.")
def defrag(source, output, for_pod, size, count, empty, max_moves, max_cost, allow_local_storage, exact, time_limit,
           write_after, do_apply, yes, journal, resume, rate, eviction_timeout, replacement_timeout):
    """Plan the fewest safe moves that make room; dry run unless --apply.

    A move is planned only for a pod whose controller recreates it, that no annotation protects
    (safe-to-evict "false", karpenter.sh/do-not-disrupt), without node-local data (unless
    --allow-local-storage), whose PDB still allows it (budgets are used up across the plan),
    never of higher priority than the pod it makes room for, gangs whole or not at all, and onto
    a node that passes every kube-scheduler filter. Each move is priced in GPU-hours of work lost
    since the pod's last checkpoint (kubegpu.io/last-checkpoint or kubegpu.io/checkpoint-interval
    annotations, else its run time) plus restart time. With -n NS only the pods of NS may
    move and are listed; the others stay where they are (-A, all namespaces, is the default).

    \b
    Examples:
      kubegpu defrag --demo --for ml-training/ppo-actor -o json
      kubegpu defrag --demo --size 4
      kubegpu defrag --empty-nodes 2 --max-cost 10
      kubegpu defrag --for team-a/trainer-0 --apply --journal defrag.jsonl --rate 6
      kubegpu defrag --resume defrag.jsonl

    With --apply, every step is re-checked on the live pods right before its eviction (the same
    rules), and every change is journaled before it is sent. Exit codes: 0 finished (or a dry
    run with a plan), 1 stopped (resumable with --resume), aborted, or no plan; 2 usage or input
    errors; 130/143 stopped by SIGINT/SIGTERM (resumable, nodes uncordoned).
    """
    from kubegpu.defrag.executor import ExecutorOptions

    opts = ExecutorOptions(rate_per_minute=rate, max_moves=max_moves, max_cost_gpu_hours=max_cost,
                           eviction_deadline_s=eviction_timeout, replacement_timeout_s=replacement_timeout)
    if resume:
        if for_pod or size or empty:
            raise click.UsageError("--resume continues the journal's own plan: give no goal with it")
        if source.demo or source.snapshots:
            raise UsageError("--resume acts on the live cluster the journal records: drop --demo/--snapshot")
        from kubegpu.defrag.api import LightkubeApi
        from kubegpu.defrag.executor import Executor
        from kubegpu.defrag.journal import Journal

        api = LightkubeApi.from_kubeconfig(source.kubeconfig, source.context)
        _finish(Executor(api, Journal(resume), opts).resume(), output)
        return
    goal = _goal(for_pod, size, count, empty, max_moves, max_cost, source.namespace)
    if do_apply and (source.demo or source.snapshots):
        raise UsageError("--apply acts on a live cluster: drop --demo/--snapshot")
    state = load_state(source)
    scope = source.scope(state)  # -A, and the note for an unknown or pod-less namespace
    policy = namespace_policy(scope.namespace, allow_local_storage=allow_local_storage)
    plan = plan_defrag(state, goal, policy=policy, exact=exact, milp_time_limit=time_limit)
    if write_after:
        write_atomic(write_after, dump_json(_state_list(after_state(state, plan))).encode())
    view = plan_in_namespace(plan, scope.namespace)
    if not do_apply or not plan.feasible or not plan.moves:
        data = defrag_json(view, cluster_prices(state, load_prices(source)))
        emit(data, output, lambda con: plan_table(con, view, wide=output == "wide", money=data["money"]))
        if not plan.feasible:
            raise click.exceptions.Exit(1)
        return
    from kubegpu.cli.render import console
    from kubegpu.defrag.api import LightkubeApi
    from kubegpu.defrag.executor import Executor
    from kubegpu.defrag.journal import Journal

    path = journal or f"kubegpu-defrag-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.jsonl"
    executor = Executor(LightkubeApi.from_kubeconfig(source.kubeconfig, source.context), Journal(path), opts, policy)
    executor.check_new(plan)
    plan_table(console(stderr=True), view, wide=False, applying=True)
    if not yes and not click.confirm(f"Apply these {counted(len(plan.moves), 'move')} to {source.describe()}?", err=True):
        raise click.exceptions.Exit(1)
    _finish(executor.apply(plan), output)


def report_table(con, report) -> None:
    word = {"finished": "[green]finished[/]", "stopped": "[yellow]stopped[/]", "aborted": "[red]aborted[/]"}
    con.print(f"[bold]{word.get(report.status, report.status)}[/]: {report.message}")
    for pod, where in report.replacements.items():
        con.print(f"  {pod} -> {where}")
    for d in report.deviations:
        con.print(f"  [yellow]{d}[/]")
    if report.uncordoned:
        con.print(f"uncordoned: {', '.join(report.uncordoned)}")
    for node in report.left_cordoned:
        con.print(f"[red]still cordoned by this run: {node}[/] (run `kubectl uncordon {node}`)")
    for rec in report.unrecorded:
        con.print(f"[red]not journaled:[/] {rec}")
    hint = f" (continue with --resume {report.journal})" if report.resumable else ""
    con.print(f"journal: {report.journal}{hint}")


def _finish(report, output: str) -> None:
    """Print the run's report; exit 0 finished, 128+N after signal N, else 1."""
    emit(to_plain(vars(report)), output, lambda con: report_table(con, report))
    if report.signal:
        raise click.exceptions.Exit(128 + int(report.signal))
    if report.status != "finished":
        raise click.exceptions.Exit(1)
