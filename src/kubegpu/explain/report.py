"""`why`: the FailedScheduling message kube-scheduler would write, then everything it leaves out.

A WhyReport holds the event text (same histogram, same order, same version wording), every
node's first failing filter (what the event counts) and all of its failing filters, the nodes
grouped by pool, the gang the pod belongs to, and the remedies ranked by how small a change
they ask for.
"""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.model.quantity import format_amount
from kubegpu.scheduling.cycle import FilterOutcome
from kubegpu.scheduling.gang import Gang, find_gangs, place_gang
from kubegpu.scheduling.message import ParsedEvent, fit_error_message, histogram, parse_event_message
from kubegpu.scheduling.preemption import EXPLAIN_CANDIDATES, PreemptionResult, dry_run, postfilter_message
from kubegpu.scheduling.registry import NOT_EVALUATED
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion, version_of

NODE_DETAIL_LIMIT = 300  # per-node plain-words detail up to this many nodes (pools always)


class FailingFilter(msgspec.Struct, omit_defaults=True, gc=False):
    plugin: str | None
    code: str
    reasons: list[str]
    detail: list[str] = []


class NodeVerdict(msgspec.Struct, gc=False):  # millions in --all: keep them out of the GC
    name: str
    fits: bool
    plugin: str | None
    reasons: list[str]
    pool: str = ""
    failing: list[FailingFilter] = []


class PoolLine(msgspec.Struct):
    pool: str
    nodes: int
    fit: int
    reasons: list[str]
    closest: str = ""

    @property
    def summary(self) -> str:
        head = f"{self.pool or '(no pool label)'}: {self.nodes} node(s), {self.fit} fit"
        if self.reasons:
            head += "; " + ", ".join(self.reasons)
        if self.closest:
            head += f" (closest: {self.closest})"
        return head


class Remedy(msgspec.Struct, omit_defaults=True):
    kind: str
    summary: str
    cost: int
    fits_nodes: int | None = None
    details: dict = {}


class GangInfo(msgspec.Struct):
    name: str
    system: str
    min_member: int
    members: int
    bound: int
    pending: int
    fit_together: int
    summary: str


class PreemptionInfo(msgspec.Struct, omit_defaults=True):
    eligible: bool
    node: str | None = None
    victims: list[dict] = []
    message: str | None = None


class WhyReport(msgspec.Struct):
    pod: str
    schedulable: bool
    message: str
    nodes: list[NodeVerdict]
    remedies: list[Remedy]
    version: str = ""
    priority: int = 0
    requests: dict[str, str] = {}
    pools: list[PoolLine] = []
    gang: GangInfo | None = None
    preemption: PreemptionInfo | None = None
    not_evaluated: list[str] = []
    observed_message: str | None = None
    observed: ParsedEvent | None = None
    matches_observed: bool | None = None
    notes: list[str] = []


def observed_message(state, pod: Pod) -> str | None:
    """What the cluster itself recorded: the PodScheduled condition (never truncated), else the
    newest FailedScheduling event."""
    for c in pod.status.conditions:
        if c.type == "PodScheduled" and c.status == "False" and c.message:
            return c.message
    events = [e for e in state.events_for(pod) if e.reason == "FailedScheduling" and e.text]
    if events:
        events.sort(key=lambda e: e.last_timestamp or e.event_time or e.first_timestamp or "")
        return events[-1].text
    return None


def event_message(outcome: FilterOutcome, preemption: PreemptionResult | None) -> str:
    """The FailedScheduling text kube-scheduler would write for this outcome."""
    if outcome.schedulable:
        return ""
    pre = outcome.prefilter
    return fit_error_message(outcome.num_nodes, reason_counts=outcome.reason_counts(),
                             prefilter_message=pre.message if pre is not None else None,
                             postfilter_message=postfilter_message(outcome, preemption),
                             version=outcome.version)


def _node_verdicts(snap: SchedulingSnapshot, outcome: FilterOutcome, pools: list[str], detail: bool
                   ) -> list[NodeVerdict]:
    """Per node verdicts. Without plain-words detail, nodes with the same combination of
    (plugin, reason set) share one FailingFilter list, built once per combination."""
    from kubegpu.explain.distance import describe

    n = outcome.num_nodes
    names = snap.names
    if outcome.prefilter is not None:
        pre = outcome.prefilter
        failing = [FailingFilter(pre.plugin, pre.code.upstream, list(pre.reasons))]
        return [NodeVerdict(name=names[i], fits=False, plugin=pre.plugin, reasons=list(pre.reasons), pool=pools[i],
                            failing=failing) for i in range(n)]
    if detail:
        view = snap.view(outcome.info)
        out = []
        for i in range(n):
            first = outcome.first_status(i)
            failing = [FailingFilter(st.plugin, st.code.upstream, list(st.reasons),
                                     describe(snap, view, outcome.info, i, st)) for st in outcome.all_statuses(i)]
            out.append(NodeVerdict(name=names[i], fits=first.ok, plugin=first.plugin, reasons=list(first.reasons),
                                   pool=pools[i], failing=failing))
        return out
    parts = [np.where(r.code != 0, r.rid.astype(np.int64) + 1, 0) for r in outcome.results]
    if outcome.allowed is not None:
        parts.append(np.where(outcome.allowed, 0, 1))
    keys = np.stack(parts, axis=1) if parts else np.zeros((n, 0), dtype=np.int64)
    flat = np.zeros(n, dtype=np.int64)
    for col in range(keys.shape[1]):  # one int64 key per node (few plugins, few reason sets)
        flat = flat * 4099 + keys[:, col]
    combos, inverse = np.unique(flat, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    shared = []
    for c, combo in enumerate(combos):
        i = int(np.flatnonzero(inverse == c)[0])
        first = outcome.first_status(i)
        failing = [FailingFilter(st.plugin, st.code.upstream, list(st.reasons)) for st in outcome.all_statuses(i)]
        shared.append((first.ok, first.plugin, list(first.reasons), failing))
    return [NodeVerdict(name, *shared[c][:3], pool, shared[c][3]) for name, pool, c in zip(names, pools, inverse.tolist())]


def _pool_lines(snap: SchedulingSnapshot, outcome: FilterOutcome, pools: list[str]) -> list[PoolLine]:
    """One line per pool: how many nodes fit, the first-failing reasons, the closest node."""
    from kubegpu.explain.distance import describe
    from kubegpu.scheduling.cycle import FITS, OUTSIDE_PREFILTER

    n = outcome.num_nodes
    view = snap.view(outcome.info)
    n_failing = np.zeros(n, dtype=np.int32)
    first_rid = np.zeros(n, dtype=np.int64)
    for p, res in enumerate(outcome.results):
        n_failing += res.code != 0
        first_rid[outcome.first == p] = res.rid[outcome.first == p]
    gpu = snap.column.get("nvidia.com/gpu")
    free_gpu = (snap.alloc[:, gpu] - view.requested[:, gpu]) if gpu is not None else np.zeros(n)
    first = outcome.first.astype(np.int64)
    keys = (first + 3) * (1 << 32) + first_rid
    pool_names = sorted(set(pools))
    position = {p: k for k, p in enumerate(pool_names)}
    pool_idx = np.fromiter((position[p] for p in pools), dtype=np.int64, count=n)

    def reasons_of(key: int) -> tuple[str, ...]:
        p, rid = key // (1 << 32) - 3, key % (1 << 32)
        if outcome.prefilter is not None:
            return outcome.prefilter.reasons
        if p == FITS:
            return ()
        if p == OUTSIDE_PREFILTER:
            return (outcome.outside_reason(),)
        return outcome.results[p].table[rid]

    lines = []
    for k, pool in enumerate(pool_names):
        members = np.flatnonzero(pool_idx == k)
        counts: Counter = Counter()
        uniq, cnt = np.unique(keys[members], return_counts=True)
        for key, c in zip(uniq.tolist(), cnt.tolist()):
            for reason in reasons_of(key):
                counts[reason] += c
        fits = outcome.fits[members] if outcome.prefilter is None else np.zeros(len(members), dtype=bool)
        closest = ""
        failing = members[~fits]
        if len(failing):
            order = np.lexsort((failing, -free_gpu[failing], n_failing[failing]))
            best = int(failing[order[0]])
            statuses = outcome.all_statuses(best) if outcome.prefilter is None else [outcome.prefilter]
            words = [w for st in statuses for w in describe(snap, view, outcome.info, best, st)]
            closest = "; ".join(words) if words else snap.names[best]
        lines.append(PoolLine(pool=pool, nodes=len(members), fit=int(fits.sum()), reasons=histogram(counts),
                              closest=closest))
    lines.sort(key=lambda line: (-line.nodes, line.pool))
    return lines


def _gang_info(snap: SchedulingSnapshot, gang: Gang, version: KubeVersion) -> GangInfo:
    placement = place_gang(snap, gang, version=version)
    gpus = [snap.state.pod_requests(p).get("nvidia.com/gpu", 0) for p in gang.members]
    shape = f"{len(gang.members)} x {gpus[0]} GPUs" if gpus and len(set(gpus)) == 1 and gpus[0] else \
        f"{len(gang.members)} pods"
    pending = len(gang.pending)
    summary = (f"gang of {shape} ({gang.system} {gang.name}, needs {gang.min_member}): "
               f"{len(placement.placed)} of {pending} pending members fit")
    if placement.bound:
        summary += f", {placement.bound} already running"
    summary += "; the gang " + ("can start" if placement.schedulable else "cannot start as a unit")
    return GangInfo(name=gang.key, system=gang.system, min_member=gang.min_member, members=len(gang.members),
                    bound=placement.bound, pending=pending, fit_together=len(placement.placed), summary=summary)


def explain_pod(snap: SchedulingSnapshot, pod: Pod, *, version: KubeVersion | None = None,
                gangs: dict[str, Gang] | None = None, node_detail: bool | None = None,
                with_remedies: bool = True, planner=None) -> WhyReport:
    """The full why-report for one pod on the snapshot's cluster."""
    from kubegpu.explain.remedies import rank_remedies

    state = snap.state
    v = version or version_of(state.server_version)
    outcome = snap.filter_pod(pod, version=v)
    preemption = dry_run(snap, outcome, max_candidates=EXPLAIN_CANDIDATES) if not outcome.schedulable else None
    message = event_message(outcome, preemption)
    pools = snap.pools
    detail = node_detail if node_detail is not None else len(snap.nodes) <= NODE_DETAIL_LIMIT
    gangs = gangs if gangs is not None else find_gangs(state)
    gang = next((g for g in gangs.values() if any(m.key == pod.key for m in g.members)), None)
    gang_info = _gang_info(snap, gang, v) if gang is not None and len(gang.members) > 1 else None
    observed = observed_message(state, pod)
    report = WhyReport(
        pod=pod.key, schedulable=outcome.schedulable, message=message,
        nodes=_node_verdicts(snap, outcome, pools, detail), remedies=[], version=str(v),
        priority=outcome.info.priority,
        requests={r: format_amount(r, a) for r, a in sorted(outcome.info.requests.items())},
        pools=_pool_lines(snap, outcome, pools), gang=gang_info,
        preemption=_preemption_info(preemption),
        # upstream: DynamicResources skips pods without ResourceClaims, so only then is it a gap
        not_evaluated=list(NOT_EVALUATED) if pod.spec.resource_claims else [],
        observed_message=observed, observed=parse_event_message(observed) if observed else None,
        matches_observed=(observed == message) if observed and message else None)
    gang_blocked = gang_info is not None and gang_info.bound + gang_info.fit_together < gang_info.min_member
    if with_remedies and (not outcome.schedulable or gang_blocked):
        skipped = len(planner.skipped) if planner is not None else 0
        report.remedies = rank_remedies(snap, outcome, preemption, gang, v, gangs, planner)
        if planner is not None and len(planner.skipped) > skipped:
            report.notes.append(f"moves not planned here (why --all plans the first {planner.limit} pending "
                                f"workloads); run: kubegpu defrag --for {pod.key}")
    return report


def _preemption_info(result: PreemptionResult | None) -> PreemptionInfo | None:
    if result is None or not result.attempted:
        return None
    chosen = result.chosen
    return PreemptionInfo(
        eligible=result.eligible, node=chosen.node if chosen else None,
        victims=[{"pod": v.info.key, "priority": v.info.priority, "violates_pdb": v.violates_pdb}
                 for v in (chosen.victims if chosen else [])],
        message=result.message)


def pending_pods(state, namespace: str | None = None) -> list[Pod]:
    """Pods waiting for a scheduler, optionally in one namespace."""
    out = []
    for p in state.unscheduled_pods:
        if namespace and p.namespace != namespace:
            continue
        out.append(p)
    return out


def _signature(state, pod: Pod) -> bytes:
    """Pods with the same signature get the same verdicts (replicas of one template)."""
    spec = msgspec.structs.replace(pod.spec, node_name=None)
    return msgspec.json.encode([pod.namespace, spec, pod.labels, pod.annotations, state.priority_of(pod),
                                pod.status.nominated_node_name])


PLAN_LIMIT = 6  # move remedies planned per why --all run (each is a defrag plan)


def explain_all(state, *, namespace: str | None = None, version: KubeVersion | None = None,
                gpu_only: bool = False, node_detail: bool | None = None,
                plan_limit: int | None = PLAN_LIMIT) -> list[WhyReport]:
    """A report for every pending pod (every pending GPU pod with `gpu_only`).

    Replicas of one template are evaluated once: their filters, preemption dry run and
    remedies are identical; only the pod name and what the cluster observed differ.
    """
    from kubegpu.explain.remedies import MovePlanner

    snap = SchedulingSnapshot.from_cluster(state)
    gangs = find_gangs(state)
    planner = MovePlanner(state, limit=plan_limit, snapshot=snap, gangs=gangs)
    seen: dict[bytes, WhyReport] = {}
    out = []
    for pod in pending_pods(state, namespace):
        if gpu_only and not state.gpu_demand(pod).is_gpu:
            continue
        sig = _signature(state, pod)
        first = seen.get(sig)
        if first is None:
            report = seen[sig] = explain_pod(snap, pod, version=version, gangs=gangs, node_detail=node_detail,
                                             planner=planner)
        else:
            observed = observed_message(state, pod)
            report = msgspec.structs.replace(
                first, pod=pod.key, observed_message=observed,
                observed=parse_event_message(observed) if observed else None,
                matches_observed=(observed == first.message) if observed and first.message else None)
        out.append(report)
    return out
