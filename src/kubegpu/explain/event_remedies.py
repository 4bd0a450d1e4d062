"""Remedies that follow from a FailedScheduling message alone (`why --event`): no cluster read.

Each reason of the histogram names its filter (the catalog in scheduling.message); the filter
says what kind of change would help. These are directions, not checked plans: the cluster is
not known, so nothing here says a change is enough. Ordered by size of change, as `why` orders.
"""

from __future__ import annotations

from kubegpu.model.text import counted
from kubegpu.scheduling.message import ParsedEvent

# plugin -> (kind, cost, what to change); cost uses the scale of explain.remedies
_BY_PLUGIN: dict[str, tuple[str, int, str]] = {
    "TaintToleration": ("add-toleration", 1, "add a toleration for the taint named in the reason, or use other nodes"),
    "NodeAffinity": ("relax-selector", 2, "relax the nodeSelector / required node affinity, or label nodes to match"),
    "NodeName": ("relax-selector", 2, "drop spec.nodeName or point it at an existing node"),
    "NodePorts": ("free-host-port", 3, "drop the hostPort or move the pod that holds it"),
    "NodeResourcesFit": ("move-pods", 3, "make room: move or preempt pods on a node, ask for less, or add a node"),
    "InterPodAffinity": ("relax-affinity", 2, "relax the required pod (anti-)affinity, or move the pods it matches"),
    "PodTopologySpread": ("relax-spread", 2, "raise maxSkew, use whenUnsatisfiable: ScheduleAnyway, or add domains"),
    "VolumeBinding": ("fix-volume", 2, "bind the PersistentVolumeClaim (check its StorageClass and PVs)"),
    "VolumeZone": ("fix-volume", 2, "run in the zone of the volume, or use a volume in the pod's zone"),
    "VolumeRestrictions": ("fix-volume", 2, "release the volume held by another pod, or use another claim"),
    "NodeVolumeLimits": ("fix-volume", 3, "use nodes with spare volume attachments"),
    "NodeUnschedulable": ("uncordon", 1, "uncordon {the_nodes} if the cordon is no longer needed"),
}


def event_remedies(parsed: ParsedEvent) -> list[dict]:
    """One direction per filter the message names, smallest change first."""
    seen: dict[str, dict] = {}
    for r in parsed.reasons:
        if r.plugin is None or r.plugin in seen or r.plugin not in _BY_PLUGIN:
            continue
        kind, cost, what = _BY_PLUGIN[r.plugin]
        what = what.replace("{the_nodes}", "the node" if r.count == 1 else "the nodes")
        if r.plugin == "NodeResourcesFit" and r.reason.startswith("Insufficient "):
            what = f"{r.reason.removeprefix('Insufficient ')}: " + what
        says = "says" if r.count == 1 else "say"
        seen[r.plugin] = {"kind": kind, "cost": cost, "plugin": r.plugin, "nodes": r.count,
                          "summary": f"{counted(r.count, 'node')} {says} \"{r.reason}\": {what}"}
    out = sorted(seen.values(), key=lambda d: (d["cost"], -d["nodes"], d["plugin"]))
    total = parsed.total_nodes
    if total is not None and out and all(d["plugin"] in ("NodeAffinity", "TaintToleration", "NodeName")
                                         for d in out):
        out.insert(0, {"kind": "never", "cost": 0, "plugin": None, "nodes": total,
                       "summary": "no node can take the pod as written until its selectors or tolerations change "
                                  "(every reason is a static constraint)"})
    return out
