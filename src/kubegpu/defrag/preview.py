"""The defrag preview `kubegpu doctor` shows: the fewest moves that make room for the largest pending GPU pod.

Always a plan, never an action: `applied` is False, and `command` is what an operator would run
to look at the full plan (and, with --apply, carry it out).
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from kubegpu.defrag.plan import Goal
from kubegpu.defrag.planner import plan_defrag
from kubegpu.errors import KubegpuError
from kubegpu.fragmentation.report import stranded_of
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.nodetable import NodeTable


class PreviewMove(msgspec.Struct, frozen=True, kw_only=True):
    pod: str
    from_: str = msgspec.field(name="from")
    to: str
    gpu_hours: float


class DefragPreview(msgspec.Struct, frozen=True, kw_only=True):
    applied: bool = False
    target: str | None = None          # the pending pod (or its gang) the preview makes room for
    gpus: int = 0
    feasible: bool = False
    moves: list[PreviewMove] = []
    cost_gpu_hours: float = 0.0
    fits_by_size_before: dict[str, int] = {}
    fits_by_size_after: dict[str, int] = {}
    stranded_before: float | None = None   # stranded_for_demand GPUs before / after the plan (frag's headline)
    stranded_after: float | None = None
    message: str = ""
    command: str | None = None


def largest_pending(state: ClusterState, among: Collection[str] | None = None) -> tuple[Pod | None, int]:
    """(pod, GPU devices) of the pending GPU pod a preview makes room for, or (None, 0).

    The one rule for the doctor's preview and the dashboard's default /defrag: most milli-GPU,
    then highest priority, then pod key; among the pod keys `among` (a caller's blocked pods),
    else among every unscheduled GPU pod.
    """
    pods = state.unscheduled_pods if among is None else [p for p in state.unscheduled_pods if p.key in among]
    pending = [(d, p) for p in pods if (d := state.gpu_demand(p)).num_gpu > 0]
    if not pending:
        return None, 0
    demand, pod = min(pending, key=lambda dp: (-dp[0].total_milli, -state.priority_of(dp[1]), dp[1].key))
    return pod, demand.num_gpu


def defrag_preview(state: ClusterState, *, time_limit: float = 5.0, among: Collection[str] | None = None,
                   table: NodeTable | None = None) -> DefragPreview:
    """Plan (not apply) room for the largest pending GPU pod (`largest_pending`), with what it costs
    (`table`: the caller's NodeTable of `state`)."""
    pod, gpus = largest_pending(state, among)
    if pod is None:
        return DefragPreview(message="no pending GPU pod: nothing to make room for")
    try:
        plan = plan_defrag(state, Goal(kind="pod", pod=pod.key), milp_time_limit=time_limit, pod=pod,
                           table=table, standings=False)  # the preview shows moves, not every pod's standing
    except KubegpuError as err:
        return DefragPreview(target=pod.key, gpus=gpus, message=f"not planned: {err}")
    target = plan.goal.gang or pod.key
    moves = [PreviewMove(pod=m.pod, from_=m.from_, to=m.to, gpu_hours=m.cost.gpu_hours if m.cost else 0.0)
             for m in plan.moves]
    return DefragPreview(target=target, gpus=gpus, feasible=plan.feasible, moves=moves,
                         cost_gpu_hours=plan.total_cost_gpu_hours,
                         fits_by_size_before=dict(plan.before.get("fits_by_size", {})) if plan.before else {},
                         fits_by_size_after=dict(plan.after.get("fits_by_size", {})) if plan.after else {},
                         stranded_before=stranded_of(plan.before), stranded_after=stranded_of(plan.after),
                         message=f"not applied: {plan.message}",
                         command=f"kubegpu defrag --for {target}" if plan.feasible else None)
