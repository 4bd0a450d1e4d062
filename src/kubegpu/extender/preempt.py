"""POST /preempt: keep only the preemption candidates that do not break running work.

kube-scheduler's DefaultPreemption proposes, per node, the victims that would make room
(NodeNameToMetaVictims when nodeCacheCapable, NodeNameToVictims otherwise); the extender answers
with the candidates it accepts (always as NodeNameToMetaVictims, as upstream reads it). A node is
dropped, never trimmed (fewer victims might not make room), when its victims would

* split a running gang: a victim belongs to a gang with bound members that are not victims on
  the same node (a gang moves whole or not at all, as `defrag` rules);
* throw away more than `max_work_lost` GPU-hours of work since the victims' last checkpoints
  (the defrag cost rule `defrag.cost.move_cost`: checkpoint annotations, else the run time).

Victims the extender does not know (a stale cache) are passed through unjudged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubegpu.defrag.cost import move_cost, state_now
from kubegpu.extender.gpu_rules import PREFIX
from kubegpu.extender.state import ExtenderModel
from kubegpu.extender.wire import ExtenderPreemptionArgs, MetaPod, MetaVictims

DEFAULT_MAX_WORK_LOST = 8.0   # GPU-hours a preemption may throw away on one node


@dataclass
class PreemptAnswer:
    kept: dict[str, MetaVictims]
    dropped: dict[str, str] = field(default_factory=dict)


def candidate_victims(args: ExtenderPreemptionArgs) -> dict[str, tuple[list[str], int]]:
    """node -> (victim UIDs, PDB violations), from whichever form the request used."""
    out: dict[str, tuple[list[str], int]] = {}
    if args.NodeNameToMetaVictims is not None:
        for node, v in args.NodeNameToMetaVictims.items():
            out[node] = ([p.UID for p in v.Pods or []], v.NumPDBViolations)
    elif args.NodeNameToVictims is not None:
        for node, v in args.NodeNameToVictims.items():
            out[node] = ([p.metadata.uid for p in v.Pods or []], v.NumPDBViolations)
    return out


def decide_preempt(model: ExtenderModel, args: ExtenderPreemptionArgs, *, max_work_lost: float) -> PreemptAnswer:
    """The candidates kept (victims unchanged) and, for the dropped ones, why."""
    by_uid = model.pods_by_uid
    now = state_now(model.cluster)
    answer = PreemptAnswer(kept={})
    for node, (uids, pdb) in candidate_victims(args).items():
        victims = [by_uid[u] for u in uids if u in by_uid]
        reason = _split_gang(model, victims) or _work_lost(model, victims, now, max_work_lost)
        if reason:
            answer.dropped[node] = reason
        else:
            answer.kept[node] = MetaVictims(Pods=[MetaPod(UID=u) for u in uids], NumPDBViolations=pdb)
    return answer


def _split_gang(model: ExtenderModel, victims: list) -> str | None:
    keys = {p.key for p in victims}
    for pod in victims:
        gang = model.gang_of(pod)
        if gang is None:
            continue
        others = [m for m in gang.bound if m.key not in keys]
        if others:
            return (f"{PREFIX}victim {pod.key} is a member of running gang {gang.key}; "
                    f"{len(others)} other member(s) would be left running without it")
    return None


def _work_lost(model: ExtenderModel, victims: list, now, limit: float) -> str | None:
    lost = 0.0
    for pod in victims:
        cost = move_cost(model.cluster, pod, now)
        lost += cost.gpus * cost.lost_seconds / 3600.0
    if lost > limit:
        return (f"{PREFIX}victims would lose {lost:.2f} GPU-hours of work since their last checkpoint "
                f"(limit {limit:g})")
    return None
