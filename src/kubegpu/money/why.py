"""Money on `kubegpu why`: how long the pod has waited and what that cost, and each remedy's one-off
cost next to what it unblocks.

One-off costs: work thrown away (move-pods and preempt: the victims' GPU-hours since their last
checkpoint or start, as the remedies already price them), or nodes added for an hour
(scale-node-group: the added nodes' hourly price, the least a cloud bills for bringing them up
and down again). Other remedies change a spec and cost nothing to run.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubegpu.money.amount import Money, money
from kubegpu.money.cluster import ClusterPrices
from kubegpu.money.waits import PendingCost, WaitCosts


class RemedyCost(msgspec.Struct, frozen=True):
    index: int                        # position in the report's `remedies`
    kind: str
    unblocks_gpus: float              # the GPUs of the pod it gets scheduled
    one_off_gpu_hours: float | None   # work lost or capacity added; None: nothing to run
    one_off: Money | None


class WhyMoney(msgspec.Struct, frozen=True):
    wait: PendingCost | None
    remedies: list[RemedyCost]


def _lost_gpu_hours(details: dict[str, Any]) -> float | None:
    if isinstance(details.get("gpu_hours_lost"), (int, float)):
        return float(details["gpu_hours_lost"])
    victims = details.get("victims")
    if isinstance(victims, list):
        return sum(float(v.get("gpu_hours_lost") or 0.0) for v in victims if isinstance(v, dict))
    return None


def _added_nodes(details: dict[str, Any], prices: ClusterPrices) -> tuple[float, Money | None] | None:
    """GPU-hours and money of `add_nodes` nodes of the group's pool for one hour."""
    count = details.get("add_nodes")
    group = details.get("group")
    if not isinstance(count, int) or not isinstance(group, str):
        return None
    found = prices.pool_node_hour(group)
    if found is None:
        return None
    gpus, dearest = found
    cost = money(count * dearest.per_hour, dearest.currency, "once", dearest.source) if dearest else None
    return float(count * gpus), cost


def why_money(report, costs: WaitCosts) -> WhyMoney:
    """The wait and remedy costs of one `why` report (pods that wait only)."""
    prices = costs.prices
    wait = costs.of(report.pod) if not report.schedulable else None
    gpus = wait.gpus if wait else 0.0
    rate = costs.rate
    out = []
    for i, r in enumerate(report.remedies):
        details = r.details if isinstance(r.details, dict) else {}
        hours, cost = None, None
        lost = _lost_gpu_hours(details) if r.kind in ("move-pods", "preempt") else None
        if lost is not None:
            hours, cost = lost, rate.of(lost, "once") if rate else None
        elif r.kind == "scale-node-group":
            added = _added_nodes(details, prices)
            if added is not None:
                hours, cost = added
        out.append(RemedyCost(index=i, kind=r.kind, unblocks_gpus=gpus,
                              one_off_gpu_hours=round(hours, 3) if hours is not None else None, one_off=cost))
    return WhyMoney(wait=wait, remedies=out)


def why_json(report, costs: WaitCosts) -> dict:
    """`kubegpu why -o json` for one pod: the report with its `money` added (CLI and /api/why alike)."""
    return {**msgspec.to_builtins(report), "money": msgspec.to_builtins(why_money(report, costs))}
