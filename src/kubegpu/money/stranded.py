"""What stranded GPUs cost: the frag headline (stranded_for_demand) priced per pool, per hour and per day.

"Per day" is the stranded GPUs of this moment held for 24 hours: what the waste costs if the
cluster stays as it is, not a forecast.
"""

from __future__ import annotations

import msgspec

from kubegpu.fragmentation.report import FragReport
from kubegpu.money.amount import HOURS_PER_DAY, Money, money
from kubegpu.money.cluster import ClusterPrices, PricesUsed


class StrandedCost(msgspec.Struct, frozen=True):
    """Stranded GPUs (free GPUs the demand cannot use) as GPU-hours and, when priced, money."""

    pool: str | None               # None: the whole cluster
    stranded_gpus: float
    gpu_hours_per_day: float
    per_hour: Money | None
    per_day: Money | None


class FragCost(msgspec.Struct, frozen=True):
    stranded: StrandedCost
    pools: list[StrandedCost]
    prices: PricesUsed


def _cost(pool: str | None, gpus: float, prices: ClusterPrices, nodes: list[str] | None) -> StrandedCost:
    rate = prices.rate(nodes)
    return StrandedCost(pool=pool, stranded_gpus=round(gpus, 2), gpu_hours_per_day=round(gpus * HOURS_PER_DAY, 2),
                        per_hour=rate.of(gpus, "hour") if rate else None,
                        per_day=rate.of(gpus * HOURS_PER_DAY, "day") if rate else None)


def frag_json(report: FragReport, cost: FragCost) -> dict:
    """`kubegpu frag -o json`: the frag report with its `cost` added (the CLI and /api/frag alike)."""
    return {**msgspec.to_builtins(report), "cost": msgspec.to_builtins(cost)}


def frag_cost(report: FragReport, prices: ClusterPrices) -> FragCost:
    """The report's stranded GPUs, per pool and in all, priced at each pool's GPU-hour rate.

    The cluster figure is the sum of the pools' (each at its own rate) when every pool with
    stranded GPUs is priced in one currency; else GPU-hours only."""
    pools = [_cost(row.pool, row.stranded_for_demand.gpus, prices, prices.pool_nodes(row.pool))
             for row in report.pools if row.gpus.total]
    total = report.stranded_for_demand.gpus
    whole = _cost(None, total, prices, None)
    wasted = [p for p in pools if p.stranded_gpus > 0]
    if wasted and all(p.per_hour for p in wasted) and len({p.per_hour.currency for p in wasted}) == 1:
        # the pools' own rates (a cheap pool's stranded GPUs cost less than the average's)
        hour = sum(p.per_hour.amount for p in wasted)
        ref = wasted[0].per_hour
        source = "; ".join(dict.fromkeys(p.per_hour.source for p in wasted))
        whole = msgspec.structs.replace(whole, per_hour=money(hour, ref.currency, "hour", source),
                                        per_day=money(hour * HOURS_PER_DAY, ref.currency, "day", source))
    return FragCost(stranded=whole, pools=pools, prices=prices.used())
