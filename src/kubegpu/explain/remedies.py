"""Remedies for a Pending pod, ranked by how small a change they ask for.

cost 0  preempt      kube-scheduler itself can make room (lower-priority victims named)
cost 1  toleration   add a toleration (the taint is the only blocker on some nodes)
cost 2  selector     relax a nodeSelector key / required node-affinity term
cost 3  move-pods    move a few pods to make room (the defrag planner's fewest safe moves)
cost 4  smaller      ask for k GPUs instead
cost 5  scale        add a node from a node group the cluster already has
cost 9  never        no node shape in this cluster can ever hold the pod, and why
When the pod can never fit on the nodes that exist as written, that verdict leads.
"""

from __future__ import annotations


import msgspec
import numpy as np

from kubegpu.model.text import counted
from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import GPU, LABEL_PRODUCT
from kubegpu.model.kinds import Pod
from kubegpu.model.objects import Toleration
from kubegpu.scheduling.cycle import FilterOutcome, run_filters
from kubegpu.scheduling.fit import fits_requests
from kubegpu.scheduling.filters.tainttoleration import first_untolerated
from kubegpu.scheduling.gang import Gang
from kubegpu.scheduling.message import histogram
from kubegpu.scheduling.preemption import PreemptionResult
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion

from kubegpu.explain.templates import node_templates
from kubegpu.explain.variants import (
    fitting_nodes,
    with_resource,
    with_tolerations,
    without_required_node_affinity,
    without_selector_key,
)
from kubegpu.defrag.cost import move_cost, state_now
from kubegpu.defrag.plan import Goal
from kubegpu.defrag.planner import plan_defrag, problem_for


class Remedy(msgspec.Struct, omit_defaults=True):
    """One way to get the pod scheduled; `cost` orders remedies by how big a change they ask."""

    kind: str
    summary: str
    cost: int
    fits_nodes: int | None = None
    details: dict = {}
    for_pod: str | None = None  # the one pending pod the remedy is worded for (a move plan --for it)



def lost_gpu_hours(state: ClusterState, pod: Pod) -> dict:
    """What evicting a victim throws away, priced by the one cost model the defrag planner uses:
    GPU-hours since its last checkpoint (annotations) or since it started, plus restart time."""
    cost = move_cost(state, pod, state_now(state))
    return {"gpus": cost.gpus, "gpu_hours_lost": cost.gpu_hours, "lost_basis": cost.basis}


def preempt_remedy(snap: SchedulingSnapshot, result: PreemptionResult | None) -> Remedy | None:
    if result is None or result.chosen is None:
        return None
    state = snap.state
    c = result.chosen
    victims = []
    for v in c.victims:
        entry = {"pod": v.info.key, "priority": v.info.priority, "violates_pdb": v.violates_pdb,
                 "pdbs": [p.name for p in state.pdbs_for(v.info.pod)]}
        entry.update(lost_gpu_hours(state, v.info.pod))
        victims.append(entry)
    names = ", ".join(f"{v['pod']} (priority {v['priority']}" + (", breaks its PDB" if v["violates_pdb"] else "")
                      + ")" for v in victims)
    lost = sum(v["gpu_hours_lost"] for v in victims)
    tail = f"; about {lost:.2f} GPU-hours of work lost (since checkpoints or start, plus restart)" if lost else ""
    return Remedy(kind="preempt", cost=0, fits_nodes=len(result.candidates),
                  summary=f"preempt on {c.node}: {names}{tail} (kube-scheduler does this by itself)",
                  details={"node": c.node, "victims": victims, "pdb_violations": c.num_pdb_violations})


def toleration_remedies(snap: SchedulingSnapshot, outcome: FilterOutcome, v: KubeVersion) -> list[Remedy]:
    pod = outcome.pod
    taints = {}
    for g, taint_set in enumerate(snap.taint_sets):
        t = first_untolerated(taint_set, pod.spec.tolerations)
        if t is not None:
            taints[(t.key, t.value or "", t.effect)] = t
    out = []
    for (key, value, effect), taint in sorted(taints.items()):
        tol = Toleration(key=key, operator="Equal" if value else "Exists", value=value or None, effect=effect)
        variant = with_tolerations(pod, [tol])
        fits = len(fitting_nodes(snap, variant, v))
        if fits:
            out.append(Remedy(kind="add-toleration", cost=1, fits_nodes=fits,
                              summary=f"add toleration {taint.text} (fits on {counted(fits, 'node')} now)",
                              details={"toleration": {"key": key, "operator": tol.operator, "value": value or None,
                                                      "effect": effect}}))
    return out


def selector_remedies(snap: SchedulingSnapshot, outcome: FilterOutcome, v: KubeVersion) -> list[Remedy]:
    pod = outcome.pod
    out = []
    for key, value in sorted(pod.spec.node_selector.items()):
        fits = len(fitting_nodes(snap, without_selector_key(pod, key), v))
        if fits:
            model = key == LABEL_PRODUCT
            out.append(Remedy(kind="relax-selector", cost=5 if model else 2, fits_nodes=fits,
                              summary=f"drop nodeSelector {key}={value}" + (" (accept another GPU model)" if model
                                                                            else "") + f" (fits on {counted(fits, 'node')} now)",
                              details={"nodeSelector": {key: value}}))
    aff = pod.spec.affinity
    if aff and aff.node_affinity and aff.node_affinity.required_during_scheduling_ignored_during_execution:
        fits = len(fitting_nodes(snap, without_required_node_affinity(pod), v))
        if fits:
            out.append(Remedy(kind="relax-selector", cost=2, fits_nodes=fits,
                              summary=f"relax the required node affinity (fits on {counted(fits, 'node')} now)",
                              details={"requiredNodeAffinity": True}))
    return out


def smaller_request_remedy(snap: SchedulingSnapshot, outcome: FilterOutcome, v: KubeVersion) -> Remedy | None:
    pod = outcome.pod
    want = outcome.info.requests.get(GPU, 0)
    if want <= 1 or not any("Insufficient nvidia.com/gpu" in r for r in outcome.reason_counts()):
        return None
    # bounded by the cluster, not by the request: no node can give more than its allocatable
    most = max((a.get(GPU, 0) for a in snap.state.allocatable.values()), default=0)
    for k in range(min(want - 1, most), 0, -1):
        fits = len(fitting_nodes(snap, with_resource(pod, GPU, k), v))
        if fits:
            return Remedy(kind="smaller-request", cost=4, fits_nodes=fits,
                          summary=f"ask for {counted(k, 'GPU')} instead of {want} (fits on {counted(fits, 'node')} now)",
                          details={"resource": GPU, "from": want, "to": k})
    return None


PLAN_EXACT = "auto"  # as `kubegpu defrag --for`: the exact solver on small instances, so both give one plan


class MovePlanner:
    """Move remedies from the defrag planner (one set of safety rules, every filter checked).

    One planning problem is built per beneficiary priority and shared by the pods of that
    priority (its per-pod destination masks too); `why --all` asks once per pod shape (see
    explain.batch), so every pending workload gets its plan. Explicit object, one per why run.
    """

    def __init__(self, state, *, snapshot: SchedulingSnapshot | None = None,
                 gangs: dict[str, Gang] | None = None) -> None:
        self.state = state
        self.snapshot = snapshot
        self.gangs = gangs
        self.planned = 0
        self._problems: dict[int, object] = {}

    def plan(self, target: Pod):
        """The plan for pending pod `target` (the pod itself, never looked up again by its name)."""
        self.planned += 1
        prio = self.state.priority_of(target)
        problem = self._problems.get(prio)
        if problem is None:
            prio, problem = problem_for(self.state, target, gangs=self.gangs,
                                        snapshot=self.snapshot.copy() if self.snapshot is not None else None)
            self._problems[prio] = problem
        # the goal `kubegpu defrag --for POD` plans by default, so both give one plan
        return plan_defrag(self.state, Goal(kind="pod", pod=target.key),
                           exact=PLAN_EXACT, problem=problem, with_frag=False,
                           gangs=self.gangs, pod=target)


def room_anywhere(snap: SchedulingSnapshot, outcome: FilterOutcome) -> bool:
    """Could moving pods ever make room? Moves only relocate free room (a moved pod takes its
    requests along), so the nodes the pod may use, room aside, must hold its requests in total."""
    if outcome.prefilter is not None:
        return False
    ok = np.ones(outcome.num_nodes, dtype=bool) if outcome.allowed is None else outcome.allowed.copy()
    for name, res in zip(outcome.plugins, outcome.results):
        if name != "NodeResourcesFit":
            ok &= res.code == 0
    if not ok.any() or outcome.info.extra:
        return False
    view = snap.view(outcome.info)
    free = (snap.alloc[ok] - view.requested[ok]).sum(axis=0, keepdims=True)
    slots = (snap.allowed_pods[ok] - view.pod_count[ok]).sum(keepdims=True)
    return bool(fits_requests(free, outcome.info.vector, slots)[0])  # as if one node held it all


def move_remedy(snap: SchedulingSnapshot, outcome: FilterOutcome, gang: Gang | None, v: KubeVersion,
                gangs: dict[str, Gang], planner: MovePlanner | None = None) -> Remedy | None:
    """The defrag planner's fewest safe moves that make room; None when no plan exists."""
    if not room_anywhere(snap, outcome):
        return None
    target = sorted(gang.pending, key=lambda p: p.name)[0] if gang and gang.pending else outcome.pod
    plan = (planner or MovePlanner(snap.state)).plan(target)
    if plan is None or not plan.feasible or not plan.moves:
        return None
    moves = [{"pod": m.pod, "from": m.from_, "to": m.to,
              "gpu_hours_lost": m.cost.gpu_hours if m.cost else None} for m in plan.moves]
    details = {"moves": moves, "gpu_hours_lost": plan.total_cost_gpu_hours, "crosses_pools": plan.crosses_pools,
               "targets": [{"pod": t.pod, "node": t.node} for t in plan.targets]}
    freed = _freed_nodes(details)
    if gang:  # planned for the whole gang: one wording for every member
        return Remedy(kind="move-pods", cost=3, fits_nodes=len(freed), details=details,
                      summary=move_summary(details, target.key, "the gang"))
    return Remedy(kind="move-pods", cost=3, fits_nodes=len(freed), details=details, for_pod=target.key,
                  summary=move_summary(details, target.key, "the pod"))


def _freed_nodes(details: dict) -> list[str]:
    return sorted({t["node"] for t in details["targets"]}) or sorted({m["from"] for m in details["moves"]})


def move_summary(details: dict, target: str, who: str) -> str:
    """The move remedy in words, made from its details and the pod it is planned for."""
    moves = details["moves"]
    steps = ", ".join(f"{m['pod']} {m['from']} -> {m['to']}" for m in moves)
    return (f"move {counted(len(moves), 'pod')} to make room on {', '.join(_freed_nodes(details))}: {steps}; "
            f"then {who} fits ({details['gpu_hours_lost']:.2f} GPU-hours of work lost; plan: kubegpu defrag --for "
            f"{target})" + ("; moves pods across node pools: no plan inside the pools exists"
                            if details["crosses_pools"] else ""))


def for_another_pod(remedies: list[Remedy], pod: str) -> list[Remedy]:
    """Remedies worked out for one pod of a shape, worded for `pod` of the same shape.

    Only a remedy planned for that one pod (`for_pod`) names it; its target and its summary are
    made again from fields, never by replacing text (a key may be a prefix of another key or a
    node name)."""
    out = []
    for r in remedies:
        if r.for_pod is None or r.for_pod == pod:
            out.append(r)
            continue
        details = {**r.details, "targets": [{**t, "pod": pod if t["pod"] == r.for_pod else t["pod"]}
                                            for t in r.details["targets"]]}
        out.append(msgspec.structs.replace(r, for_pod=pod, details=details,
                                           summary=move_summary(details, pod, "the pod")))
    return out


def never_fits(snap: SchedulingSnapshot, outcome: FilterOutcome, v: KubeVersion) -> tuple[bool, str]:
    """Would the pod fit on any node if every pod were gone? If not, say why (the static blockers)."""
    empty = run_filters(snap, outcome.pod, v, info=outcome.info, view=snap.view(outcome.info).without_every_pod())
    if empty.schedulable:
        return False, ""
    if empty.prefilter is not None:
        return True, empty.prefilter.message
    why = ", ".join(histogram(empty.reason_counts()))
    models = sorted({n.metadata.labels.get(LABEL_PRODUCT) for n in snap.nodes} - {None})
    pinned = outcome.pod.spec.node_selector.get(LABEL_PRODUCT)
    if pinned and pinned not in models:
        why = f"it pins {LABEL_PRODUCT}={pinned}, the cluster has {', '.join(models) or 'no GPU models'}; " + why
    return True, f"even on empty nodes: {why}"


def template_snapshots(snap: SchedulingSnapshot) -> list:
    """One empty single-node snapshot per node template, built once per cluster state (`ClusterState.derived`)."""
    cached = snap.state.derived.get("remedies.template_snapshots")
    if cached is None:
        state = snap.state
        others = [o for o in state.objects if o.kind not in ("Node", "Pod")]
        cached = [(t, SchedulingSnapshot(ClusterState([*others, t.node], server_version=state.server_version)))
                  for t in node_templates(state)]
        snap.state.derived["remedies.template_snapshots"] = cached
    return cached


def scale_remedies(snap: SchedulingSnapshot, outcome: FilterOutcome, gang: Gang | None, v: KubeVersion
                   ) -> list[Remedy]:
    out = []
    for t, tiny in template_snapshots(snap):
        if not run_filters(tiny, outcome.pod, v).schedulable:
            continue
        members = len(gang.pending) if gang else 1
        work = tiny.copy()
        per_node = 0
        while per_node < members:
            copy = msgspec.structs.replace(outcome.pod, metadata=msgspec.structs.replace(
                outcome.pod.metadata, name=f"{outcome.pod.name}-{per_node}"))
            if not run_filters(work, copy, v).schedulable:
                break
            work.assume(work.pod_info(copy), 0)
            per_node += 1
        per_node = max(per_node, 1)
        count = -(-members // per_node)
        out.append(Remedy(kind="scale-node-group", cost=5, fits_nodes=count,
                          summary=f"scale node group {t.group} by {count} (a new {t.group} node holds it)",
                          details={"group": t.group, "source": t.source, "add_nodes": count}))
    return out


def rank_remedies(snap: SchedulingSnapshot, outcome: FilterOutcome, preemption: PreemptionResult | None,
                  gang: Gang | None, v: KubeVersion, gangs: dict[str, Gang] | None = None,
                  planner: MovePlanner | None = None) -> list[Remedy]:
    """Every remedy that applies, smallest change first."""
    remedies: list[Remedy] = []
    never, why = never_fits(snap, outcome, v)
    if outcome.prefilter is None:
        p = preempt_remedy(snap, preemption)
        if p is not None and not gang:
            remedies.append(p)
        remedies += toleration_remedies(snap, outcome, v)
        remedies += selector_remedies(snap, outcome, v)
        if not never:
            m = move_remedy(snap, outcome, gang, v, gangs if gangs is not None else {}, planner)
            if m is not None:
                remedies.append(m)
            if p is not None and gang:
                remedies.append(Remedy(kind="preempt", cost=3, fits_nodes=p.fits_nodes,
                                       summary=p.summary + " (one member at a time: kube-scheduler is gang-blind)",
                                       details=p.details))
        s = smaller_request_remedy(snap, outcome, v)
        if s is not None:
            remedies.append(s)
    scale = scale_remedies(snap, outcome, gang, v)
    remedies += scale
    if never:
        remedies.append(Remedy(kind="never", cost=9, summary=f"as written, no node in this cluster can ever hold it: {why}",
                               details={"why": why}))
    remedies.sort(key=lambda r: r.cost)
    if never:  # the verdict comes first when it holds, then every change by size
        remedies = [r for r in remedies if r.kind == "never"] + [r for r in remedies if r.kind != "never"]
    return remedies
