"""The exact planner: a mixed-integer program over per-node free resources, solved by HiGHS.

Variables: v[u] (unit u moves), x[p, m] (pod p's replacement lands on node m), and per goal
z[t, n] (target t is hosted on node n), z[n] (k-GPU slots on node n) or e[n] (node n emptied).
For every node and every resource the plan touches, what is free after the plan stays >= 0:
  free[n] + sum(pods leaving n) - sum(pods arriving on n) - sum(targets hosted on n) >= 0
(for size goals also in entirely free devices). A unit moves whole: sum_m x[p, m] = v[u(p)].
Every PDB: the disruptions the plan's evictions use <= disruptionsAllowed. Objective: pods moved,
with GPU-hours lost as the tie-breaker (scaled so it never outweighs one move).
Moves are then ordered so that each one finds its room when it happens (a cycle of swaps has
no such order, and the solution is then refused).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kubegpu.defrag.workstate import TargetSpec, WorkState

VARIABLE_LIMIT = 60_000


@dataclass
class MilpResult:
    status: str                      # optimal | time-limit | infeasible | skipped: ...
    work: WorkState | None = None
    moves: int | None = None
    bound: float | None = None       # lower bound on moves
    seconds: float = 0.0


class _Model:
    """Sparse rows/columns collected, then handed to scipy.optimize.milp in one go."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.integer: list[int] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.rlo: list[float] = []
        self.rhi: list[float] = []

    def var(self, cost: float, lo: float = 0, hi: float = 1) -> int:
        self.cost.append(cost)
        self.lo.append(lo)
        self.hi.append(hi)
        self.integer.append(1)
        return len(self.cost) - 1

    def row(self, terms: dict[int, float], lo: float, hi: float) -> None:
        r = len(self.rlo)
        for c, v in terms.items():
            if v:
                self.rows.append(r)
                self.cols.append(c)
                self.vals.append(v)
        self.rlo.append(lo)
        self.rhi.append(hi)

    def solve(self, time_limit: float):
        # lazy: scipy costs start-up time; heuristic-only callers (why, doctor) should not pay its import
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix

        a = coo_matrix((self.vals, (self.rows, self.cols)), shape=(len(self.rlo), len(self.cost))).tocsr()
        cons = [LinearConstraint(a, self.rlo, self.rhi)] if self.rlo else []
        return milp(np.asarray(self.cost), constraints=cons, integrality=np.asarray(self.integer),
                    bounds=Bounds(self.lo, self.hi), options={"time_limit": time_limit, "disp": False})


def solve(work: WorkState, *, targets: list[TargetSpec] | None = None, size_k: int | None = None,
          size_goal: int | None = None, size_cpu: int = 0, empty_candidates: np.ndarray | None = None,
          empty_count: int = 0, max_moves: int | None = None, max_cost: float | None = None,
          time_limit: float = 20.0) -> MilpResult:
    """Solve one goal exactly from `work` (which has no moves yet); see the module docstring."""
    t0 = time.perf_counter()
    prob = work.problem
    n = prob.n
    cand = list(range(len(prob.pods)))
    if not cand and targets is None and size_k is None:
        return MilpResult("infeasible", seconds=time.perf_counter() - t0)
    n_vars = sum(1 for _ in cand) * n
    if n_vars > VARIABLE_LIMIT:
        return MilpResult(f"skipped: {n_vars} placement variables exceed {VARIABLE_LIMIT}",
                          seconds=time.perf_counter() - t0)
    masks = {p: prob.dest_mask(p) & np.ones(n, dtype=bool) for p in cand}
    mdl = _Model()
    total_cost = sum(u.cost for u in prob.units) + 1.0
    eps = 0.5 / total_cost
    v = {u: mdl.var(len(unit.members) + eps * unit.cost) for u, unit in enumerate(prob.units)}
    x: dict[tuple[int, int], int] = {}
    for p in cand:
        for m in np.flatnonzero(masks[p]).tolist():
            x[(p, m)] = mdl.var(0.0)
        mdl.row({**{x[(p, m)]: 1.0 for m in np.flatnonzero(masks[p]).tolist()}, v[int(prob.unit_of[p])]: -1.0}, 0, 0)
    cols = set(np.flatnonzero(prob.vec.any(axis=0)).tolist())
    z_t: dict[tuple[int, int], int] = {}
    z_n: dict[int, int] = {}
    e: dict[int, int] = {}
    if targets:
        for i, t in enumerate(targets):
            cols |= set(np.flatnonzero(t.vec).tolist())
            ok = np.flatnonzero(t.mask)
            for m in ok.tolist():
                z_t[(i, m)] = mdl.var(0.0)
            mdl.row({z_t[(i, m)]: 1.0 for m in ok.tolist()}, 1, 1)
    if size_k:
        cpu_col = prob.column("cpu")
        wf = work.whole_free()
        caps = wf + np.array([int(prob.whole_gpus[prob.home == m].sum()) for m in range(n)])
        for m in range(n):
            if prob.schedulable[m] and caps[m] >= size_k:
                z_n[m] = mdl.var(0.0, 0, int(caps[m] // size_k))
        mdl.row({c: 1.0 for c in z_n.values()}, size_goal or 0, np.inf)
        if size_cpu and cpu_col is not None:
            cols.add(cpu_col)
    if empty_candidates is not None:
        for m in np.flatnonzero(empty_candidates).tolist():
            e[m] = mdl.var(0.0)
        mdl.row({c: 1.0 for c in e.values()}, empty_count, np.inf)
    # capacity rows per node
    leaving: dict[int, list[int]] = {}
    for p in cand:
        leaving.setdefault(int(prob.home[p]), []).append(p)
    arriving: dict[int, list[int]] = {}
    for (p, m) in x:
        arriving.setdefault(m, []).append(p)
    for m in range(n):
        out_p, in_p = leaving.get(m, []), arriving.get(m, [])
        hosted = [(i, c) for (i, mm), c in z_t.items() if mm == m]
        if not in_p and not hosted and m not in z_n:
            continue
        for r in sorted(cols):
            terms: dict[int, float] = {}
            for p in out_p:
                terms[v[int(prob.unit_of[p])]] = terms.get(v[int(prob.unit_of[p])], 0) + float(prob.vec[p, r])
            for p in in_p:
                terms[x[(p, m)]] = -float(prob.vec[p, r])
            for i, c in hosted:
                terms[c] = -float(targets[i].vec[r])  # type: ignore[index]
            if m in z_n and r == prob.column("cpu") and size_cpu:
                terms[z_n[m]] = -float(size_cpu)
            if any(terms.values()):
                mdl.row(terms, -float(work.free[m, r]), np.inf)
        slots: dict[int, float] = {}
        for p in out_p:
            slots[v[int(prob.unit_of[p])]] = slots.get(v[int(prob.unit_of[p])], 0) + 1.0
        for p in in_p:
            slots[x[(p, m)]] = -1.0
        for i, c in hosted:
            if targets[i].needs_slot:  # type: ignore[index]
                slots[c] = -1.0
        mdl.row(slots, -float(work.pods_free[m]), np.inf)
        if m in z_n:
            dev: dict[int, float] = {}
            for p in out_p:
                key = v[int(prob.unit_of[p])]
                dev[key] = dev.get(key, 0) + float(prob.whole_gpus[p])
            for p in in_p:
                dev[x[(p, m)]] = -float(prob.whole_gpus[p])
            dev[z_n[m]] = -float(size_k)
            mdl.row(dev, -float(work.whole_free()[m]), np.inf)
        if m in e:
            mdl.row({**{x[(p, m)]: 1.0 for p in in_p}, e[m]: float(len(cand) + 1)}, -np.inf, float(len(cand) + 1))
            for u in {int(prob.unit_of[p]) for p in out_p}:
                mdl.row({v[u]: 1.0, e[m]: -1.0}, 0, np.inf)
    _budget_rows(mdl, work, v)
    if max_moves is not None:
        mdl.row({v[u]: float(len(unit.members)) for u, unit in enumerate(prob.units)}, -np.inf, max_moves)
    if max_cost is not None:
        mdl.row({v[u]: unit.cost for u, unit in enumerate(prob.units)}, -np.inf, max_cost)
    if not mdl.cost:  # nothing to decide (no nodes, no movable pods): HiGHS refuses an empty model
        return MilpResult("infeasible", seconds=time.perf_counter() - t0)
    res = mdl.solve(max(time_limit - (time.perf_counter() - t0), 1.0))
    seconds = time.perf_counter() - t0
    if res.x is None:
        status = "infeasible" if res.status == 2 else "time-limit"
        return MilpResult(status, seconds=seconds)
    sol = np.round(res.x).astype(np.int64)
    moved_units = [u for u, c in v.items() if sol[c]]
    dest = {p: m for (p, m), c in x.items() if sol[c]}
    moves = sum(len(prob.units[u].members) for u in moved_units)
    bound = getattr(res, "mip_dual_bound", None)
    lower = float(np.floor(bound + 1e-6)) if bound is not None and np.isfinite(bound) else None
    status = "optimal" if res.status == 0 else "time-limit"
    replay = _replay(work, moved_units, dest)
    if replay is None:
        return MilpResult("unorderable", moves=moves, bound=lower, seconds=seconds)
    for (i, m), c in z_t.items():
        if sol[c]:
            replay.host(targets[i], m)  # type: ignore[index]
    return MilpResult(status, work=replay, moves=moves, bound=lower if lower is not None else float(moves),
                      seconds=seconds)


def _budget_rows(mdl: _Model, work: WorkState, v: dict[int, int]) -> None:
    prob = work.problem
    ledger = work.ledger
    use: dict[tuple[str, str], dict[int, float]] = {}
    for p, pod in enumerate(prob.pods):
        b = ledger.budget_of(pod)
        if b is None:
            continue
        need = ledger.needs(pod, b)
        if need:
            terms = use.setdefault((b.namespace, b.name), {})
            c = v[int(prob.unit_of[p])]
            terms[c] = terms.get(c, 0) + need
    for key, terms in use.items():
        mdl.row(terms, -np.inf, float(ledger.budgets[key].allowed))


def _replay(work: WorkState, units: list[int], dest: dict[int, int]) -> WorkState | None:
    """Order the chosen units so each finds its room when it moves; None for a cycle."""
    prob = work.problem
    state = work.copy()
    pending = sorted(units, key=lambda u: prob.units[u].cost)
    while pending:
        for u in pending:
            members = prob.units[u].members
            trial = state.copy()
            for p in members:
                trial.evict_member(p)
            ok = True
            for p in members:
                m = dest[p]
                if not trial.room_at(p, m):
                    ok = False
                    break
                trial.place_member(p, m)
            if ok:
                trial.ledger.take([prob.pods[p] for p in members])
                trial.order.append(u)
                state = trial
                pending.remove(u)
                break
        else:
            return None
    return state
