"""Pods as a live cluster returns them: admission defaults, kubelet status, five life states.

A pod is built from its controller's template so that spec and template never drift;
IPs are stamped later (`status.finalize`) once every pod of a node is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

from kubegpu.sources.demo.builders import (
    DEFAULT_TOLERATIONS,
    clone,
    condition,
    hex_token,
    meta,
    qos_class,
    rfc3339,
    safe_token,
)

SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


class PodState(Enum):
    """Where a pod is in its life, from the scheduler's and the kubelet's view."""

    RUNNING = "Running"                      # bound, containers running and ready
    CONTAINER_CREATING = "ContainerCreating"  # bound (holds its GPUs), volumes not mounted yet
    UNSCHEDULABLE = "Unschedulable"          # no node: PodScheduled=False
    SUCCEEDED = "Succeeded"                  # ran to completion, still listed on its node
    FAILED = "Failed"                        # terminated with an error, still listed on its node


@dataclass(frozen=True)
class PodPlacement:
    """One pod of a workload: its node, its state and when it started."""

    node: str | None
    state: PodState = PodState.RUNNING
    started: datetime | None = None
    annotations: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    unschedulable_message: str = ""


PRIORITY_VALUES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
    "inference-high": 1000000,
    "research-interactive": 10000,
    "training-low": 1000,
}


def _normalised_image(image: str) -> str:
    """The fully qualified image name the kubelet reports in containerStatuses."""
    first = image.split("/")[0]
    if "/" not in image:
        return f"docker.io/library/{image}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{image}"
    return image


def _image_id(image: str) -> str:
    repo = _normalised_image(image).rsplit(":", 1)[0]
    return f"{repo}@sha256:{hex_token('digest/' + image, 64)}"


def _api_access_volume(pod_name: str) -> tuple[dict, dict]:
    name = f"kube-api-access-{safe_token('sa/' + pod_name)}"
    volume = {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}
    mount = {"name": name, "readOnly": True, "mountPath": SA_MOUNT_PATH}
    return volume, mount


def _container_status(c: dict, pod_name: str, state: PodState, started: datetime) -> dict:
    base = {"name": c["name"], "image": _normalised_image(c["image"]), "lastState": {},
            "restartCount": 0}
    cid = f"containerd://{hex_token('ctr/' + pod_name + '/' + c['name'], 64)}"
    if state is PodState.CONTAINER_CREATING:
        return {**base, "imageID": "", "ready": False, "started": False,
                "state": {"waiting": {"reason": "ContainerCreating"}}}
    base.update(imageID=_image_id(c["image"]), containerID=cid)
    if state is PodState.RUNNING:
        return {**base, "ready": True, "started": True,
                "state": {"running": {"startedAt": rfc3339(started + timedelta(seconds=4))}}}
    ok = state is PodState.SUCCEEDED
    return {**base, "ready": False, "started": False, "state": {"terminated": {
        "exitCode": 0 if ok else 137, "reason": "Completed" if ok else "OOMKilled",
        "startedAt": rfc3339(started + timedelta(seconds=4)),
        "finishedAt": rfc3339(started + timedelta(minutes=41)),
        "containerID": cid}}}


def _pod_status(spec: dict, name: str, p: PodPlacement, created: datetime) -> dict:
    qos = qos_class(spec["containers"])
    if p.state is PodState.UNSCHEDULABLE:
        return {"phase": "Pending", "qosClass": qos, "conditions": [
            condition("PodScheduled", False, created + timedelta(seconds=1), reason="Unschedulable",
                      message=p.unschedulable_message)]}
    start = p.started or created
    names = [c["name"] for c in spec["containers"]]
    statuses = [_container_status(c, name, p.state, start) for c in spec["containers"]]
    t0 = start + timedelta(seconds=3)
    if p.state is PodState.RUNNING:
        conds = [condition("PodReadyToStartContainers", True, t0), condition("Initialized", True, start),
                 condition("Ready", True, start + timedelta(seconds=95)),
                 condition("ContainersReady", True, start + timedelta(seconds=95))]
        phase = "Running"
    elif p.state is PodState.CONTAINER_CREATING:
        msg = f"containers with unready status: [{' '.join(names)}]"
        conds = [condition("PodReadyToStartContainers", False, start), condition("Initialized", True, start),
                 condition("Ready", False, start, reason="ContainersNotReady", message=msg),
                 condition("ContainersReady", False, start, reason="ContainersNotReady", message=msg)]
        phase = "Pending"
    else:
        done = start + timedelta(minutes=41)
        why = "PodCompleted" if p.state is PodState.SUCCEEDED else "PodFailed"
        conds = [condition("PodReadyToStartContainers", False, done),
                 condition("Initialized", True, start, reason="PodCompleted" if why == "PodCompleted" else None),
                 condition("Ready", False, done, reason=why), condition("ContainersReady", False, done, reason=why)]
        phase = p.state.value
    conds.append(condition("PodScheduled", True, created + timedelta(seconds=1)))
    return {"phase": phase, "conditions": conds, "containerStatuses": statuses, "qosClass": qos,
            "startTime": rfc3339(start)}


def build_pod(template: dict, *, name: str, namespace: str, owner: dict | None,
              placement: PodPlacement, created: datetime, extra_labels: dict | None = None,
              hostname: str | None = None, subdomain: str | None = None) -> dict:
    """A pod made from `template` by its controller, admitted and (maybe) bound and started."""
    spec = clone(template["spec"])
    labels = {**template["metadata"].get("labels", {}), **(extra_labels or {}), **placement.labels}
    annotations = {**template["metadata"].get("annotations", {}), **placement.annotations}
    volume, mount = _api_access_volume(name)
    spec["volumes"] = [*spec.get("volumes", []), volume]
    for c in spec["containers"]:
        c["volumeMounts"] = [*c.get("volumeMounts", []), mount]
    tolerations = spec.get("tolerations", [])
    if not any(t.get("operator") == "Exists" and "key" not in t for t in tolerations):
        known = {(t.get("key"), t.get("effect")) for t in tolerations}
        tolerations = [*tolerations, *(t for t in DEFAULT_TOLERATIONS
                                       if (t["key"], t["effect"]) not in known)]
    spec["tolerations"] = clone(tolerations)
    pc = spec.get("priorityClassName")
    spec["priority"] = PRIORITY_VALUES.get(pc, 0) if pc else 0
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("serviceAccountName", "default")
    spec["serviceAccount"] = spec["serviceAccountName"]
    spec["enableServiceLinks"] = True
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    if placement.node and placement.state is not PodState.UNSCHEDULABLE:
        spec["nodeName"] = placement.node
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": meta("Pod", name, namespace, created=created, labels=labels,
                            annotations=annotations or None, owner=owner),
           "spec": spec}
    pod["status"] = _pod_status(spec, name, placement, created)
    return pod


def daemonset_pods(ds: dict, nodes: list[dict], *, started: datetime) -> list[dict]:
    """One pod per node the DaemonSet's nodeSelector and tolerations admit, pinned by matchFields."""
    template = ds["spec"]["template"]
    selector = template["spec"].get("nodeSelector", {})
    tolerations = template["spec"].get("tolerations", [])
    tolerate_all = any(t.get("operator") == "Exists" and "key" not in t for t in tolerations)
    tolerated = {t.get("key") for t in tolerations}
    out = []
    for node in nodes:
        labels = node["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in selector.items()):
            continue
        taints = node["spec"].get("taints", [])
        if not tolerate_all and any(t["key"] not in tolerated for t in taints
                                    if t["effect"] in ("NoSchedule", "NoExecute")):
            continue
        node_name = node["metadata"]["name"]
        name = f"{ds['metadata']['name']}-{safe_token(ds['metadata']['name'] + '/' + node_name)}"
        t = clone(template)
        t["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
        # upstream daemon controller adds these so DaemonSet pods survive node conditions
        t["spec"]["tolerations"] = tolerations + [
            {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": e}
            for k, e in (("not-ready", "NoExecute"), ("unreachable", "NoExecute"),
                         ("disk-pressure", "NoSchedule"), ("memory-pressure", "NoSchedule"),
                         ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule"))
            if not tolerate_all]
        extra = {"controller-revision-hash": safe_token("rev/" + ds["metadata"]["name"], 10),
                 "pod-template-generation": str(ds["metadata"].get("generation", 1))}
        out.append(build_pod(t, name=name, namespace=ds["metadata"]["namespace"], owner=ds,
                             placement=PodPlacement(node_name, started=started), created=started,
                             extra_labels=extra))
    return out
