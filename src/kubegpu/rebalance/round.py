"""Plan one rebalance round: which pending pods get room, with which moves, within the budgets.

Every plan comes from the defrag planner (every evictability rule: PDBs, gangs as units,
controllers, local storage, priorities, safe-to-evict annotations; every destination checked by
the scheduling core). The smallest plan goes first (fewest moves, then least work lost); once it
is admitted the others are planned again on the cluster as it will be (`next_plan`), because two
plans may want the same pods or the same room. The live round (controller.py) re-reads the
cluster instead of assuming the after-state.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import msgspec

from kubegpu.defrag import EvictionPolicy, Goal, Plan, after_state, plan_defrag
from kubegpu.errors import InputError, UsageError
from kubegpu.model.cluster import ClusterState
from kubegpu.money.cluster import ClusterPrices
from kubegpu.money.fixes import plan_value
from kubegpu.rebalance.budget import RoundAllowance
from kubegpu.rebalance.reservation import Reservation
from kubegpu.rebalance.trigger import Candidate, StrandedReading


class MoveOutcome(msgspec.Struct, kw_only=True):
    pod: str
    from_: str = msgspec.field(name="from")
    to: str
    gpus: float
    gpu_hours: float
    outcome: str = "planned"       # planned | moved | elsewhere | failed | not-run
    replacement: str | None = None  # "ns/name@node"


class PlanEntry(msgspec.Struct, kw_only=True):
    """One plan of the round: what it is for, its moves and reservations, what became of it."""

    target: str                    # ns/pod, ns/gang, or "size:K" for a stranded-GPUs goal
    trigger: str                   # pending | stranded
    status: str                    # planned | skipped | done | failed | stopped
    reason: str = ""
    pending_seconds: float | None = None
    moves: list[MoveOutcome] = []
    reservations: list[dict] = []
    gpu_hours_lost: float = 0.0
    lands_on: list[str] = []       # "pod -> node" for the beneficiaries
    journal: str | None = None
    money: dict | None = None      # defrag's pricing: work lost once against stranded GPUs freed a day


class RoundReport(msgspec.Struct, kw_only=True):
    """`kubegpu rebalance -o json` (docs/schemas/rebalance.schema.json)."""

    mode: str                      # dry-run | live
    at: str
    status: str                    # moved | nothing-to-do | blocked | failed | dry-run | not-leader | stopped
    message: str
    run: str | None = None
    candidates: list[dict] = []
    plans: list[PlanEntry] = []
    skipped: str | None = None     # why the whole round did not run (quiet hours, cooldown)
    budget: dict = {}
    fits_by_size: dict = {}
    stranded: dict = {}
    leftovers_removed: list[str] = []
    resumed: list[str] = []
    signal: int | None = None
    prices: dict | None = None     # where the plans' prices came from (money.cluster.PricesUsed)


def candidate_row(c: Candidate) -> dict[str, Any]:
    return {"target": c.key, "gang": c.gang, "gpus": c.gpus, "pending_seconds": round(c.pending_seconds, 1),
            "priority": c.priority, "outcome": "", "reason": ""}


def plan_for(state: ClusterState, target: str, policy: EvictionPolicy, time_limit: float) -> Plan | None:
    """The defrag plan for one pending pod or gang (None when the planner cannot read the goal)."""
    try:
        return plan_defrag(state, Goal(kind="pod", pod=target), policy=policy, milp_time_limit=time_limit)
    except (InputError, UsageError):
        return None  # gone or bound since the candidates were listed


def useful(plan: Plan | None) -> bool:
    return plan is not None and plan.feasible and bool(plan.moves)


def smallest_first(plans: list[tuple[Candidate, Plan]]) -> list[tuple[Candidate, Plan]]:
    return sorted(plans, key=lambda cp: (len(cp[1].moves), cp[1].total_cost_gpu_hours, -cp[0].pending_seconds,
                                         cp[0].key))


def next_plan(state: ClusterState, candidates: list[Candidate], allowance: RoundAllowance, policy: EvictionPolicy,
              time_limit: float) -> tuple[Candidate, Plan] | None:
    """The smallest admissible plan for the candidates on `state`; those the budget refuses are noted
    in `allowance.skipped` ("target: reason") and left out."""
    planned = [(c, p) for c in candidates for p in [plan_for(state, c.key, policy, time_limit)] if useful(p)]
    for cand, plan in smallest_first(planned):
        why = allowance.admit(plan)
        if why is None:
            return cand, plan
        allowance.skipped.append(f"{cand.key}: {why}")
    return None


def _greedy(state: ClusterState, first: tuple[Candidate, Plan], candidates: list[Candidate],
            allowance: RoundAllowance, policy: EvictionPolicy, time_limit: float) -> list[tuple[Candidate, Plan]]:
    seq = [first]
    state = with_beneficiaries(state, first[1])
    remaining = [c for c in candidates if c.key != first[0].key]
    while remaining:
        pick = next_plan(state, remaining, allowance, policy, time_limit)
        if pick is None:
            break
        seq.append(pick)
        remaining = [c for c in remaining if c.key != pick[0].key]
        state = with_beneficiaries(state, pick[1])
    return seq


def choose_sequence(state: ClusterState, candidates: list[Candidate], allowance: RoundAllowance,
                    policy: EvictionPolicy, time_limit: float, lookahead: int = 3
                    ) -> tuple[list[tuple[Candidate, Plan]], RoundAllowance]:
    """The round's plans in order: smallest plan first, then the next smallest on the cluster as it will
    be, and so on within the budgets. Two plans may compete for the same room (a gang takes the node a
    4-GPU pod needed), so each of the `lookahead` smallest first plans is tried and the round that serves
    the most pods, then with the fewest moves, then with the least work lost, wins (ties: smallest first).
    Returns the sequence and the allowance it spent (its `skipped` says what the budgets refused)."""
    planned = smallest_first([(c, p) for c in candidates for p in [plan_for(state, c.key, policy, time_limit)]
                              if useful(p)])
    best: tuple[tuple, list, RoundAllowance] | None = None
    refused: list[str] = []
    for cand, plan in planned[:lookahead]:
        trial = dataclasses.replace(allowance, skipped=list(allowance.skipped))
        why = trial.admit(plan)
        if why is not None:
            refused.append(f"{cand.key}: {why}")
            continue
        seq = _greedy(state, (cand, plan), candidates, trial, policy, time_limit)
        score = (-len(seq), sum(len(p.moves) for _, p in seq), round(sum(p.total_cost_gpu_hours for _, p in seq), 4))
        if best is None or score < best[0]:
            best = (score, seq, trial)
    if best is None:
        allowance.skipped.extend(refused)
        for cand, plan in planned[lookahead:]:
            why = allowance.admit(plan)
            if why is None:  # only larger plans fit the budget: take them smallest first
                seq = _greedy(state, (cand, plan), candidates, allowance, policy, time_limit)
                return seq, allowance
            allowance.skipped.append(f"{cand.key}: {why}")
        return [], allowance
    seq, spent = best[1], best[2]
    served = {c.key for c, _ in seq}
    spent.skipped = [s for s in dict.fromkeys(refused + spent.skipped) if s.partition(": ")[0] not in served]
    return seq, spent


def stranded_plan(state: ClusterState, reading: StrandedReading, policy: EvictionPolicy, time_limit: float
                  ) -> Plan | None:
    plan = plan_defrag(state, Goal(kind="size", size=reading.size, count=1), policy=policy,
                       milp_time_limit=time_limit)
    return plan if useful(plan) else None


def with_beneficiaries(state: ClusterState, plan: Plan) -> ClusterState:
    """The after-state with the pods the plan makes room for bound where the plan expects them."""
    after = after_state(state, plan)
    lands = {t.pod: t.node for t in plan.targets if t.pod}
    if not lands:
        return after
    pods = [msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=lands[p.key]))
            if p.key in lands else p for p in after.pods]
    return after.with_pods(pods)


def entry_for(cand: Candidate | None, plan: Plan, reservations: list[Reservation], *, trigger: str,
              prices: ClusterPrices | None = None) -> PlanEntry:
    moves = [MoveOutcome(pod=m.pod, from_=m.from_, to=m.to, gpus=m.cost.gpus if m.cost else 0.0,
                         gpu_hours=m.cost.gpu_hours if m.cost else 0.0) for m in plan.moves]
    target = cand.key if cand is not None else f"size:{plan.goal.size}"
    return PlanEntry(target=target, trigger=trigger, status="planned",
                     pending_seconds=round(cand.pending_seconds, 1) if cand else None, moves=moves,
                     reservations=[r.to_builtins() for r in reservations],
                     gpu_hours_lost=plan.total_cost_gpu_hours,
                     lands_on=[f"{t.pod} -> {t.node}" for t in plan.targets if t.pod],
                     money=_money(plan, prices))


def _money(plan: Plan, prices: ClusterPrices | None) -> dict | None:
    value = plan_value(plan, prices) if prices is not None else None
    return msgspec.to_builtins(value) if value is not None else None


def stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")
