"""The doctor's money section: what the waste costs, what each pending pod's wait has cost, and
which fix to do first, ranked by money saved per day."""

from __future__ import annotations

from typing import Any

import msgspec

from kubegpu.model.cluster import ClusterState
from kubegpu.money.cluster import ClusterPrices, PricesUsed
from kubegpu.money.findings import FindingCost, finding_costs, finding_fixes
from kubegpu.money.fixes import FixValue, defrag_fix, rank_fixes
from kubegpu.money.stranded import StrandedCost, frag_cost
from kubegpu.money.waits import PendingCost, pending_costs


class MoneySection(msgspec.Struct, frozen=True):
    prices: PricesUsed
    stranded: StrandedCost | None
    pools: list[StrandedCost]
    pending: list[PendingCost]
    findings: list[FindingCost]
    fix_first: list[FixValue]


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def money_section(state: ClusterState, sections: dict[str, Any], prices: ClusterPrices,
                  extra_fixes: list[FixValue] = ()) -> MoneySection:
    """Price what the other doctor sections found (those present; the rest is left out)."""
    frag = sections.get("fragmentation")
    cost = frag_cost(frag, prices) if frag is not None else None
    pending = [_get(p, "pod") for p in sections.get("pending") or []]
    audit = sections.get("audit")
    fixes = list(extra_fixes)
    preview = sections.get("defrag")
    fix = defrag_fix(preview, prices) if preview is not None else None
    if fix is not None:
        fixes.append(fix)
    findings = finding_costs(state, _get(audit, "findings") or [], prices) if audit else []
    fixes += finding_fixes(findings, prices)
    return MoneySection(prices=prices.used(), stranded=cost.stranded if cost else None,
                        pools=cost.pools if cost else [],
                        pending=pending_costs(state, pending, prices),
                        findings=findings, fix_first=rank_fixes(fixes))
