"""Karpenter NodePool disruption settings of a scenario (`autoscaler:` with provider: karpenter).

Kept apart from the model (`karpenter.py`) so the scenario loader can validate them without
importing the engine's modules.
"""

from __future__ import annotations

import math
from typing import Any

from kubegpu.errors import InputError
from kubegpu.model.timeutil import parse_duration

POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")
FIELDS = ("consolidationPolicy", "consolidateAfter", "budgets")


class KarpenterSettings:
    def __init__(self, raw: dict[str, Any], *, where: str) -> None:
        for key in raw:
            if key not in FIELDS:
                raise InputError(f"unknown Karpenter NodePool disruption field {key!r}", where=where,
                                 field=f"autoscaler.{key}")
        self.policy = str(raw.get("consolidationPolicy", "WhenEmptyOrUnderutilized"))
        if self.policy not in POLICIES:
            raise InputError(f"{self.policy!r} is not one of {', '.join(POLICIES)}", where=where,
                             field="autoscaler.consolidationPolicy")
        after = raw.get("consolidateAfter", "0s")
        self.consolidate_after = None if after == "Never" else parse_duration(str(after), bare_seconds=True)
        if after != "Never" and self.consolidate_after is None:
            raise InputError(f"{after!r} is not a duration or Never", where=where, field="autoscaler.consolidateAfter")
        self.budgets = []
        for i, b in enumerate(raw.get("budgets", [{"nodes": "10%"}]) or []):
            nodes = str(b.get("nodes", "10%")) if isinstance(b, dict) else None
            ok = nodes is not None and ((nodes.endswith("%") and nodes[:-1].isdigit()) or nodes.isdigit())
            if not ok or set(b) - {"nodes"}:
                raise InputError(f"{b!r}: a budget is {{nodes: N or N%}}", where=where, field=f"autoscaler.budgets.{i}")
            self.budgets.append(nodes)

    def allowed_disruptions(self, total: int) -> int:
        """The most restrictive budget (upstream rounds a percentage up)."""
        limits = [math.ceil(total * int(n[:-1]) / 100) if n.endswith("%") else int(n) for n in self.budgets]
        return min(limits, default=total)
