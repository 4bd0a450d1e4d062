"""The defrag plan: ordered moves, the state before and after, and why pods stay.

This is the JSON contract of `kubegpu defrag` (DESIGN section 4): `moves` are ordered
`{"pod", "from", "to"}` (plus step, gang and cost), `before`/`after` are `kubegpu frag` reports,
`pods` says for every bound pod on a GPU node whether it was movable and why not. A step is one
pod, or a whole gang evicted together; the executor runs steps in order.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Goal(msgspec.Struct, frozen=True, kw_only=True):
    """What the plan makes room for."""

    kind: str                       # "pod" | "size" | "empty-nodes"
    pod: str | None = None          # kind pod: the pending pod (ns/name); a gang plans for all its members
    gang: str | None = None
    size: int | None = None         # kind size: GPUs per pod
    count: int = 1                  # kind size: how many more such pods; empty-nodes: how many nodes
    max_moves: int | None = None
    max_cost_gpu_hours: float | None = None

    def describe(self) -> str:
        if self.kind == "pod":
            return f"make {self.gang or self.pod} schedulable" + (f" (gang {self.gang})" if self.gang and
                                                                   self.pod and self.pod != self.gang else "")
        if self.kind == "size":
            return f"room for {self.count} more {self.size}-GPU pod(s)"
        return f"empty {self.count} GPU node(s)"


class MoveCostInfo(msgspec.Struct, frozen=True, kw_only=True):
    gpus: float
    lost_seconds: float
    restart_seconds: float
    gpu_hours: float
    basis: str


class Move(msgspec.Struct, frozen=True, kw_only=True):
    """One pod leaving one node for another (the executor evicts; the scheduler re-places)."""

    step: int
    pod: str
    from_: str = msgspec.field(name="from")
    to: str
    uid: str = ""
    gang: str | None = None
    cost: MoveCostInfo | None = None


class PodStanding(msgspec.Struct, frozen=True, kw_only=True):
    """A bound pod on a GPU node: could a plan move it, and why not."""

    pod: str
    node: str
    gpus: float
    movable: bool
    moved: bool = False
    reasons: list[str] = []


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """Where the plan expects the beneficiary to land (pod goals), or which node it empties."""

    pod: str | None = None
    node: str
    gpus: int = 0


class SolverInfo(msgspec.Struct, kw_only=True):
    """How the plan was found, and how good it is known to be."""

    method: str                      # "milp" | "heuristic"
    heuristic_moves: int | None = None
    heuristic_seconds: float | None = None
    milp_status: str | None = None   # "optimal" | "time-limit" | "infeasible" | "skipped: ..." | None
    milp_moves: int | None = None
    milp_seconds: float | None = None
    lower_bound: float | None = None
    optimality_gap: float | None = None   # (heuristic - best known bound) / bound, in moves


class Plan(msgspec.Struct, kw_only=True):
    """A complete, checked defrag plan."""

    goal: Goal
    feasible: bool
    applied: bool = False
    message: str
    moves: list[Move] = []
    targets: list[Target] = []
    cordon: list[str] = []           # nodes the executor cordons while it runs (sources of moves)
    total_cost_gpu_hours: float = 0.0
    before: Any = None               # kubegpu frag JSON
    after: Any = None
    pods: list[PodStanding] = []
    pdb_remaining: dict[str, int] = {}
    solver: SolverInfo | None = None
    verified: bool = False           # every move re-checked with the scheduling core, in order
    crosses_pools: bool = False      # some pod lands in another node pool (no plan inside the pools existed)

    @property
    def steps(self) -> list[list[Move]]:
        """Moves grouped by step (a gang's members share one step), in order."""
        out: dict[int, list[Move]] = {}
        for m in self.moves:
            out.setdefault(m.step, []).append(m)
        return [out[k] for k in sorted(out)]


def plan_to_builtins(plan: Plan) -> dict:
    return msgspec.to_builtins(plan)


def plan_from_builtins(data: dict) -> Plan:
    """Read a plan back (journals keep the plan they execute)."""
    return msgspec.convert(data, type=Plan)
