"""How far a node is from taking the pod, in plain words ("needs 4 nvidia.com/gpu; node gpu-03
has 1 free of 8, held by train-7, train-9")."""

from __future__ import annotations

from kubegpu.model.quantity import format_amount
from kubegpu.scheduling.filters.tainttoleration import FILTER_EFFECTS, first_untolerated
from kubegpu.scheduling.framework import Status
from kubegpu.scheduling.snapshot import NodeView, PodInfo, SchedulingSnapshot

MAX_HOLDERS = 4


def _holders(view: NodeView, i: int, column: int) -> str:
    pods = sorted(((info.vector[column], info.pod.name) for info in view.infos_on(i) if info.vector[column]),
                  reverse=True)
    names = [name for _, name in pods[:MAX_HOLDERS]]
    more = len(pods) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def resource_distance(snap: SchedulingSnapshot, view: NodeView, info: PodInfo, i: int) -> list[str]:
    """One phrase per short resource on node i."""
    out = []
    node = snap.names[i]
    if view.pod_count[i] + 1 > snap.allowed_pods[i]:
        out.append(f"node {node} already runs {int(view.pod_count[i])} pods, its limit is {int(snap.allowed_pods[i])}")
    for j, need in enumerate(info.vector.tolist()):
        if not need:
            continue
        alloc = int(snap.alloc[i, j])
        free = alloc - int(view.requested[i, j])
        if need <= free:
            continue
        r = snap.resources[j]
        phrase = (f"needs {format_amount(r, need)} {r}; node {node} has {format_amount(r, max(free, 0))} free of "
                  f"{format_amount(r, alloc)}")
        if alloc == 0:
            phrase = f"needs {format_amount(r, need)} {r}; node {node} has none"
        elif need > alloc:
            phrase += " (more than the whole node)"
        else:
            holders = _holders(view, i, j)
            if holders:
                phrase += f", held by {holders}"
        out.append(phrase)
    for r, need in sorted(info.extra.items()):
        out.append(f"needs {need} {r}; no node offers {r}")
    return out


def taint_distance(snap: SchedulingSnapshot, info: PodInfo, i: int) -> list[str]:
    taint = first_untolerated(snap.nodes[i].spec.taints, info.pod.spec.tolerations, FILTER_EFFECTS)
    if taint is None:
        return []
    return [f"taint {taint.text} is not tolerated"]


def affinity_distance(snap: SchedulingSnapshot, info: PodInfo, i: int) -> list[str]:
    labels = snap.nodes[i].metadata.labels
    out = []
    for k, v in info.pod.spec.node_selector.items():
        have = labels.get(k)
        if have != v:
            out.append(f"nodeSelector {k}={v}, node has " + (f"{k}={have}" if have is not None else f"no {k} label"))
    if not out:
        out.append("required node affinity terms match no label set of this node")
    return out


def describe(snap: SchedulingSnapshot, view: NodeView, info: PodInfo, i: int, status: Status) -> list[str]:
    """Plain-words detail for one failing filter on node i."""
    if status.plugin == "NodeResourcesFit":
        return resource_distance(snap, view, info, i)
    if status.plugin == "TaintToleration":
        return taint_distance(snap, info, i)
    if status.plugin == "NodeAffinity":
        return affinity_distance(snap, info, i)
    if status.plugin == "NodeUnschedulable":
        return [f"node {snap.names[i]} is cordoned (spec.unschedulable)"]
    return list(status.reasons)
