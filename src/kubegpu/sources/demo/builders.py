"""Small factories for v1 objects in the exact wire shape an API server returns.

Everything is derived from names and one fixed clock, so two calls give byte-identical
objects: uids are uuid5 of "Kind/namespace/name", generated name suffixes are hashes of
the owner and an index, timestamps are offsets before `NOW`.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
_UID_NAMESPACE = uuid.UUID("6b1f3c2e-9a41-5d7e-8c3b-2f0e4a7d9c15")
# upstream rand.SafeEncodeString alphabet: no vowels, no 0/1/3 (avoids words and look-alikes)
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)


_ENCODER = msgspec.json.Encoder()


def clone(value: Any) -> Any:
    """A deep copy of plain JSON data (several times faster than copy.deepcopy)."""
    return msgspec.json.decode(_ENCODER.encode(value))


def ago(*, days: float = 0, hours: float = 0, minutes: float = 0, seconds: float = 0) -> datetime:
    """A moment before the demo's fixed now."""
    return NOW - timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def rfc3339(moment: datetime) -> str:
    """Seconds-precision timestamp as metav1.Time serialises it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime) -> str:
    """Microsecond timestamp as metav1.MicroTime serialises it (events.k8s.io eventTime)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def uid_for(kind: str, namespace: str | None, name: str) -> str:
    """A stable uid for an object: the same object gets the same uid in every variant."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace or ''}/{name}"))


def safe_token(seed: str, length: int = 5) -> str:
    """A generated-name suffix in upstream's alphabet, derived from `seed`."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SAFE_ALPHABET[b % len(_SAFE_ALPHABET)] for b in digest[:length])


def hex_token(seed: str, length: int) -> str:
    """Lower-case hex derived from `seed` (machine ids, instance ids, image digests)."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def meta(kind: str, name: str, namespace: str | None = None, *, created: datetime,
         labels: dict | None = None, annotations: dict | None = None,
         owner: dict | None = None, generation: int | None = None,
         finalizers: list[str] | None = None) -> dict:
    """ObjectMeta as the API server returns it (resourceVersion is stamped at the end)."""
    out: dict = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out["uid"] = uid_for(kind, namespace, name)
    out["creationTimestamp"] = rfc3339(created)
    if generation is not None:
        out["generation"] = generation
    if labels:
        out["labels"] = dict(labels)
    if annotations:
        out["annotations"] = dict(annotations)
    if owner is not None:
        out["ownerReferences"] = [controller_ref(owner)]
    if finalizers:
        out["finalizers"] = list(finalizers)
    return out


def obj(api_version: str, kind: str, name: str, namespace: str | None = None, *,
        created: datetime, **meta_kw) -> dict:
    """The apiVersion/kind/metadata skeleton of any object."""
    return {"apiVersion": api_version, "kind": kind,
            "metadata": meta(kind, name, namespace, created=created, **meta_kw)}


def controller_ref(owner: dict) -> dict:
    """An ownerReference with controller: true, as controllers set it."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def resources(*, cpu: str, memory: str, gpu: int = 0, cpu_limit: str | None = None,
              memory_limit: str | None = None, extra: dict | None = None) -> dict:
    """Container resources: GPUs (and other extended resources) with requests == limits."""
    requests = {"cpu": cpu, "memory": memory}
    limits: dict = {}
    if cpu_limit:
        limits["cpu"] = cpu_limit
    if memory_limit:
        limits["memory"] = memory_limit
    scalar = dict(extra or {})
    if gpu:
        scalar[GPU] = str(gpu)
    requests.update(scalar)
    limits.update(scalar)
    return {"limits": limits, "requests": requests} if limits else {"requests": requests}


def container(name: str, image: str, *, res: dict, env: dict | list | None = None,
              args: list[str] | None = None, command: list[str] | None = None,
              ports: list[dict] | None = None, mounts: list[dict] | None = None,
              security: dict | None = None, probe_port: int | None = None) -> dict:
    """A container with the defaults the API server fills in."""
    out: dict = {"name": name, "image": image}
    if command:
        out["command"] = list(command)
    if args:
        out["args"] = list(args)
    if env:
        out["env"] = ([{"name": k, "value": str(v)} for k, v in env.items()]
                      if isinstance(env, dict) else list(env))
    if ports:
        out["ports"] = [{"protocol": "TCP", **p} for p in ports]
    if probe_port is not None:
        out["readinessProbe"] = {"httpGet": {"path": "/health", "port": probe_port, "scheme": "HTTP"},
                                 "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1,
                                 "failureThreshold": 3}
    out["resources"] = res
    if security:
        out["securityContext"] = security
    out["terminationMessagePath"] = "/dev/termination-log"
    out["terminationMessagePolicy"] = "File"
    out["imagePullPolicy"] = "IfNotPresent"
    out["volumeMounts"] = list(mounts or [])
    return out


def pod_template(labels: dict, containers: list[dict], *, annotations: dict | None = None,
                 **spec_kw) -> dict:
    """A PodTemplateSpec; `spec_kw` are extra PodSpec fields (tolerations, volumes, ...)."""
    spec = {"containers": containers, "restartPolicy": spec_kw.pop("restartPolicy", "Always"),
            "terminationGracePeriodSeconds": spec_kw.pop("terminationGracePeriodSeconds", 30),
            "dnsPolicy": spec_kw.pop("dnsPolicy", "ClusterFirst"),
            "securityContext": spec_kw.pop("securityContext", {}),
            "schedulerName": "default-scheduler"}
    spec.update(spec_kw)
    md: dict = {"labels": dict(labels)}
    if annotations:
        md["annotations"] = dict(annotations)
    return {"metadata": md, "spec": spec}


def qos_class(containers: list[dict]) -> str:
    """Upstream GetPodQOS for cpu/memory (extended resources do not count)."""
    requested = limited = 0
    guaranteed = True
    for c in containers:
        req = c.get("resources", {}).get("requests", {})
        lim = c.get("resources", {}).get("limits", {})
        for r in ("cpu", "memory"):
            requested += r in req
            limited += r in lim
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not requested and not limited:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def condition(ctype: str, status: bool, at: datetime, *, reason: str | None = None,
              message: str | None = None, probe: bool = True) -> dict:
    """A status condition; pod conditions carry lastProbeTime: null, others do not."""
    out: dict = {"type": ctype, "status": "True" if status else "False"}
    if probe:
        out["lastProbeTime"] = None
    out["lastTransitionTime"] = rfc3339(at)
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out
