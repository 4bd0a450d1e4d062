"""What a fix costs once and what it saves a day, and the doctor's "fix first" list ranked by money.

A fix that frees stranded GPUs saves their GPU-hours every day the cluster would otherwise stay
as it is; a fix that throws work away (a defrag move restarts a pod from its last checkpoint)
costs those GPU-hours once. Ranked by money saved per day when priced, else by GPU-hours.
"""

from __future__ import annotations

import msgspec

from kubegpu.fragmentation.report import stranded_of
from kubegpu.money.amount import HOURS_PER_DAY, Money
from kubegpu.money.cluster import ClusterPrices
from kubegpu.model.text import counted


class FixValue(msgspec.Struct, frozen=True):
    kind: str                          # "defrag", "share", "checkpoint", ...
    summary: str
    command: str | None
    one_off_gpu_hours: float           # work thrown away (or capacity added) once
    one_off: Money | None
    saves_gpu_hours_per_day: float     # stranded GPU-hours a day put back to work
    saves_per_day: Money | None
    payback_hours: float | None        # one-off / savings per hour (None: nothing saved)


def fix_value(kind: str, summary: str, *, prices: ClusterPrices, one_off_gpu_hours: float = 0.0,
              frees_gpus: float = 0.0, nodes: list[str] | None = None, command: str | None = None) -> FixValue:
    """A fix priced at the GPU-hour rate of `nodes` (default the cluster's GPU nodes)."""
    rate = prices.rate(nodes)
    per_day = max(frees_gpus, 0.0) * HOURS_PER_DAY
    payback = round(one_off_gpu_hours / max(frees_gpus, 0.0), 2) if frees_gpus > 0 else None
    return FixValue(kind=kind, summary=summary, command=command, one_off_gpu_hours=round(one_off_gpu_hours, 3),
                    one_off=rate.of(one_off_gpu_hours, "once") if rate else None,
                    saves_gpu_hours_per_day=round(per_day, 2),
                    saves_per_day=rate.of(per_day, "day") if rate else None, payback_hours=payback)


def rank_fixes(fixes: list[FixValue]) -> list[FixValue]:
    """Most saved per day first (money when every fix is priced in one currency, else GPU-hours);
    ties: the cheaper one-off first."""
    priced = all(f.saves_per_day for f in fixes) and len({f.saves_per_day.currency for f in fixes}) <= 1

    def key(f: FixValue):
        saved = f.saves_per_day.amount if priced else f.saves_gpu_hours_per_day
        return (-saved, f.one_off_gpu_hours, f.kind, f.summary)

    return sorted(fixes, key=key)


def plan_value(plan, prices: ClusterPrices) -> FixValue | None:
    """A defrag plan's work lost (GPU-hours x price, once) against the stranded GPUs it frees a day."""
    before, after = stranded_of(plan.before), stranded_of(plan.after)
    if not plan.feasible or before is None or after is None:
        return None
    freed = max(before - after, 0.0)
    summary = f"{counted(len(plan.moves), 'move')} free {freed:.2f} stranded GPUs ({before:g} -> {after:g})"
    return fix_value("defrag", summary, prices=prices, one_off_gpu_hours=plan.total_cost_gpu_hours, frees_gpus=freed)


def defrag_json(plan, prices: ClusterPrices) -> dict:
    """`kubegpu defrag -o json`: the plan with its `money` added (the CLI and /api/defrag alike)."""
    value = plan_value(plan, prices)
    return {**msgspec.to_builtins(plan), "money": msgspec.to_builtins(value) if value else None}


def defrag_fix(preview, prices: ClusterPrices) -> FixValue | None:
    """The doctor's defrag preview as a fix: its moves' lost work against the stranded GPUs it frees."""
    if not getattr(preview, "feasible", False) or preview.stranded_before is None or preview.stranded_after is None:
        return None
    freed = max(preview.stranded_before - preview.stranded_after, 0.0)
    summary = (f"defrag: {counted(len(preview.moves), 'move')} make room for {preview.target} ({preview.gpus} GPUs); "
               f"frees {freed:.2f} stranded GPUs")
    return fix_value("defrag", summary, prices=prices, one_off_gpu_hours=preview.cost_gpu_hours, frees_gpus=freed,
                     command=preview.command)
