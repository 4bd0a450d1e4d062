"""PodDisruptionBudgets, simulated across a whole plan.

The API server refuses an eviction with 429 when the pod's PDB has no disruption left. A plan is
checked the same way, step by step, with each PDB's `disruptionsAllowed` used up as the plan
evicts its pods. The budget does not refill within a plan (the replacement pods' readiness is
not something a plan can count on), so a plan that passes here is never refused by a budget
that was intact when the plan was made.

upstream (pkg/registry/core/pod/storage/eviction.go): a pod matched by several PDBs cannot be
evicted; a not-ready pod may go when `unhealthyPodEvictionPolicy: AlwaysAllow`, or when the
budget is otherwise healthy (IfHealthyBudget, the default); otherwise disruptionsAllowed must be
above zero and the eviction uses one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod, PodDisruptionBudget
from kubegpu.model.selectors import selector_matches

R_EXHAUSTED = "PodDisruptionBudget {ns}/{name} allows no more disruptions ({healthy} healthy, needs {desired})"
R_EXHAUSTED_BY_PLAN = ("PodDisruptionBudget {ns}/{name} allows {allowed} disruption(s), "
                       "already used by earlier moves of this plan")


def pod_is_ready(pod: Pod) -> bool:
    """Ready condition True and not being deleted: what the disruption controller counts as healthy."""
    if pod.metadata.deletion_timestamp is not None or pod.is_terminal:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def _scaled(value: int | str, total: int, *, round_up: bool) -> int:
    """An IntOrString of a PDB: an int, or a percentage of `total` (upstream GetScaledValueFromIntOrPercent)."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        pct = float(text[:-1] or 0)
        raw = pct * total / 100.0
        return math.ceil(raw - 1e-9) if round_up else math.floor(raw + 1e-9)
    return int(text)


@dataclass
class BudgetState:
    """One PDB's numbers as the disruption controller would publish them."""

    namespace: str
    name: str
    allowed: int
    desired: int
    healthy: int
    always_allow_unhealthy: bool
    initial_allowed: int


def budget_of(pdb: PodDisruptionBudget, pods: list[Pod]) -> BudgetState:
    """The PDB's budget: its published status when the controller has filled it, else computed.

    Computed like the disruption controller: expected = matching pods, desired healthy from
    minAvailable (percentages round up) or expected - maxUnavailable (percentages round up).
    """
    spec, status = pdb.spec, pdb.status
    always = (spec.unhealthy_pod_eviction_policy or "IfHealthyBudget") == "AlwaysAllow"
    published = status.expected_pods > 0 or status.desired_healthy > 0 or status.current_healthy > 0
    if published or not pods:
        allowed, desired, healthy = status.disruptions_allowed, status.desired_healthy, status.current_healthy
    else:
        expected = len(pods)
        healthy = sum(1 for p in pods if pod_is_ready(p))
        if spec.max_unavailable is not None:
            desired = max(expected - _scaled(spec.max_unavailable, expected, round_up=True), 0)
        elif spec.min_available is not None:
            desired = _scaled(spec.min_available, expected, round_up=True)
        else:
            desired = 0  # neither set: upstream's expected and desired counts stay 0, every healthy pod may go
        allowed = max(healthy - desired, 0)
    return BudgetState(namespace=pdb.namespace, name=pdb.name, allowed=allowed, desired=desired,
                       healthy=healthy, always_allow_unhealthy=always, initial_allowed=allowed)


class BudgetLedger:
    """Every PDB's remaining disruptions while a plan is built or checked."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.budgets: dict[tuple[str, str], BudgetState] = {}
        for pdb in state.of_kind("PodDisruptionBudget"):
            matching = [p for p in state.pods if p.namespace == pdb.namespace and not p.is_terminal
                        and selector_matches(pdb.spec.selector, p.labels)]
            self.budgets[(pdb.namespace, pdb.name)] = budget_of(pdb, matching)

    def copy(self) -> "BudgetLedger":
        new = object.__new__(BudgetLedger)
        new.state = self.state
        new.budgets = {k: BudgetState(**vars(b)) for k, b in self.budgets.items()}
        return new

    def budget_of(self, pod: Pod) -> BudgetState | None:
        pdbs = self.state.pdbs_for(pod)
        if len(pdbs) != 1:
            return None  # none, or several (refused by evictability before any budget is asked)
        return self.budgets.get((pdbs[0].namespace, pdbs[0].name))

    def needs(self, pod: Pod, budget: BudgetState) -> int:
        """Disruptions this pod's eviction uses: 0 for a not-ready pod the policy lets go."""
        if pod_is_ready(pod):
            return 1
        if budget.always_allow_unhealthy:
            return 0
        if budget.healthy >= budget.desired > 0:
            return 0
        return 1

    def blocked(self, pods: Iterable[Pod]) -> str | None:
        """Why evicting all of `pods` now would be refused (None: the budgets allow it)."""
        use: dict[tuple[str, str], int] = {}
        for pod in pods:
            b = self.budget_of(pod)
            if b is None:
                continue
            key = (b.namespace, b.name)
            use[key] = use.get(key, 0) + self.needs(pod, b)
        for key, n in sorted(use.items()):
            b = self.budgets[key]
            if n > b.allowed:
                if b.allowed < b.initial_allowed or (n > 1 and b.allowed > 0):
                    return R_EXHAUSTED_BY_PLAN.format(ns=b.namespace, name=b.name, allowed=b.initial_allowed)
                return R_EXHAUSTED.format(ns=b.namespace, name=b.name, healthy=b.healthy, desired=b.desired)
        return None

    def take(self, pods: Iterable[Pod]) -> None:
        """Use the disruptions that evicting `pods` costs (call only when `blocked` said None)."""
        for pod in pods:
            b = self.budget_of(pod)
            if b is None:
                continue
            n = self.needs(pod, b)
            b.allowed -= n
            if pod_is_ready(pod):
                b.healthy -= 1

    def exhausted(self, pod: Pod) -> bool:
        """True when the pod's PDB has no disruption left at all (before any plan)."""
        b = self.budget_of(pod)
        return b is not None and b.initial_allowed == 0 and self.needs(pod, b) > 0

    def exhausted_reason(self, pod: Pod) -> str | None:
        """Why the pod's PDB forbids its eviction before any plan (None when it allows one)."""
        return self.blocked([pod]) if self.exhausted(pod) else None

    def remaining(self) -> dict[str, int]:
        return {f"{ns}/{name}": b.allowed for (ns, name), b in sorted(self.budgets.items())}
