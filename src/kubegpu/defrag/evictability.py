"""Which pods a defrag plan may move: every safety rule, in one place.

The planner proposes moves; these rules decide which pods it may even propose. They follow what
the tools that already evict pods agree on (descheduler's DefaultEvictor, Cluster Autoscaler's
drain rules, Karpenter's blockers): only pods whose controller recreates them, never DaemonSet or
mirror pods, never pods with node-local data unless allowed, never pods annotated as not safe to
evict, never system-critical pods. Rules that depend on the plan (the gang rule, the priority of
the pod the plan makes room for, PDB budgets) are here too, so every strategy shares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.workload_class import DISTRIBUTED_KINDS

# Controller kinds that recreate an evicted pod (a Deployment's pods are owned by its ReplicaSet).
RECREATING_CONTROLLERS = frozenset({"ReplicaSet", "ReplicationController", "StatefulSet", "Job"}) | DISTRIBUTED_KINDS
DAEMONSET = "DaemonSet"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CA_SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
CA_SAFE_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
KARPENTER_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# upstream descheduler DefaultEvictor: priorityThreshold defaults to system-cluster-critical
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000

# Reason texts: the user-visible contract of "why this pod stays where it is".
R_BARE = "bare pod: no controller would recreate it"
R_DAEMONSET = "DaemonSet pod: it belongs to its node"
R_MIRROR = "mirror (static) pod: managed by the kubelet of its node"
R_CONTROLLER = "owner {kind}/{name} is not a controller known to recreate its pods"
R_SAFE_TO_EVICT = f'annotated {CA_SAFE_TO_EVICT}: "false"'
R_DO_NOT_DISRUPT = f'annotated {KARPENTER_DO_NOT_DISRUPT}: "{{value}}"'
R_LOCAL_DATA = "local data in {kind} volume(s) {names} would be lost (allow with --allow-local-storage)"
R_CRITICAL = "system-critical priority {priority}"
R_TERMINATING = "already terminating"
R_NOT_RUNNING = "not running (phase {phase})"
R_PRIORITY = "priority {priority} is higher than the pod the plan makes room for ({beneficiary})"
R_GANG = "member of gang {gang}: {why}"
R_OUTSIDE = "namespace {ns} is outside -n {only}"
R_MULTI_PDB = "matched by {n} PodDisruptionBudgets ({names}); the Eviction API refuses such pods"


@dataclass(frozen=True)
class Evictability:
    """A pod's standing: movable, or the reasons it must stay."""

    pod: str
    node: str
    movable: bool
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvictionPolicy:
    """Knobs an operator may turn; the defaults are the conservative ones."""

    allow_local_storage: bool = False
    namespaces: frozenset[str] | None = None   # -n NS: only these namespaces' pods may move (None: all)

    def to_builtins(self) -> dict:
        """As the journal records it (the executor re-applies the same policy on --resume)."""
        return {"allow_local_storage": self.allow_local_storage,
                "namespaces": sorted(self.namespaces) if self.namespaces is not None else None}

    @classmethod
    def from_builtins(cls, data: dict) -> "EvictionPolicy":
        ns = data.get("namespaces")
        return cls(allow_local_storage=bool(data.get("allow_local_storage", False)),
                   namespaces=frozenset(str(n) for n in ns) if isinstance(ns, list) else None)


def _local_volumes(pod: Pod) -> tuple[str, list[str]] | None:
    """(kind, names) of volumes whose data lives on the node and dies with the pod.

    upstream cluster-autoscaler (drain isLocalVolume): hostPath, and emptyDir unless its medium is
    Memory (a tmpfs such as /dev/shm holds scratch, not data); the annotation
    safe-to-evict-local-volumes lists emptyDir volumes the owner accepts to lose.
    """
    accepted = {v.strip() for v in pod.annotations.get(CA_SAFE_LOCAL_VOLUMES, "").split(",") if v.strip()}
    empty = [v.name for v in pod.spec.volumes if v.empty_dir is not None and v.name not in accepted
             and (v.empty_dir or {}).get("medium") != "Memory"]
    host = [v.name for v in pod.spec.volumes if v.host_path is not None]
    if empty:
        return "emptyDir", empty
    if host:
        return "hostPath", host
    return None


def static_reasons(state: ClusterState, pod: Pod, policy: EvictionPolicy = EvictionPolicy()) -> list[str]:
    """Why a bound pod may not be evicted at all, whatever the plan (empty list = evictable)."""
    reasons: list[str] = []
    if policy.namespaces is not None and pod.namespace not in policy.namespaces:
        reasons.append(R_OUTSIDE.format(ns=pod.namespace, only=", ".join(sorted(policy.namespaces))))
    if pod.metadata.deletion_timestamp is not None:
        reasons.append(R_TERMINATING)
    elif pod.status.phase not in ("Running", "Pending", None):
        reasons.append(R_NOT_RUNNING.format(phase=pod.status.phase))
    if MIRROR_ANNOTATION in pod.annotations:
        reasons.append(R_MIRROR)
    ref = pod.controller
    if ref is None:
        if MIRROR_ANNOTATION not in pod.annotations:
            reasons.append(R_BARE)
    elif ref.kind == DAEMONSET:
        reasons.append(R_DAEMONSET)
    elif ref.kind not in RECREATING_CONTROLLERS:
        reasons.append(R_CONTROLLER.format(kind=ref.kind, name=ref.name))
    ann = pod.annotations
    if ann.get(CA_SAFE_TO_EVICT, "").strip().lower() == "false":
        reasons.append(R_SAFE_TO_EVICT)
    dnd = ann.get(KARPENTER_DO_NOT_DISRUPT)
    if dnd is not None and dnd.strip().lower() not in ("false", ""):
        # "true", or (newer Karpenter) a duration during which the pod must not be disrupted
        reasons.append(R_DO_NOT_DISRUPT.format(value=dnd))
    safe_true = ann.get(CA_SAFE_TO_EVICT, "").strip().lower() == "true"
    local = _local_volumes(pod)
    if local and not policy.allow_local_storage and not safe_true:
        reasons.append(R_LOCAL_DATA.format(kind=local[0], names=", ".join(local[1])))
    priority = state.priority_of(pod)
    if priority >= SYSTEM_CRITICAL_PRIORITY:
        reasons.append(R_CRITICAL.format(priority=priority))
    pdbs = state.pdbs_for(pod)
    if len(pdbs) > 1:
        reasons.append(R_MULTI_PDB.format(n=len(pdbs), names=", ".join(sorted(p.name for p in pdbs))))
    return reasons


def priority_reason(state: ClusterState, pod: Pod, beneficiary_priority: int | None) -> str | None:
    """Pods of higher priority than the beneficiary are never moved for it."""
    if beneficiary_priority is None:
        return None
    priority = state.priority_of(pod)
    if priority > beneficiary_priority:
        return R_PRIORITY.format(priority=priority, beneficiary=beneficiary_priority)
    return None


def gang_reason(gang: str, member_reasons: dict[str, Sequence[str]]) -> str | None:
    """A gang moves whole or not at all: one member that must stay pins every member."""
    blocked = {k: r for k, r in member_reasons.items() if r}
    if not blocked:
        return None
    key, reasons = sorted(blocked.items())[0]
    more = f" (and {len(blocked) - 1} more)" if len(blocked) > 1 else ""
    return R_GANG.format(gang=gang, why=f"{key} cannot move: {reasons[0]}{more}")


def classify(state: ClusterState, pods: Iterable[Pod], *, gangs: dict[str, str] | None = None,
             beneficiary_priority: int | None = None, policy: EvictionPolicy = EvictionPolicy(),
             budget_reason: Callable[[Pod], str | None] | None = None) -> dict[str, Evictability]:
    """Every bound, non-terminal pod's standing, with the gang and priority rules applied.

    `gangs` maps pod key -> gang name for pods that belong to a running gang; `budget_reason`
    says why a pod's PDB forbids evicting it at all (budget.BudgetLedger.exhausted_reason).
    """
    gangs = gangs or {}
    own: dict[str, list[str]] = {}
    nodes: dict[str, str] = {}
    for pod in pods:
        if not pod.spec.node_name or pod.is_terminal:
            continue
        reasons = static_reasons(state, pod, policy)
        pr = priority_reason(state, pod, beneficiary_priority)
        if pr:
            reasons.append(pr)
        br = budget_reason(pod) if budget_reason is not None and not reasons else None
        if br:
            reasons.append(br)
        own[pod.key] = reasons
        nodes[pod.key] = pod.spec.node_name
    members: dict[str, dict[str, list[str]]] = {}
    for key, gang in gangs.items():
        if key in own:
            members.setdefault(gang, {})[key] = own[key]
    out: dict[str, Evictability] = {}
    for key, reasons in own.items():
        gang = gangs.get(key)
        final = list(reasons)
        if gang is not None and not reasons:
            gr = gang_reason(gang, members[gang])
            if gr:
                final.append(gr)
        out[key] = Evictability(pod=key, node=nodes[key], movable=not final, reasons=tuple(final))
    return out
