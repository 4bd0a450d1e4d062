"""Derive every controller's and PDB's status from the pods, stamp IPs and resourceVersions.

Done once, after all objects exist, so that status always agrees with the object graph
(as the controllers of a live cluster would have made it).
"""

from __future__ import annotations

import math
from collections import defaultdict

from kubegpu.sources.demo.builders import ago, hex_token, rfc3339

_TERMINAL = ("Succeeded", "Failed")
RESOURCE_VERSION_BASE = 48213377


def is_ready(pod: dict) -> bool:
    """The pod's Ready condition is True."""
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def _active(pod: dict) -> bool:
    return pod["status"]["phase"] not in _TERMINAL and "deletionTimestamp" not in pod["metadata"]


def _owned(objects: list[dict]) -> dict[str, list[dict]]:
    by_owner: dict[str, list[dict]] = defaultdict(list)
    for o in objects:
        for ref in o["metadata"].get("ownerReferences", []):
            by_owner[ref["uid"]].append(o)
    return by_owner


def _scaled(value: int | str, total: int, *, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    share = total * int(value.rstrip("%")) / 100
    return math.ceil(share) if round_up else math.floor(share)


def _set_replicaset(rs: dict, pods: list[dict]) -> None:
    active = [p for p in pods if _active(p)]
    ready = sum(is_ready(p) for p in active)
    status: dict = {"replicas": len(active), "observedGeneration": rs["metadata"]["generation"]}
    if active:
        status["fullyLabeledReplicas"] = len(active)
    if ready:
        status.update(readyReplicas=ready, availableReplicas=ready)
    rs["status"] = status


def _set_deployment(dep: dict, sets: list[dict]) -> None:
    newest = max(sets, key=lambda rs: int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))
    want = dep["spec"]["replicas"]
    total = sum(rs["status"]["replicas"] for rs in sets)
    ready = sum(rs["status"].get("readyReplicas", 0) for rs in sets)
    available = sum(rs["status"].get("availableReplicas", 0) for rs in sets)
    updated = newest["status"]["replicas"]
    max_unavailable = _scaled(dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], want, round_up=False)
    status: dict = {"observedGeneration": dep["metadata"]["generation"], "replicas": total,
                    "updatedReplicas": updated}
    if ready:
        status["readyReplicas"] = ready
    if available:
        status["availableReplicas"] = available
    if want - available > 0:
        status["unavailableReplicas"] = want - available
    changed = rfc3339(ago(minutes=2))
    ok = available >= want - max_unavailable
    avail = {"type": "Available", "status": "True" if ok else "False", "lastUpdateTime": changed,
             "lastTransitionTime": newest["metadata"]["creationTimestamp"],
             "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
             "message": "Deployment has minimum availability." if ok else
             "Deployment does not have minimum availability."}
    name = newest["metadata"]["name"]
    done = updated == want == available and total == want
    prog = {"type": "Progressing", "status": "True", "lastUpdateTime": changed,
            "lastTransitionTime": newest["metadata"]["creationTimestamp"],
            "reason": "NewReplicaSetAvailable" if done else "ReplicaSetUpdated",
            "message": f'ReplicaSet "{name}" has successfully progressed.' if done else
            f'ReplicaSet "{name}" is progressing.'}
    status["conditions"] = [avail, prog]
    dep["status"] = status


def _set_statefulset(sts: dict, pods: list[dict]) -> None:
    active = [p for p in pods if _active(p)]
    ready = sum(is_ready(p) for p in active)
    revision = active[0]["metadata"]["labels"]["controller-revision-hash"] if active else ""
    status: dict = {"observedGeneration": sts["metadata"]["generation"], "replicas": len(active),
                    "currentReplicas": len(active), "updatedReplicas": len(active),
                    "currentRevision": revision, "updateRevision": revision, "collisionCount": 0,
                    "availableReplicas": ready}
    if ready:
        status["readyReplicas"] = ready
    sts["status"] = status


def _set_daemonset(ds: dict, pods: list[dict]) -> None:
    ready = sum(is_ready(p) for p in pods)
    ds["status"] = {"currentNumberScheduled": len(pods), "desiredNumberScheduled": len(pods),
                    "numberAvailable": ready, "numberMisscheduled": 0, "numberReady": ready,
                    "observedGeneration": ds["metadata"]["generation"], "updatedNumberScheduled": len(pods)}


def _set_job(job: dict, pods: list[dict]) -> None:
    phases = [p["status"]["phase"] for p in pods]
    status: dict = {"startTime": job["metadata"]["creationTimestamp"], "terminating": 0,
                    "uncountedTerminatedPods": {}}
    active = sum(ph not in _TERMINAL for ph in phases)
    if active:
        status["active"] = active
    status["ready"] = sum(is_ready(p) for p in pods)
    if phases.count("Succeeded"):
        status["succeeded"] = phases.count("Succeeded")
    if phases.count("Failed"):
        status["failed"] = phases.count("Failed")
    if job["spec"]["completionMode"] == "Indexed":
        status["completedIndexes"] = ""
    job["status"] = status


def pdb_status(pdb: dict, pods: list[dict], scale_of: dict[str, tuple[str, int]]) -> dict:
    """upstream disruption controller: expected pods, desired healthy, disruptions allowed.

    minAvailable as an integer counts the matching pods; maxUnavailable and percentages use
    the owning controllers' scale. Healthy = Ready and not being deleted.
    """
    selector = pdb["spec"]["selector"]["matchLabels"]
    ns = pdb["metadata"]["namespace"]
    matching = [p for p in pods if p["metadata"]["namespace"] == ns
                and all(p["metadata"].get("labels", {}).get(k) == v for k, v in selector.items())]
    healthy = sum(is_ready(p) and _active(p) for p in matching)
    spec = pdb["spec"]
    if "maxUnavailable" in spec:
        expected = _expected_scale(matching, scale_of)
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    elif isinstance(spec["minAvailable"], int):
        expected, desired = len(matching), spec["minAvailable"]
    else:
        expected = _expected_scale(matching, scale_of)
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    allowed = max(0, healthy - desired)
    return {"currentHealthy": healthy, "desiredHealthy": desired, "disruptionsAllowed": allowed,
            "expectedPods": expected, "observedGeneration": pdb["metadata"]["generation"],
            "conditions": [{"type": "DisruptionAllowed", "status": "True" if allowed else "False",
                            "reason": "SufficientPods" if allowed else "InsufficientPods", "message": "",
                            "lastTransitionTime": rfc3339(ago(minutes=14)),
                            "observedGeneration": pdb["metadata"]["generation"]}]}


def _expected_scale(pods: list[dict], scale_of: dict[str, tuple[str, int]]) -> int:
    # scale_of maps a pod's direct controller to (scaled object, scale): a ReplicaSet to its Deployment
    scaled = {scale_of[ref["uid"]] for p in pods for ref in p["metadata"].get("ownerReferences", [])
              if ref["uid"] in scale_of}
    return sum(scale for _, scale in scaled)


def _stamp_ips(objects: list[dict], nodes: dict[str, dict]) -> None:
    index = {name: i for i, name in enumerate(nodes)}
    counters: dict[str, int] = defaultdict(int)
    for pod in (o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")):
        node = pod["spec"]["nodeName"]
        host_ip = next(a["address"] for a in nodes[node]["status"]["addresses"] if a["type"] == "InternalIP")
        pod["status"].update(hostIP=host_ip, hostIPs=[{"ip": host_ip}])
        states = [next(iter(c["state"])) for c in pod["status"].get("containerStatuses", [])]
        if pod["spec"].get("hostNetwork"):
            ip = host_ip
        elif any(s in ("running", "terminated") for s in states):
            counters[node] += 1
            ip = f"10.0.{64 + index[node]}.{10 + counters[node]}"
        else:
            continue
        pod["status"].update(podIP=ip, podIPs=[{"ip": ip}])


def _stamp_images(objects: list[dict], nodes: dict[str, dict]) -> None:
    images: dict[str, set[str]] = defaultdict(set)
    for pod in (o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")):
        for cs in pod["status"].get("containerStatuses", []):
            if cs.get("imageID"):
                images[pod["spec"]["nodeName"]].add((cs["imageID"], cs["image"]))
    for name, node in nodes.items():
        entries = [{"names": sorted(pair), "sizeBytes": 20_000_000 + int(hex_token(pair[1], 7), 16) * 32}
                   for pair in sorted(images[name])]
        pause = "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/pause:3.10"
        entries.append({"names": [pause], "sizeBytes": 299_613})
        node["status"]["images"] = sorted(entries, key=lambda e: -e["sizeBytes"])


def finalize(objects: list[dict]) -> list[dict]:
    """Fill the derived fields of `objects` in place and return them."""
    nodes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Node"}
    _stamp_ips(objects, nodes)
    _stamp_images(objects, nodes)
    owned = _owned(objects)
    pods = [o for o in objects if o["kind"] == "Pod"]
    scale_of: dict[str, tuple[str, int]] = {}
    for o in objects:
        kind, uid = o["kind"], o["metadata"].get("uid", "")
        if kind == "ReplicaSet":
            _set_replicaset(o, owned[uid])
        elif kind == "StatefulSet":
            _set_statefulset(o, owned[uid])
            scale_of[uid] = (uid, o["spec"]["replicas"])
        elif kind == "DaemonSet":
            _set_daemonset(o, owned[uid])
        elif kind == "Job":
            _set_job(o, owned[uid])
    for o in objects:
        if o["kind"] == "Deployment":
            sets = [rs for rs in owned[o["metadata"]["uid"]] if rs["kind"] == "ReplicaSet"]
            _set_deployment(o, sets)
            scale_of.update({rs["metadata"]["uid"]: (o["metadata"]["uid"], o["spec"]["replicas"]) for rs in sets})
        elif o["kind"] == "PodDisruptionBudget":
            o["status"] = pdb_status(o, pods, scale_of)
    for i, o in enumerate(objects):
        if "uid" in o["metadata"]:  # API objects only, not kubegpu's own SnapshotInfo
            o["metadata"]["resourceVersion"] = str(RESOURCE_VERSION_BASE + 7 * i)
    return objects
