"""The one safety gate: every rule re-applied to the live pods right before a step is evicted.

The descheduler pattern: a plan is made from a picture of the cluster, but the eviction happens
later (after a confirmation prompt, a `--rate` pause, or on `--resume` of an old journal). So
right before each eviction the executor re-reads the step's namespaces and asks the same rules the planner
used (evictability.py, budget.py, units.py) about the pods as they are now:
  - the pod is still the planned one (same uid) on the planned node;
  - every static rule: a controller that recreates it, no safe-to-evict "false" or do-not-disrupt,
    no local storage (unless allowed), not system-critical, not matched by several PDBs;
  - priority not above the pod the plan makes room for (read live too);
  - a gang moves whole: every running member of the pod's move group is in this step;
  - the PDB budget allows evicting the step's pods now (else wait: the server would answer 429).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubegpu.defrag.budget import BudgetLedger
from kubegpu.defrag.evictability import EvictionPolicy, priority_reason, static_reasons
from kubegpu.defrag.plan import Move, Plan
from kubegpu.defrag.units import move_groups
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.sources.documents import Documents, load_cluster


@dataclass
class GateVerdict:
    """`refused`: pod -> reasons (the plan no longer holds); `wait`: a budget says not now."""

    refused: dict[str, list[str]] = field(default_factory=dict)
    wait: str | None = None
    pods: dict[str, Pod] = field(default_factory=dict)   # uid -> live pod, for the moves still to evict

    @property
    def ok(self) -> bool:
        return not self.refused and self.wait is None

    def describe(self) -> str:
        return "; ".join(f"{pod}: {', '.join(reasons)}" for pod, reasons in sorted(self.refused.items()))


def live_state(objects: Iterable[dict]) -> ClusterState:
    """Live v1 objects (a namespace's pods and PDBs, the PriorityClasses) as a ClusterState."""
    docs = Documents(source="live (safety gate)")
    for obj in objects:
        docs.add(obj, "live")
    return load_cluster(docs)


def check_step(state: ClusterState, step: list[Move], *, evicted: set[str], policy: EvictionPolicy,
               beneficiary_priority: int | None) -> GateVerdict:
    """The verdict on evicting the step's moves not yet in `evicted` (uids), on the live `state`."""
    verdict = GateVerdict()
    todo = [m for m in step if m.uid not in evicted]
    step_uids = {m.uid for m in step}
    groups = move_groups(state)
    for move in todo:
        ns, _, name = move.pod.partition("/")
        pod = state.pod(ns, name)
        if pod is None or pod.metadata.uid != move.uid:
            verdict.refused[move.pod] = [f"no longer there (uid {move.uid}): the cluster changed since the plan"]
            continue
        if pod.spec.node_name != move.from_:
            verdict.refused[move.pod] = [f"runs on {pod.spec.node_name or 'no node'}, not on {move.from_} as planned"]
            continue
        reasons = static_reasons(state, pod, policy)
        pr = priority_reason(state, pod, beneficiary_priority)
        if pr:
            reasons.append(pr)
        group = groups.get(pod.key)
        if group is not None and not evicted & step_uids:  # a step begun before a crash: finish it
            outside = sorted(p.key for p in state.pods if groups.get(p.key) == group and p.is_bound
                             and not p.is_terminal and p.metadata.deletion_timestamp is None
                             and p.metadata.uid not in step_uids)
            if outside:
                reasons.append(f"member of gang {group}: {', '.join(outside)} would stay behind (a gang moves whole)")
        if reasons:
            verdict.refused[move.pod] = reasons
        else:
            verdict.pods[move.uid] = pod
    if not verdict.refused and verdict.pods:
        verdict.wait = BudgetLedger(state).blocked(verdict.pods.values())
    return verdict


def beneficiaries(plan: Plan) -> list[str]:
    """The pending pods (ns/name) a pod goal makes room for: every target of the plan (a gang: each member)."""
    if plan.goal.kind != "pod":
        return []
    return sorted({t.pod for t in plan.targets if t.pod and "/" in t.pod})


def beneficiary_priority(state: ClusterState, pods: list[str]) -> int | None:
    """The live priority of the pods a plan makes room for (the highest; None when none is left)."""
    found = [state.pod(*key.split("/", 1)) for key in pods]
    alive = [p for p in found if p is not None]
    return max(state.priority_of(p) for p in alive) if alive else None
