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

from kubegpu.model.text import counted
from kubegpu.model.kinds import Pod
from kubegpu.model.names import invalid_name_note
from kubegpu.model.quantity import format_amount
from kubegpu.scheduling.cycle import FITS, OUTSIDE_PREFILTER, FilterOutcome, filter_pod
from kubegpu.scheduling.framework import small_unique
from kubegpu.scheduling.gang import Gang, find_gangs, place_gang, reaches_min_member
from kubegpu.scheduling.message import ParsedEvent, fit_error_message, histogram, parse_event_message
from kubegpu.scheduling.preemption import EXPLAIN_CANDIDATES, PreemptionResult, dry_run, postfilter_message
from kubegpu.scheduling.registry import NOT_EVALUATED
from kubegpu.scheduling.nodeready import NOT_READY_UNTAINTED_NOTE
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion, version_of

from kubegpu.explain.distance import describe
from kubegpu.explain.nodesets import NodeSets
from kubegpu.explain.remedies import MovePlanner, Remedy, for_another_pod, rank_remedies

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
    notes: list[str] = []   # facts the filters do not see (a NotReady node without the taint)


class PoolLine(msgspec.Struct):
    pool: str
    nodes: int
    fit: int
    reasons: list[str]
    closest: str = ""

    @property
    def summary(self) -> str:
        head = f"{self.pool or '(no pool label)'}: {counted(self.nodes, 'node')}, {self.fit} fit"
        if self.reasons:
            head += "; " + ", ".join(self.reasons)
        if self.closest:
            head += f" (closest: {self.closest})"
        return head


class GangInfo(msgspec.Struct):
    name: str
    system: str
    min_member: int
    members: int
    bound: int
    pending: int
    fit_together: int
    summary: str

    @property
    def can_start(self) -> bool:
        return reaches_min_member(self.bound, self.fit_together, self.min_member)


class PreemptionInfo(msgspec.Struct, omit_defaults=True):
    eligible: bool
    node: str | None = None
    victims: list[dict] = []
    message: str | None = None


class NodeGroup(msgspec.Struct, omit_defaults=True, gc=False):
    """Nodes with the same outcome for the pod: same first failing filter and reasons, same blockers.

    In `why --all` the members are written once per output (explain.nodesets): `node_set` names
    the set, `nodes` is null when it was written before, or the set is `node_set_base` plus
    `nodes_added` minus `nodes_removed`. A single pod's report always lists `nodes`."""

    fits: bool
    plugin: str | None
    reasons: list[str]
    count: int
    nodes: list[str] | None
    failing: list[FailingFilter]
    node_set: int | None = None
    node_set_base: int | None = None
    nodes_added: list[str] | None = None
    nodes_removed: list[str] | None = None


class WhyReport(msgspec.Struct):
    pod: str
    schedulable: bool
    message: str
    nodes: list[NodeVerdict] | None   # None in `why --all` unless --nodes: node_groups carry the detail
    remedies: list[Remedy]
    node_groups: list[NodeGroup] = []
    phase: str = "Pending"
    node: str | None = None            # where the pod runs, when it is not pending
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


def _combination_keys(outcome: FilterOutcome) -> tuple[np.ndarray, np.ndarray]:
    """Per node, an id of its combination of (first failing filter, every failing filter and
    reasons): (one representative node per combination, combination id per node)."""
    n = outcome.num_nodes
    if outcome.prefilter is not None:
        return np.zeros(1, dtype=np.int64), np.zeros(n, dtype=np.int64)
    parts = [np.where(r.code != 0, r.rid.astype(np.int64) + 1, 0) for r in outcome.results]
    if outcome.allowed is not None:
        parts.append(np.where(outcome.allowed, 0, 1))
    inverse = np.zeros(n, dtype=np.int64)
    for col in parts:  # fold one plugin at a time, renumbering so keys stay small
        _, inverse = small_unique(inverse * (int(col.max()) + 1 if n else 1) + col)
    first = np.full(int(inverse.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(n))  # lowest node index of each combination
    return first, inverse


def node_groups(snap: SchedulingSnapshot, outcome: FilterOutcome, sets: NodeSets | None = None
                ) -> list[NodeGroup]:
    """Nodes grouped by outcome: the output grows with distinct outcomes, not with nodes.

    With `sets` (why --all), members are written as references to the sets written so far."""
    return _grouped(snap, outcome, sets)[0]


def _grouped(snap: SchedulingSnapshot, outcome: FilterOutcome, sets: NodeSets | None
             ) -> tuple[list[NodeGroup], list[NodeGroup]]:
    """(groups in report order, each node's group in node order)."""
    first, inverse = _combination_keys(outcome)
    order = np.argsort(inverse, kind="stable")  # members of every combination, in node order, in one sort
    bounds = np.searchsorted(inverse[order], np.arange(len(first) + 1))
    verdicts = []
    for c, i in enumerate(first.tolist()):
        if outcome.prefilter is not None:
            pre = outcome.prefilter
            head, failing = pre, [FailingFilter(pre.plugin, pre.code.upstream, list(pre.reasons))]
        else:
            head = outcome.first_status(i)
            failing = [FailingFilter(st.plugin, st.code.upstream, list(st.reasons)) for st in outcome.all_statuses(i)]
        verdicts.append((head.ok and outcome.prefilter is None, head.plugin, list(head.reasons), failing,
                         order[bounds[c]:bounds[c + 1]], c))
    # report order first, so node sets are numbered in the order the output shows them
    verdicts.sort(key=lambda v: (not v[0], -len(v[4]), v[1] or "", v[2]))
    names = np.asarray(snap.names, dtype=object) if sets is None else None
    by_combination: list[NodeGroup] = [None] * len(verdicts)  # type: ignore[list-item]
    groups = []
    for fits, plugin, reasons, failing, members, c in verdicts:
        if sets is None:
            group = NodeGroup(fits=fits, plugin=plugin, reasons=reasons, count=len(members),
                              nodes=names[members].tolist(), failing=failing)
        else:
            ref = sets.encode(members, (fits, plugin, tuple(reasons)))
            group = NodeGroup(fits=fits, plugin=plugin, reasons=reasons, count=len(members), nodes=ref.nodes,
                              failing=failing, node_set=ref.node_set, node_set_base=ref.base,
                              nodes_added=ref.added, nodes_removed=ref.removed)
        groups.append(group)
        by_combination[c] = group
    return groups, [by_combination[c] for c in inverse.tolist()]


def written_before(groups: list[NodeGroup]) -> list[NodeGroup]:
    """The same groups in a later report of the same output: every set is referred to by id."""
    return [msgspec.structs.replace(g, nodes=None, node_set_base=None, nodes_added=None, nodes_removed=None)
            if g.node_set is not None else g for g in groups]


def _node_verdicts(snap: SchedulingSnapshot, outcome: FilterOutcome, group_of: list[NodeGroup], detail: bool
                   ) -> list[NodeVerdict]:
    """Every node's verdict, in node order; with `detail`, blockers in plain words too."""
    pools = snap.pools
    if detail and outcome.prefilter is None:
        view = snap.view(outcome.info)
        out = []
        for i, name in enumerate(snap.names):
            first = outcome.first_status(i)
            failing = [FailingFilter(st.plugin, st.code.upstream, list(st.reasons),
                                     describe(snap, view, outcome.info, i, st)) for st in outcome.all_statuses(i)]
            out.append(NodeVerdict(name=name, fits=first.ok, plugin=first.plugin, reasons=list(first.reasons),
                                   pool=pools[i], failing=failing))
    else:
        out = [NodeVerdict(name, g.fits, g.plugin, g.reasons, pools[i], g.failing)
               for i, (name, g) in enumerate(zip(snap.names, group_of))]
    for i in np.flatnonzero(snap.not_ready_untainted).tolist():
        out[i].notes = [NOT_READY_UNTAINTED_NOTE]
    return out


def _pool_lines(snap: SchedulingSnapshot, outcome: FilterOutcome, pools: list[str]) -> list[PoolLine]:
    """One line per pool: how many nodes fit, the first-failing reasons, the closest node."""
    n = outcome.num_nodes
    view = snap.view(outcome.info)
    n_failing = np.zeros(n, dtype=np.int32)
    first_rid = np.zeros(n, dtype=np.int64)
    for p, res in enumerate(outcome.results):
        n_failing += res.code != 0
        first_rid[outcome.first == p] = res.rid[outcome.first == p]
    free_gpu = snap.gpu_room(outcome.info, view.requested)
    first = outcome.first.astype(np.int64)
    keys = (first + 3) * (1 << 32) + first_rid
    pool_names, pool_idx = snap.table.pool_index

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
    demands = {snap.state.gpu_demand(p) for p in gang.members}
    demand = next(iter(demands)) if len(demands) == 1 else None
    shape = f"{len(gang.members)} x {demand.shape}" if demand is not None and demand.is_gpu else \
        f"{len(gang.members)} pods"
    pending = len(gang.pending)
    summary = (f"gang of {shape} ({gang.system} {gang.name}, needs {gang.min_member}): "
               f"{len(placement.placed)} of {pending} pending members fit")
    if placement.bound:
        summary += f", {placement.bound} already running"
    summary += "; the gang " + ("can start" if placement.schedulable else "cannot start as a unit")
    return GangInfo(name=gang.key, system=gang.system, min_member=gang.min_member, members=len(gang.members),
                    bound=placement.bound, pending=pending, fit_together=len(placement.placed), summary=summary)


def bound_report(state, pod: Pod) -> WhyReport:
    """A pod that is not waiting for a scheduler: say so, and where it runs."""
    phase = pod.status.phase or "Unknown"
    where = pod.spec.node_name
    note = (f"not pending: bound to node {where} (phase {phase}); kube-scheduler has placed it" if where else
            f"not pending: phase {phase}" + (", it has finished" if pod.is_terminal else ""))
    return WhyReport(pod=pod.key, schedulable=True, message="", nodes=[], remedies=[], phase=phase, node=where,
                     priority=state.priority_of(pod), notes=[note, *name_notes(pod)])


def name_notes(pod: Pod) -> list[str]:
    """A note when the dump holds a pod an API server would have refused (the pod is still reported)."""
    note = invalid_name_note("pod", pod.metadata.namespace, pod.name)
    return [note] if note else []


def _not_ready_notes(snap: SchedulingSnapshot, outcome: FilterOutcome) -> list[str]:
    """One note when the pod fits on nodes that report NotReady without the taint (see scheduling.nodeready)."""
    hits = np.flatnonzero(snap.not_ready_untainted & outcome.fits)
    if not hits.size:
        return []
    names = ", ".join(snap.names[i] for i in hits[:3].tolist()) + (" ..." if hits.size > 3 else "")
    return [f"fits on {counted(int(hits.size), 'node')} that report NotReady without the not-ready taint "
            f"({names}): kube-scheduler reads only taints; status and frag count them as taking no new pods"]


def explain_pod(snap: SchedulingSnapshot, pod: Pod, *, version: KubeVersion | None = None,
                gangs: dict[str, Gang] | None = None, node_detail: bool | None = None,
                with_remedies: bool = True, planner: MovePlanner | None = None, with_nodes: bool = True,
                outcome: FilterOutcome | None = None, remedy_cache: dict | None = None,
                remedy_key: object = None, node_sets: NodeSets | None = None) -> WhyReport:
    """The full why-report for one pod on the snapshot's cluster.

    `with_nodes=False` leaves the per-node list out (node_groups carry the same facts, grouped);
    `node_sets` writes group members as references to the sets an output has written (why --all);
    `outcome` reuses a filter run the caller already has for this pod; `remedy_cache` keyed by
    `remedy_key` shares the remedy search between pods of one shape (see explain.batch).
    """
    state = snap.state
    if pod.spec.node_name or pod.is_terminal:
        return bound_report(state, pod)
    v = version or version_of(state.server_version)
    outcome = outcome or filter_pod(snap, pod, version=v)
    preemption = dry_run(snap, outcome, max_candidates=EXPLAIN_CANDIDATES) if not outcome.schedulable else None
    message = event_message(outcome, preemption)
    detail = node_detail if node_detail is not None else len(snap.nodes) <= NODE_DETAIL_LIMIT
    gangs = gangs if gangs is not None else find_gangs(state)
    gang = next((g for g in gangs.values() if any(m.key == pod.key for m in g.members)), None)
    gang_info = _gang_info(snap, gang, v) if gang is not None and len(gang.members) > 1 else None
    observed = observed_message(state, pod)
    groups, group_of = _grouped(snap, outcome, node_sets)
    report = WhyReport(
        pod=pod.key, schedulable=outcome.schedulable, message=message,
        nodes=_node_verdicts(snap, outcome, group_of, detail) if with_nodes else None, remedies=[],
        node_groups=groups, version=str(v), priority=outcome.info.priority,
        requests={r: format_amount(r, a) for r, a in sorted(outcome.info.requests.items())},
        pools=_pool_lines(snap, outcome, snap.pools), gang=gang_info,
        preemption=_preemption_info(preemption),
        # upstream: DynamicResources skips pods without ResourceClaims, so only then is it a gap
        not_evaluated=list(NOT_EVALUATED) if pod.spec.resource_claims else [],
        observed_message=observed, observed=parse_event_message(observed) if observed else None,
        matches_observed=(observed == message) if observed and message else None,
        notes=[*_not_ready_notes(snap, outcome), *name_notes(pod)])
    gang_blocked = gang_info is not None and not gang_info.can_start
    if with_remedies and (not outcome.schedulable or gang_blocked):
        cached = remedy_cache.get(remedy_key) if remedy_cache is not None and remedy_key is not None else None
        if cached is not None:
            report.remedies = for_another_pod(cached, pod.key)
        else:
            report.remedies = rank_remedies(snap, outcome, preemption, gang, v, gangs, planner)
            if remedy_cache is not None and remedy_key is not None:
                remedy_cache[remedy_key] = report.remedies
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


