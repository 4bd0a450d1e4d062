"""Gangs: pods that only make sense together (all-or-nothing), whatever layer groups them.

Recognised markers (see reference/scheduler-facts.md 4.5): Volcano (annotation
scheduling.k8s.io/group-name or scheduling.volcano.sh/group-name, label volcano.sh/job-name),
coscheduling (labels scheduling.x-k8s.io/pod-group and the older pod-group.scheduling.sigs.k8s.io),
Kueue plain-pod groups, JobSet, LeaderWorkerSet and KAI (annotation pod-group-name). The minimum
size comes from the PodGroup object when the state has it, else from the markers, else every
member counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubegpu.model.cluster import ClusterState
from kubegpu.model.integers import int_or_none
from kubegpu.model.kinds import GenericObject, Pod, PodGroup
from kubegpu.model.loose import loose
from kubegpu.scheduling.cycle import run_filters
from kubegpu.scheduling.versions import version_of

# (where, key, system): checked in this order, first hit names the group
GANG_MARKERS = (
    ("annotation", "scheduling.k8s.io/group-name", "volcano"),
    ("annotation", "scheduling.volcano.sh/group-name", "volcano"),
    ("label", "scheduling.k8s.io/group-name", "volcano"),
    ("label", "scheduling.x-k8s.io/pod-group", "coscheduling"),
    ("label", "pod-group.scheduling.sigs.k8s.io", "coscheduling"),
    ("label", "kueue.x-k8s.io/pod-group-name", "kueue"),
    ("annotation", "pod-group-name", "kai"),
    ("label", "volcano.sh/job-name", "volcano-job"),
    ("label", "leaderworkerset.sigs.k8s.io/name", "leaderworkerset"),
    ("label", "jobset.sigs.k8s.io/jobset-name", "jobset"),
)


@dataclass
class Gang:
    system: str
    namespace: str
    name: str
    min_member: int
    members: list[Pod] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def pending(self) -> list[Pod]:
        return [p for p in self.members if p.is_unscheduled]

    @property
    def bound(self) -> list[Pod]:
        return [p for p in self.members if p.is_bound and not p.is_terminal]


def gang_marker(pod: Pod) -> tuple[str, str] | None:
    """(system, group name) of the gang a pod belongs to, if any."""
    for where, key, system in GANG_MARKERS:
        source = pod.annotations if where == "annotation" else pod.labels
        value = source.get(key)
        if value:
            if system == "leaderworkerset":
                value = f"{value}-{pod.labels.get('leaderworkerset.sigs.k8s.io/group-index', '0')}"
            return system, value
    return None


def _group_sizes(state: ClusterState) -> dict[tuple[str, str], int]:
    """minMember of every PodGroup, by (namespace, name): one pass, not one per gang."""
    return {(obj.namespace, obj.name): obj.spec.min_member for obj in state.of_kind("PodGroup")
            if isinstance(obj, PodGroup) and obj.spec.min_member}


def _min_from_objects(state: ClusterState, groups: dict[tuple[str, str], int], system: str, ns: str,
                      name: str) -> int | None:
    if (ns, name) in groups:
        return groups[(ns, name)]
    if system == "volcano-job":
        job = state.get("Job", ns, name)
        value = loose(job).int("spec.minAvailable") if isinstance(job, GenericObject) else None
        if value is not None:
            return value
        prefix = name + "-"  # volcano names the group "<job>-<uid>"
        for (group_ns, group), size in groups.items():
            if group_ns == ns and group.startswith(prefix):
                return size
    return None


def find_gangs(state: ClusterState) -> dict[str, Gang]:
    """Every gang of the cluster, keyed by "ns/name" (system-specific names kept as given).

    Found once per state (`ClusterState.derived`) and shared: callers read it, never change it."""
    found = state.derived.get("scheduling.gang")
    if found is None:
        found = state.derived["scheduling.gang"] = _gangs_of(state)
    return found


def _gangs_of(state: ClusterState) -> dict[str, Gang]:
    gangs: dict[str, Gang] = {}
    for pod in state.live_pods:
        marker = gang_marker(pod)
        if marker is None:
            continue
        system, name = marker
        key = f"{pod.namespace}/{name}"
        gang = gangs.get(key)
        if gang is None:
            gang = gangs[key] = Gang(system, pod.namespace, name, 0)
        gang.members.append(pod)
        if system == "kueue":
            total = int_or_none(pod.annotations.get("kueue.x-k8s.io/pod-group-total-count"), lo=1)
            if total is not None:
                gang.min_member = max(gang.min_member, total)
        if system == "leaderworkerset":
            size = int_or_none(pod.annotations.get("leaderworkerset.sigs.k8s.io/size"), lo=1)
            if size is not None:
                gang.min_member = max(gang.min_member, size)
    groups = _group_sizes(state) if gangs else {}
    for gang in gangs.values():
        found = _min_from_objects(state, groups, gang.system, gang.namespace, gang.name)
        if found:
            gang.min_member = found
        if not gang.min_member:
            gang.min_member = len(gang.members)
    return gangs


def reaches_min_member(bound: int, placeable: int, min_member: int) -> bool:
    """The one "can the gang start" rule: running members plus those that fit together reach minMember
    (coscheduling's Permit waits for minMember pods; Volcano's gang plugin the same)."""
    return bound + placeable >= min_member


@dataclass
class GangPlacement:
    """Where the pending members of a gang would go together, and who is left over."""

    placed: dict[str, str]
    unplaced: list[str]
    bound: int
    min_member: int

    @property
    def schedulable(self) -> bool:
        return reaches_min_member(self.bound, len(self.placed), self.min_member)


def place_gang(snapshot, gang: Gang, *, version=None, choose=None) -> GangPlacement:
    """Place the pending members one by one on a copy of the snapshot, fullest feasible node first.

    Packing onto the most-requested node is what a gang scheduler's binpack does and leaves the
    most room for the other members. `choose(pod, feasible) -> node index | None` replaces that
    choice when a caller applies rules of its own on top of the core's (the extender's GPU rules).
    """

    v = version or version_of(snapshot.state.server_version, snapshot.state.k8s_version)
    work = snapshot.copy()
    placed: dict[str, str] = {}
    unplaced: list[str] = []
    for pod in sorted(gang.pending, key=lambda p: p.name):
        info = work.pod_info(pod)
        outcome = run_filters(work, pod, v, info=info)
        feasible = outcome.feasible
        if not len(feasible):
            unplaced.append(pod.key)
            continue
        if choose is not None:
            picked = choose(pod, feasible)
            if picked is None:
                unplaced.append(pod.key)
                continue
            i = int(picked)
        else:
            i = int(feasible[np.argmin(work.gpu_room(info)[feasible])])
        work.assume(info, i)
        placed[pod.key] = work.names[i]
    return GangPlacement(placed, unplaced, len(gang.bound), gang.min_member)
