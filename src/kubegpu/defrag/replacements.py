"""Which running pod replaced each evicted pod, and which evicted pods are still terminating.

A replacement is a pod of the same controller (owner uid) that did not exist when the pod was
evicted (not among the `siblings` the journal recorded), is not terminating, and runs on a node.
A StatefulSet's replacement has the old name but a new uid. An evicted pod whose uid is still
listed is terminating: its resources are not free until it is gone, so the step is not done.
"""

from __future__ import annotations

from kubegpu.defrag.api import PodView
from kubegpu.defrag.plan import Move


def match_replacements(step: list[Move], requested: dict[str, dict], listed: dict[str, list[PodView]]
                       ) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """(uid -> (replacement key, node), pods still terminating) for the moves of one step.

    `requested`: the journal's evict-request records by uid; `listed`: the pods of each namespace now.
    """
    placed: dict[str, tuple[str, str]] = {}
    lingering: list[str] = []
    taken: set[str] = set()
    for move in step:
        rec = requested.get(move.uid, {})
        pods = listed[move.pod.partition("/")[0]]
        if any(p.uid == move.uid for p in pods):
            lingering.append(move.pod)
        known = set(rec.get("siblings") or []) | {move.uid}
        owner = rec.get("owner_uid")
        if not owner:
            continue
        for pod in pods:
            if pod.uid in known or pod.uid in taken or pod.terminating:
                continue
            if pod.owner_uid == owner and pod.phase == "Running" and pod.node:
                placed[move.uid] = (pod.key, pod.node)
                taken.add(pod.uid)
                break
    return placed, lingering
