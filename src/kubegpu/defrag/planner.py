"""`kubegpu.defrag`: plan the fewest safe moves that make room, and prove the plan with the scheduling core.

    plan = plan_defrag(state, Goal(kind="pod", pod="ml-training/ppo-actor-0"))
    plan = plan_defrag(state, Goal(kind="size", size=4))
    plan = plan_defrag(state, Goal(kind="empty-nodes", count=2))

The heuristic always runs; the MILP runs too when the instance is small enough, and the better
plan wins (the optimality gap of the heuristic is reported). The chosen plan is then replayed
move by move through the scheduling core's filters (every filter, not just room), and the
beneficiary is checked on the final state; a move the core refuses is banned and the plan redone.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime

import msgspec
import numpy as np

from kubegpu.defrag import milp
from kubegpu.defrag.evictability import DAEMONSET, MIRROR_ANNOTATION, EvictionPolicy
from kubegpu.defrag.heuristic import MAX_HOSTS_TRIED, Budget, empty_nodes, plan_targets
from kubegpu.defrag.plan import Goal, Move, MoveCostInfo, Plan, PodStanding, SolverInfo, Target
from kubegpu.defrag.problem import DefragProblem, build_problem, replacement_of
from kubegpu.defrag.workstate import DestScore, TargetSpec, WorkState
from kubegpu.errors import InputError, UsageError
from kubegpu.fragmentation.capacity import cpu_by_size, pods_that_fit
from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_mix, cluster_placement
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.nodetable import NodeTable
from kubegpu.scheduling.gang import find_gangs
from kubegpu.scheduling.cycle import filter_pod

VERIFY_ROUNDS = 4


def _find_beneficiaries(state: ClusterState, name: str, gangs=None, pod: Pod | None = None
                        ) -> tuple[list[Pod], str | None]:
    """The pending pod(s) a pod goal is for: one pod, or every pending member of its gang.

    `pod`: the pod itself when the caller holds it (why --all), so it is never looked up again by
    a name that only its printed key carries (a dump may hold names with '/')."""
    ns, _, short = name.rpartition("/")
    gangs = find_gangs(state) if gangs is None else gangs
    if pod is None:
        pod = state.pod(ns or "default", short)
    if pod is None and "/" in ns:  # a name with '/' in it, as `why` prints it: ns/na/me
        pod = state.pod(*name.split("/", 1))
    if pod is None and not ns:
        matches = [p for p in state.pods if p.name == short]
        pod = matches[0] if len(matches) == 1 else None
    if pod is None:
        gang = gangs.get(name) or next((g for g in gangs.values() if g.name == short and (not ns or g.namespace == ns)),
                                       None)
        if gang is None:
            raise InputError(f"no pod or gang named {name!r} in this cluster")
        if not gang.pending:
            raise UsageError(f"gang {gang.key} has no pending pod: nothing to make room for")
        return sorted(gang.pending, key=lambda p: p.name), gang.key
    if not pod.is_unscheduled:
        raise UsageError(f"pod {pod.key} is not pending (it runs on {pod.spec.node_name or 'no node'})")
    for gang in gangs.values():
        if any(m.key == pod.key for m in gang.members):
            return sorted(gang.pending, key=lambda p: p.name), gang.key
    return [pod], None


def pod_targets(problem: DefragProblem, pods: list[Pod]) -> list[TargetSpec]:
    snap = problem.snapshot
    return [TargetSpec(label=p.key, vec=snap.pod_info(p).vector.copy(), mask=problem.static_mask(p))
            for p in pods]


def probe_target(problem: DefragProblem, k: int, cpu: int, label: str) -> TargetSpec:
    vec = np.zeros(problem.free.shape[1], dtype=np.int64)
    col = problem.column("cpu")
    if col is not None:
        vec[col] = cpu
    mask = problem.schedulable & (problem.dev_total > 0).any(axis=1)
    return TargetSpec(label=label, vec=vec, mask=mask, whole=k, needs_slot=False)


def _reserve_existing(work: WorkState, probe: TargetSpec) -> int:
    """Host every k-GPU slot that exists already, so moves do not eat into them; returns how many."""
    count = 0
    while True:
        fits = np.flatnonzero(work.target_fits(probe))
        if not len(fits):
            return count
        work.host(probe, int(fits[0]))
        count += 1


def _empty_candidates(problem: DefragProblem) -> np.ndarray:
    """GPU nodes whose every pod (DaemonSet and mirror pods aside) is movable, and that hold any."""
    state = problem.state
    out = np.zeros(problem.n, dtype=bool)
    for i, name in enumerate(problem.names):
        if not problem.schedulable[i] or not (problem.dev_total[i] > 0).any():
            continue
        pods = [p for p in state.pods_by_node.get(name, [])
                if not (p.controller and p.controller.kind == DAEMONSET) and MIRROR_ANNOTATION not in p.annotations]
        if pods and all(problem.standing[p.key].movable for p in pods):
            out[i] = True
    return out


def _verify(problem: DefragProblem, work: WorkState, beneficiaries: dict[str, Pod]) -> tuple[int, int] | str | None:
    """Replay the moves through every filter of the scheduling core; None when all pass.

    Returns (candidate, node) for a move the core refuses, or a message when the beneficiary
    does not fit where the plan expects it.
    """
    snap = problem.snapshot.copy()
    for u in work.order:
        members = problem.units[u].members
        for p in members:
            snap.remove(problem.pods[p].key)
        for p in members:
            m = work.moved[p]
            rep = replacement_of(problem.pods[p])
            outcome = filter_pod(snap, rep)
            if not outcome.fits[m]:
                return p, m
            snap.assume(rep, m)
    for label, n in work.hosted:
        pod = beneficiaries.get(label)
        if pod is None:
            continue
        outcome = filter_pod(snap, pod)
        if not outcome.fits[n]:
            status = outcome.first_status(n)
            return f"{pod.key} would still not fit on {problem.names[n]}: {status.message or status.plugin}"
        snap.assume(pod, n)
    return None


def _better(a: WorkState | None, b: WorkState | None) -> WorkState | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if (a.moves(), a.cost()) <= (b.moves(), b.cost()) else b


def after_state(state: ClusterState, plan: Plan) -> ClusterState:
    """The cluster once the plan has run: moved pods bound to their destinations (what `why` reads)."""
    dest = {m.pod: m.to for m in plan.moves}
    pods = []
    for p in state.pods:
        if p.key in dest:
            p = msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=dest[p.key]))
        pods.append(p)
    return state.with_pods(pods)


def plan_defrag(state: ClusterState, goal: Goal, *, policy: EvictionPolicy = EvictionPolicy(),
                now: datetime | None = None, exact: str = "auto", milp_time_limit: float = 20.0,
                problem: DefragProblem | None = None, max_hosts: int = MAX_HOSTS_TRIED,
                with_frag: bool = True, gangs=None, pod: Pod | None = None, table: NodeTable | None = None,
                standings: bool = True) -> Plan:
    """Plan the fewest safe moves that reach `goal` (see the module docstring).

    `problem` lets a caller that plans for many pods of one priority (why --all) build it once
    (see `problem_for`); `max_hosts` bounds the hosts tried per target; `with_frag=False`
    gives the moves only (no before/after fragmentation reports, no per-pod standings); `pod` is
    the goal's pending pod when the caller holds it (no lookup by name); `table`, the caller's
    NodeTable of `state`; `standings=False`: no per-pod standings (`plan.pods` empty) for a caller
    that shows the moves and reports only (doctor's preview: a standing per bound pod is 1.4 s at 20k nodes).
    """
    beneficiaries: list[Pod] = []
    gang = None
    priority = None
    if goal.kind == "pod":
        if not goal.pod:
            raise UsageError("a pod goal needs the pending pod (--for POD)")
        beneficiaries, gang = _find_beneficiaries(state, goal.pod, gangs, pod)
        priority = max(state.priority_of(p) for p in beneficiaries)
        goal = msgspec.structs.replace(goal, gang=gang)
    elif goal.kind == "size":
        if not goal.size or goal.size < 1:
            raise UsageError("--size must be a positive number of GPUs")
    elif goal.kind != "empty-nodes":
        raise UsageError(f"unknown defrag goal {goal.kind!r}")
    if goal.count < 1:
        raise UsageError("--count must be at least 1")
    if problem is None:
        problem = build_problem(state, policy=policy, beneficiary_priority=priority, now=now)
    # pool separation first: pods move inside their own pool; only when no such plan exists
    # may they cross pools, and the plan says so
    # the cluster's mix and its frag report as it stands are the same for both runs: made once
    mix = cluster_mix(state) if with_frag or goal.kind == "size" else None
    before = FragBefore(state, mix, table) if with_frag else None
    inside = _solve(state, goal, dataclasses.replace(problem, _dest={}, same_pool=True), beneficiaries,
                    exact=exact, milp_time_limit=milp_time_limit, max_hosts=max_hosts, mix=mix, before=before)
    if inside.feasible:
        return _with_standings(inside, problem, with_frag and standings)
    across = _solve(state, goal, dataclasses.replace(problem, _dest={}, same_pool=False), beneficiaries,
                    exact=exact, milp_time_limit=milp_time_limit, max_hosts=max_hosts, mix=mix, before=before)
    if not across.feasible:
        return _with_standings(inside, problem, with_frag and standings)
    pools = problem.snapshot.pools
    index = problem.snapshot.index
    across.crosses_pools = any(pools[index[m.from_]] != pools[index[m.to]] for m in across.moves)
    if across.crosses_pools:
        across.message += "; some moves cross node pools (no plan inside the pools exists)"
    return _with_standings(across, problem, with_frag and standings)


def _with_standings(plan: Plan, problem: DefragProblem, with_frag: bool) -> Plan:
    """Why each pod is or is not movable, for the plan returned (not for a run that was dropped)."""
    plan.pods = _standings(problem, {m.pod for m in plan.moves}) if with_frag else []
    return plan


class FragBefore:
    """The frag report of the cluster as it stands, made on first use and shared by the plan's runs."""

    def __init__(self, state: ClusterState, mix, table: NodeTable | None = None) -> None:
        self.state, self.mix, self.table = state, mix, table
        self._report: dict | None = None

    @property
    def report(self) -> dict:
        if self._report is None:
            self._report = msgspec.to_builtins(cluster_frag_report(self.state, self.mix, table=self.table))
        return self._report


def _solve(state: ClusterState, goal: Goal, problem: DefragProblem, beneficiaries: list[Pod], *, exact: str,
           milp_time_limit: float, max_hosts: int, mix, before: FragBefore | None) -> Plan:
    """One planning run on `problem` (its destination masks decide where pods may go); `before`
    (None: no fragmentation reports) is the frag report of the cluster as it stands."""
    budget = Budget(goal.max_moves, goal.max_cost_gpu_hours)
    start = WorkState.start(problem)
    unmet: list[str] = []
    milp_kwargs: dict = {}
    targets: list[TargetSpec] = []
    drained: list[int] = []

    def heuristic(work: WorkState) -> WorkState:
        nonlocal unmet, drained
        if goal.kind == "pod":
            out, unmet = plan_targets(work, targets, DestScore(), budget, max_hosts=max_hosts)
            return out
        if goal.kind == "size":
            out, unmet = plan_targets(work, targets, DestScore(protect_k=goal.size), budget, max_hosts=max_hosts)
            return out
        out, drained = empty_nodes(work, goal.count, milp_kwargs["empty_candidates"], budget)
        unmet = [] if len(drained) >= goal.count else [f"{goal.count - len(drained)} node(s)"]
        return out

    if goal.kind == "pod":
        targets = pod_targets(problem, beneficiaries)
        milp_kwargs = {"targets": targets}
    elif goal.kind == "size":
        cpu = cpu_by_size(mix, (goal.size,)).get(goal.size, 0)  # the same CPU cap `frag` applies
        probe = probe_target(problem, goal.size, cpu, f"{goal.size}-GPU pod")
        existing = _reserve_existing(start, probe)
        # bounded by the cluster, not by --count: more than every GPU device holds is unmet anyway
        room = int((problem.dev_total[problem.schedulable] >= 1000).sum()) // goal.size
        targets = [probe_target(problem, goal.size, cpu, f"{goal.size}-GPU pod #{existing + i + 1}")
                   for i in range(min(goal.count, max(room - existing, 0) + 1))]
        base = WorkState.start(problem)
        milp_kwargs = {"size_k": goal.size, "size_goal": existing + goal.count, "size_cpu": cpu}
        milp_start = base
    else:
        milp_kwargs = {"empty_candidates": _empty_candidates(problem), "empty_count": goal.count}
    milp_start = WorkState.start(problem) if goal.kind != "size" else milp_start

    solver = SolverInfo(method="heuristic")
    chosen: WorkState | None = None
    failure = ""
    for _ in range(VERIFY_ROUNDS):
        t0 = time.perf_counter()
        heur = heuristic(start.copy())
        solver.heuristic_seconds = round(time.perf_counter() - t0, 3)
        heur_ok = not unmet and budget.allows(heur)
        solver.heuristic_moves = heur.moves() if heur_ok else None
        exact_result = None
        if exact == "always" or (exact == "auto" and len(problem.pods) * problem.n <= milp.VARIABLE_LIMIT):
            exact_result = milp.solve(milp_start.copy(), max_moves=goal.max_moves, max_cost=goal.max_cost_gpu_hours,
                                      time_limit=milp_time_limit, **milp_kwargs)
            solver.milp_status, solver.milp_seconds = exact_result.status, round(exact_result.seconds, 3)
            solver.milp_moves, solver.lower_bound = exact_result.moves, exact_result.bound
        else:
            solver.milp_status = "skipped: instance too large for the exact solver"
        candidates = [heur if heur_ok else None, exact_result.work if exact_result else None]
        chosen = _better(*candidates)
        if chosen is None:
            failure = "no plan reaches the goal" + (f" (unmet: {', '.join(unmet)})" if unmet else "")
            break
        solver.method = "milp" if chosen is candidates[1] else "heuristic"
        verdict = _verify(problem, chosen, {p.key: p for p in beneficiaries})
        if verdict is None:
            break
        if isinstance(verdict, tuple):
            start.banned.add(verdict)  # the core refuses this destination: plan again without it
            milp_start.banned.add(verdict)
            problem.ban(*verdict)
            chosen = None
            failure = "the scheduling core refused every plan found"
            continue
        failure = verdict
        chosen = None
        break
    if solver.heuristic_moves is not None and solver.lower_bound is not None:
        lb = max(solver.lower_bound, 0.0)
        solver.optimality_gap = round((solver.heuristic_moves - lb) / lb, 4) if lb > 0 else (
            0.0 if solver.heuristic_moves == 0 else None)
    return _assemble(state, problem, goal, chosen, failure, solver, mix, drained, before=before)


def problem_for(state: ClusterState, pod: Pod, *, policy: EvictionPolicy = EvictionPolicy(),
                now: datetime | None = None, snapshot=None, gangs=None) -> tuple[int, DefragProblem]:
    """(beneficiary priority, problem) for a pod goal: reusable for every pod of that priority.

    `snapshot` (a SchedulingSnapshot of `state` the caller owns) saves rebuilding one."""
    beneficiaries, _ = _find_beneficiaries(state, pod.key, gangs, pod)
    priority = max(state.priority_of(p) for p in beneficiaries)
    return priority, build_problem(state, policy=policy, beneficiary_priority=priority, now=now,
                                   snapshot=snapshot, gangs=gangs)


def _assemble(state: ClusterState, problem: DefragProblem, goal: Goal, work: WorkState | None, failure: str,
              solver: SolverInfo, mix, drained: list[int], *, before: FragBefore | None) -> Plan:
    with_frag = before is not None
    moves: list[Move] = []
    targets: list[Target] = []
    if work is not None:
        for step, u in enumerate(work.order, start=1):
            unit = problem.units[u]
            for p in unit.members:
                pod, c = problem.pods[p], problem.costs[p]
                moves.append(Move(step=step, pod=pod.key, from_=problem.names[int(problem.home[p])],
                                  to=problem.names[work.moved[p]], uid=pod.metadata.uid, gang=unit.gang,
                                  cost=MoveCostInfo(gpus=c.gpus, lost_seconds=c.lost_seconds,
                                                    restart_seconds=c.restart_seconds, gpu_hours=c.gpu_hours,
                                                    basis=c.basis)))
        if goal.kind == "empty-nodes":
            targets = [Target(node=name) for name in _emptied(problem, work)]
        elif goal.kind == "pod":
            targets = [Target(pod=label, node=problem.names[n], gpus=_target_gpus(state, label, problem.names[n]))
                       for label, n in work.hosted]
    plan = Plan(goal=goal, feasible=work is not None, message="", moves=moves, targets=targets,
                cordon=sorted({m.from_ for m in moves}), before=before.report if before else None, solver=solver,
                total_cost_gpu_hours=round(sum(m.cost.gpu_hours for m in moves if m.cost), 4),
                verified=work is not None)
    after = after_state(state, plan) if moves and (with_frag or goal.kind == "size") else state
    if before is not None:  # nothing moved: the cluster after is the one before
        plan.after = before.report if after is state else msgspec.to_builtins(cluster_frag_report(after, mix))
    if goal.kind == "size" and work is not None:
        plan.targets = _new_slots(state, after, goal.size or 1, mix)
    ledger = work.ledger if work is not None else problem.ledger
    plan.pdb_remaining = ledger.remaining()
    if work is None:
        plan.message = f"{goal.describe()}: no safe plan. {failure}".strip()
    elif not moves:
        plan.message = f"{goal.describe()}: already possible, no move needed"
    else:
        plan.message = (f"{goal.describe()}: {len(moves)} move(s) in {len(work.order)} step(s), "
                        f"{plan.total_cost_gpu_hours:g} GPU-hours of work lost")
    return plan


def _target_gpus(state: ClusterState, key: str, node: str) -> int:
    """GPU devices the pod takes on `node` (its GpuDemand read there: whole, shared, MIG alike)."""
    pod = state.pod(*key.split("/", 1))
    return state.gpu_demand(pod, node).num_gpu if pod is not None else 0


def _emptied(problem: DefragProblem, work: WorkState) -> list[str]:
    """GPU nodes the plan empties: every pod that held them (DaemonSet and mirror pods aside) moved."""
    cands = _empty_candidates(problem)
    left = np.zeros(problem.n, dtype=np.int64)
    for i, name in enumerate(problem.names):
        if cands[i]:
            left[i] = sum(1 for p in problem.state.pods_by_node.get(name, []) if problem.standing[p.key].movable)
    for p in work.moved:
        left[int(problem.home[p])] -= 1
    for m in work.moved.values():
        left[m] += 1
    return [problem.names[i] for i in np.flatnonzero(cands & (left == 0)).tolist()]


def _new_slots(before: ClusterState, after: ClusterState, k: int, mix) -> list[Target]:
    """Nodes that can take more k-GPU pods after the plan than before (the room the plan made)."""
    cpu = cpu_by_size(mix, (k,)).get(k)
    placed = cluster_placement(after)
    was = pods_that_fit(cluster_placement(before), k, cpu)
    now = pods_that_fit(placed, k, cpu)
    names = placed.names
    return [Target(node=names[i], gpus=k) for i in np.flatnonzero(now > was).tolist()
            for _ in range(int(now[i] - was[i]))]


def _standings(problem: DefragProblem, moved: set[str]) -> list[PodStanding]:
    """Every bound pod on a GPU node (and every moved pod): movable or not, and why."""
    state = problem.state
    out = []
    gpu_nodes = {name for i, name in enumerate(problem.names) if (problem.dev_total[i] > 0).any()}
    by_key = {p.key: p for p in state.pods}  # the pods themselves: a key is not re-parsed into a name
    for key, ev in sorted(problem.standing.items()):
        if ev.node not in gpu_nodes and key not in moved:
            continue
        pod = by_key.get(key)
        demand = state.gpu_demand(pod) if pod is not None else None
        gpus = demand.num_gpu * demand.gpu_milli / 1000 if demand else 0.0
        out.append(PodStanding(pod=key, node=ev.node, gpus=gpus, movable=ev.movable, moved=key in moved,
                               reasons=list(ev.reasons)))
    return out
