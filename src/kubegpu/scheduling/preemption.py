"""DefaultPreemption's dry run: which lower-priority pods would make room, and on which node.

upstream (preemption/preemption.go, defaultpreemption/default_preemption.go):
1. Not eligible with preemptionPolicy Never, or while lower-priority victims on the nominated
   node are still terminating.
2. Only nodes whose filter status is Unschedulable are tried; UnschedulableAndUnresolvable nodes
   are "Preemption is not helpful for scheduling".
3. Per node: remove every strictly lower-priority pod. None -> "No preemption victims found for
   incoming pod"; still no fit -> the filter's reasons. Else reprieve victims, most important
   first, PDB-violating ones before the rest; what cannot come back is the victim set.
4. Pick the node: fewest PDB violations, lowest highest victim priority, smallest priority sum,
   fewest victims, latest start of the highest-priority victims, then node order.
When no node works, the event gets "preemption: 0/N nodes are available: ...".
upstream starts the dry run at a random node offset and stops after max(10%, 100) candidates;
kubegpu starts at node 0 so answers are reproducible (the failure message is the same either way).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from kubegpu.model.kinds import PodDisruptionBudget
from kubegpu.model.selectors import selector_matches
from kubegpu.scheduling.cycle import FilterOutcome, make_context, run_filters, run_prefilters
from kubegpu.scheduling.framework import Code
from kubegpu.scheduling.message import DRA_NO_CLAIMS, DRA_STATE_NOT_FOUND, PREEMPTION_PREFIX
from kubegpu.scheduling.message import fit_error_message
from kubegpu.scheduling.snapshot import NodeView, PodInfo, SchedulingSnapshot
from kubegpu.scheduling.registry import DEFAULT_FILTERS

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MIN_CANDIDATES_PERCENTAGE = 10
MIN_CANDIDATES_ABSOLUTE = 100
EXPLAIN_CANDIDATES = 16  # victims are worked out for this many candidate nodes when explaining
_PRIORITY_OFFSET = 2**31  # upstream adds MaxInt32+1 so negative priorities sum sensibly


@dataclass
class Victim:
    info: PodInfo
    violates_pdb: bool


@dataclass
class Candidate:
    node: str
    index: int
    victims: list[Victim]

    @property
    def num_pdb_violations(self) -> int:
        return sum(v.violates_pdb for v in self.victims)


@dataclass
class PreemptionResult:
    """What DefaultPreemption would do: nominate `chosen` (victims listed), or say why not."""

    attempted: bool
    eligible: bool = True
    message: str | None = None              # "preemption: ..." (None when a node was found)
    candidates: list[Candidate] = field(default_factory=list)
    chosen: Candidate | None = None
    node_statuses: "PreemptionStatuses | None" = None


@dataclass
class PreemptionStatuses:
    """Per node, as masks: tried for preemption, no lower-priority victims, fits once they are gone."""

    potential: np.ndarray
    no_victims: np.ndarray
    after: FilterOutcome | None
    after_fits: np.ndarray


def preemption_policy(snapshot: SchedulingSnapshot, info: PodInfo) -> str:
    pod = info.pod
    if pod.spec.preemption_policy:
        return pod.spec.preemption_policy
    pc = snapshot.state.priority_classes.get(pod.spec.priority_class_name or "")
    return (pc.preemption_policy if pc and pc.preemption_policy else "PreemptLowerPriority")


def _more_important_first(infos: list[PodInfo]) -> list[PodInfo]:
    """upstream MoreImportantPod: higher priority, then earlier start time."""
    return sorted(infos, key=lambda i: (-i.priority, i.pod.status.start_time or "9999"))


def pdb_violations(infos: list[PodInfo], pdbs: list[PodDisruptionBudget]) -> list[bool]:
    """upstream filterPodsWithPDBViolation: spend each PDB's disruptionsAllowed in order."""
    allowed = {id(p): p.status.disruptions_allowed for p in pdbs}
    out = []
    for info in infos:
        pod = info.pod
        violates = False
        for pdb in pdbs:
            if pdb.namespace != pod.namespace or pdb.spec.selector is None:
                continue
            if not selector_matches(pdb.spec.selector, pod.labels, empty_matches_all=False):
                continue
            allowed[id(pdb)] -= 1
            if allowed[id(pdb)] < 0:
                violates = True
        out.append(violates)
    return out


def _fits_on(ctx, skipped: frozenset[str], view: NodeView, i: int) -> bool:
    """All filters on one node (upstream RunFilterPluginsWithNominatedPods on the node's clone)."""
    idx = np.asarray([i])
    return all(not plugin.filter(ctx, view, idx).code[0] for plugin in DEFAULT_FILTERS if plugin.name not in skipped)


def _select_victims(ctx, skipped: frozenset[str], base: NodeView, i: int, lower: np.ndarray,
                    pdbs: list[PodDisruptionBudget]) -> list[Victim]:
    """upstream SelectVictimsOnNode after the all-removed check passed: reprieve what we can."""
    snapshot = ctx.snapshot
    slots = [s for s in snapshot.node_slots[i] if lower[s]]
    infos = _more_important_first([snapshot.info_at(s) for s in slots])
    violating = pdb_violations(infos, pdbs)
    order = [x for x, v in zip(infos, violating) if v] + [x for x, v in zip(infos, violating) if not v]
    flags = {x.key: v for x, v in zip(infos, violating)}
    removed = np.zeros(len(snapshot.alive), dtype=bool)
    for x in infos:
        removed[snapshot.slot[x.key]] = True
    victims = []
    for x in order:
        removed[snapshot.slot[x.key]] = False
        if not _fits_on(ctx, skipped, base.without(removed), i):
            removed[snapshot.slot[x.key]] = True
            victims.append(Victim(x, flags[x.key]))
    by_key = {v.info.key: v for v in victims}
    return [by_key[x.key] for x in _more_important_first([v.info for v in victims])]


def pick_one_node(candidates: list[Candidate]) -> Candidate | None:
    """upstream pickOneNodeForPreemption's lexicographic criteria."""
    if not candidates:
        return None

    def key(c: Candidate):
        prios = [v.info.priority for v in c.victims]
        highest = max(prios, default=-_PRIORITY_OFFSET)
        top = [v for v in c.victims if v.info.priority == highest]
        earliest_top = min((v.info.pod.status.start_time or "" for v in top), default="")
        # latest start of the highest-priority victims wins: negate by sorting on a reversed string
        return (c.num_pdb_violations, highest, sum(p + _PRIORITY_OFFSET for p in prios), len(c.victims),
                _Reversed(earliest_top), c.index)

    return min(candidates, key=key)


class _Reversed:
    """Sort helper: larger strings first (RFC3339 timestamps compare as strings)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: "_Reversed") -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value


def dry_run(snapshot: SchedulingSnapshot, outcome: FilterOutcome, *, max_candidates: int | None = None,
            with_victims: bool = True) -> PreemptionResult:
    """DefaultPreemption's PostFilter for a pod that fits nowhere."""
    info = outcome.info
    n = outcome.num_nodes
    if outcome.schedulable:
        return PreemptionResult(attempted=False)
    if preemption_policy(snapshot, info) == "Never":
        return PreemptionResult(attempted=True, eligible=False, message=PREEMPTION_PREFIX + NOT_ELIGIBLE_NEVER)
    codes = outcome.codes()
    nominated = info.pod.status.nominated_node_name
    if nominated and nominated in snapshot.index and codes[snapshot.index[nominated]] != Code.UNRESOLVABLE:
        for other in snapshot.infos_on(snapshot.index[nominated]):
            if other.priority < info.priority and other.pod.metadata.deletion_timestamp:
                return PreemptionResult(attempted=True, eligible=False,
                                        message=PREEMPTION_PREFIX + NOT_ELIGIBLE_TERMINATING)
    potential = codes == Code.UNSCHEDULABLE
    candidates: list[Candidate] = []
    m = snapshot.slot_count
    lower = snapshot.alive[:m] & (snapshot.pod_prio[:m] < info.priority)
    lower_count = np.bincount(snapshot.pod_node[:m][lower], minlength=n)
    no_victims = potential & (lower_count == 0)
    tried = potential & ~no_victims
    after_fits = np.zeros(n, dtype=bool)
    after = None
    if tried.any():
        base = snapshot.view(info)
        full = np.zeros(len(snapshot.alive), dtype=bool)
        full[:m] = lower & tried[np.maximum(snapshot.pod_node[:m], 0)]
        # upstream SelectVictimsOnNode: remove that node's lower-priority pods, run every filter there
        after = run_filters(snapshot, info.pod, outcome.version, info=info, view=base, removed_per_node=full)
        after_fits = tried & after.fits
        limit = max_candidates or max(math.ceil(int(potential.sum()) * MIN_CANDIDATES_PERCENTAGE / 100),
                                      MIN_CANDIDATES_ABSOLUTE)
        pdbs = snapshot.state.of_kind("PodDisruptionBudget")
        ctx = make_context(snapshot, info.pod, outcome.version, info)
        run_prefilters(ctx)
        for i in np.flatnonzero(after_fits)[:limit].tolist():
            victims = (_select_victims(ctx, outcome.skipped, base, i, full, pdbs) if with_victims else
                       [Victim(x, False) for x in snapshot.infos_on(i) if x.priority < info.priority])
            candidates.append(Candidate(snapshot.names[i], i, victims))
    statuses = PreemptionStatuses(potential=potential, no_victims=no_victims, after=after, after_fits=after_fits)
    if candidates:
        return PreemptionResult(attempted=True, candidates=candidates, chosen=pick_one_node(candidates),
                                node_statuses=statuses)
    counts = after.reason_counts(tried & ~after_fits) if after is not None else Counter()
    if no_victims.any():
        counts[NO_VICTIMS] += int(no_victims.sum())
    absent = n - int(potential.sum())
    if absent:
        counts[NOT_HELPFUL] += absent
    text = fit_error_message(n, reason_counts=counts, version=_inner_version(outcome))
    return PreemptionResult(attempted=True, message=PREEMPTION_PREFIX + text, node_statuses=statuses)


def _inner_version(outcome: FilterOutcome):
    """The inner FitError has no PostFilter part, so the double-period quirk never applies inside."""
    return outcome.version


def postfilter_message(outcome: FilterOutcome, result: PreemptionResult | None) -> str | None:
    """The PostFilter text the event carries after the filter histogram, for the outcome's version."""
    v = outcome.version
    if outcome.schedulable:
        return None
    if v.dra_postfilter:
        if outcome.prefilter is not None and outcome.prefilter.code == Code.UNRESOLVABLE:
            # PreFilter stopped before DynamicResources wrote its state: its PostFilter errors
            return DRA_STATE_NOT_FOUND
        if result is None or result.message is None:
            return None
        return f"{DRA_NO_CLAIMS}, {result.message}"
    if not v.has_preemption_message or result is None:
        return None
    return result.message
