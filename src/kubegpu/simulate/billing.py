"""What the nodes cost: billed from creation (initialisation included) to deletion.

Per node: billed seconds = max(ceil(lifetime / granularity) * granularity, minimum); price tiers
multiply the list price after a node has been billed `after` (Tencent-style tiered pay-as-you-go);
reserved nodes (the first `reserved` of a group) cost (1 - reserved_discount) x list price and are
billed for the whole run, used or not, as a commitment is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubegpu.simulate.nodes import NodeRecord
from kubegpu.simulate.scenario import BillingSpec
from kubegpu.simulate.scenario_checks import seconds


@dataclass(frozen=True)
class Billing:
    currency: str
    granularity: float
    minimum: float
    tiers: tuple[tuple[float, float], ...]   # (billed seconds after which, price factor), ascending
    reserved_discount: float

    @classmethod
    def from_spec(cls, spec: BillingSpec, *, where: str) -> Billing:
        tiers = sorted((seconds(t.after, where=where, field="billing.tiers.after"), t.factor) for t in spec.tiers)
        return cls(currency=spec.currency, granularity=seconds(spec.granularity, where=where, field="billing.granularity"),
                   minimum=seconds(spec.minimum, where=where, field="billing.minimum"), tiers=tuple(tiers),
                   reserved_discount=spec.reserved_discount)

    def billed_seconds(self, lifetime: float) -> float:
        g = self.granularity
        return max(math.ceil(max(lifetime, 0.0) / g - 1e-9) * g, self.minimum)

    def charge(self, billed: float, price_per_hour: float) -> float:
        """Cost of `billed` seconds at the list price, through the tiers."""
        bounds = [0.0, *(t for t, _ in self.tiers), math.inf]
        factors = [1.0, *(f for _, f in self.tiers)]
        total = 0.0
        for lo, hi, f in zip(bounds, bounds[1:], factors):
            if billed > lo:
                total += (min(billed, hi) - lo) * f
        return total / 3600.0 * price_per_hour

    def node_cost(self, rec: NodeRecord, price_per_hour: float, end: float, *, upto: float | None = None) -> tuple[float, float]:
        """(billed seconds, cost) of one node until `upto` (default: its deletion or the end of the run)."""
        stop = rec.deleted if rec.deleted is not None else end
        if upto is not None:
            if upto <= rec.created:
                return 0.0, 0.0
            stop = min(stop, upto)
        if rec.reserved:
            billed = (upto if upto is not None else end) - rec.created
            return billed, billed / 3600.0 * price_per_hour * (1.0 - self.reserved_discount)
        billed = self.billed_seconds(stop - rec.created)
        return billed, self.charge(billed, price_per_hour)
