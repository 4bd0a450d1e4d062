"""Placeholder pods: hold a move's destination before the pod is evicted (reserve, then move).

The cluster-autoscaler "overprovisioning" pattern: a pause pod of the lowest priority class holds
the room; when the moved pod's replacement finds no other room, kube-scheduler's DefaultPreemption
picks the node whose victims have the lowest priority (pickOneNodeForPreemption), i.e. the
placeholder's node, and deletes it; and a placeholder never preempts anything itself
(`preemptionPolicy: Never` on its class, and nothing has a lower priority).

Pinning: required node affinity on `kubernetes.io/hostname`, not `spec.nodeName`. A nodeName pod
skips the scheduler: the kubelet admits it or fails it (OutOf<resource>), it ignores taints the
scheduler would honour, and a pod that does not fit is Failed rather than Pending. With affinity
the same scheduler (the moved pod's schedulerName) checks every filter, a placeholder that does not
fit stays Pending (and the round stops before any eviction), and the scheduler's cache holds it
like any pod, which is what makes the replacement preempt it.

A placeholder carries the moved pod's effective requests (limits equal for extended resources, as
the API requires), its tolerations and schedulerName; labels say it is kubegpu's and which run made
it; when kubegpu runs in a pod, that pod owns it, so the garbage collector removes it with its maker.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

import msgspec

from kubegpu.defrag.plan import Move
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import Pod
from kubegpu.model.quantity import is_extended_resource
from kubegpu.rebalance.api import micro_time

MANAGED_BY = "app.kubernetes.io/managed-by"
COMPONENT = "app.kubernetes.io/component"
RUN_LABEL = "kubegpu.io/rebalance-run"
RESERVED_FOR = "kubegpu.io/reserved-for"
RESERVED_UNTIL = "kubegpu.io/reserved-until"
COMPONENT_VALUE = "rebalance-placeholder"
PLACEHOLDER_CLASS = "kubegpu-placeholder"
PLACEHOLDER_PRIORITY = -1_000_000      # below cluster-autoscaler's expendable cutoff (-10): never a scale-up
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
HOSTNAME = "kubernetes.io/hostname"


def selector() -> dict[str, str]:
    """The labels every placeholder of kubegpu carries (how leftovers are found)."""
    return {MANAGED_BY: "kubegpu", COMPONENT: COMPONENT_VALUE}


@dataclass(frozen=True)
class Owner:
    """The pod kubegpu runs in (downward API), which owns its placeholders."""

    name: str
    uid: str


@dataclass(frozen=True)
class Reservation:
    """One placeholder: where, for which move, until when."""

    name: str
    namespace: str
    node: str
    pod: str                  # the moved pod (ns/name)
    uid: str                  # the moved pod's uid
    step: int
    requests: dict[str, str]
    expires_at: datetime

    def to_builtins(self) -> dict:
        return {"name": self.name, "namespace": self.namespace, "node": self.node, "pod": self.pod,
                "uid": self.uid, "step": self.step, "requests": dict(self.requests),
                "expires_at": micro_time(self.expires_at)}


def placeholder_name(run_id: str, move: Move) -> str:
    """Stable per run and move, so a journal can name it before it exists (a DNS-1123 label)."""
    digest = hashlib.sha256(f"{run_id}/{move.uid}/{move.to}".encode()).hexdigest()[:10]
    return f"kubegpu-hold-{move.step}-{digest}"


def _quantity(resource: str, amount: int) -> str:
    """An exact quantity string for a scheduler amount (cpu in milli)."""
    return f"{amount}m" if resource == "cpu" else str(amount)


def plan_reservation(state: ClusterState, move: Move, *, run_id: str, namespace: str, now: datetime,
                     ttl_s: float) -> Reservation:
    ns, _, name = move.pod.partition("/")
    pod = state.pod(ns, name)
    requests = {} if pod is None else {r: _quantity(r, a) for r, a in sorted(state.pod_requests(pod).items())
                                       if r != "pods"}
    return Reservation(name=placeholder_name(run_id, move), namespace=namespace, node=move.to, pod=move.pod,
                       uid=move.uid, step=move.step, requests=requests,
                       expires_at=now + timedelta(seconds=ttl_s))


def placeholder_body(res: Reservation, moved: Pod | None, *, run_id: str, owner: Owner | None = None) -> dict:
    """The placeholder pod (v1 JSON) for `res`; `moved` is the pod it holds room for."""
    limits = {r: q for r, q in res.requests.items() if is_extended_resource(r)}
    tolerations = [msgspec.to_builtins(t) for t in (moved.spec.tolerations if moved is not None else [])]
    meta: dict = {
        "name": res.name, "namespace": res.namespace,
        "labels": {**selector(), RUN_LABEL: run_id},
        "annotations": {RESERVED_FOR: res.pod, RESERVED_UNTIL: micro_time(res.expires_at),
                        "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
    }
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner.name, "uid": owner.uid,
                                    "controller": False, "blockOwnerDeletion": False}]
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [res.node]}]}
    spec: dict = {
        "priorityClassName": PLACEHOLDER_CLASS,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                      {"nodeSelectorTerms": [term]}}},
        "tolerations": tolerations,
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Always",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65535, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "hold", "image": PAUSE_IMAGE,
            "resources": {"requests": dict(res.requests), **({"limits": limits} if limits else {})},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if moved is not None and moved.spec.scheduler_name:
        spec["schedulerName"] = moved.spec.scheduler_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def placed_on(body: dict | None) -> str | None:
    """The node a placeholder is bound to (None: pending, gone or terminating)."""
    if body is None or (body.get("metadata") or {}).get("deletionTimestamp"):
        return None
    return (body.get("spec") or {}).get("nodeName") or None
