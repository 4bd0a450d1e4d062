"""KG-105: pods carry a gang (PodGroup) marker, but no running scheduler enforces gangs for their schedulerName.

A gang label is only a promise: kube-scheduler's default profile ignores `scheduling.x-k8s.io/pod-group`,
so unless the pods name a scheduler that runs the Coscheduling plugin (scheduler-plugins, as a second
scheduler named `scheduler-plugins-scheduler` by its chart, or replacing the default profile), they are
placed one by one and a half-placed job holds its GPUs. Volcano and KAI gangs likewise need the pods'
schedulerName to be `volcano` / `kai-scheduler` (their defaults) with that scheduler running.
Which schedulers run is read from the cluster: workloads with running pods whose image is a known gang
scheduler, and KubeSchedulerConfiguration documents in ConfigMaps (profiles enabling Coscheduling).
Gangs that admission controllers hold back (Kueue, JobSet, LeaderWorkerSet) do not depend on the scheduler
and are not judged here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit, Patch
from kubegpu.errors import InputError
from kubegpu.model.kinds import ConfigMap, Pod
from kubegpu.scheduling.gang import find_gangs
from kubegpu.model.text import counted
from kubegpu.guards.safe_yaml import load_yaml_documents

DEFAULT_SCHEDULER = "default-scheduler"
# gang system -> the schedulerName its scheduler serves by default, and image substrings of that scheduler
GANG_SCHEDULERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "coscheduling": ("scheduler-plugins-scheduler", ("scheduler-plugins/kube-scheduler",)),
    "volcano": ("volcano", ("volcanosh/vc-scheduler",)),
    "kai": ("kai-scheduler", ("kai-scheduler/scheduler", "kai-scheduler:")),
}
PLUGIN_SYSTEMS = {"Coscheduling": "coscheduling"}


def _running_images(ctx: AuditContext) -> set[str]:
    images: set[str] = set()
    for pod in ctx.state.pods:
        if pod.status.phase == "Running":
            images.update(c.image or "" for c in pod.spec.containers)
    return images


def _profiles(doc: Any) -> Iterator[tuple[str, set[str]]]:
    """(schedulerName, enabled plugin names) of each profile of a KubeSchedulerConfiguration document."""
    if not isinstance(doc, dict) or doc.get("kind") != "KubeSchedulerConfiguration":
        return
    for profile in doc.get("profiles") or [{}]:
        if not isinstance(profile, dict):
            continue
        enabled: set[str] = set()
        for point in (profile.get("plugins") or {}).values():
            for entry in (point or {}).get("enabled") or []:
                if isinstance(entry, dict) and entry.get("name"):
                    enabled.add(str(entry["name"]))
        yield str(profile.get("schedulerName") or DEFAULT_SCHEDULER), enabled


def served_gangs(ctx: AuditContext) -> dict[str, set[str]]:
    """schedulerName -> gang systems a running scheduler enforces for it."""
    served: dict[str, set[str]] = {}
    images = _running_images(ctx)
    running = {system for system, (_, needles) in GANG_SCHEDULERS.items()
               if any(n in image for image in images for n in needles)}
    configured = False
    for cm in ctx.state.of_kind("ConfigMap"):
        if not isinstance(cm, ConfigMap):
            continue
        for text in cm.data.values():
            if "KubeSchedulerConfiguration" not in text:
                continue
            try:  # cluster-provided text: the one safe loader (alias bombs, depth) — unreadable is skipped
                docs = load_yaml_documents(text, where=cm.ref)
            except InputError:
                continue
            for doc in docs:
                for name, enabled in _profiles(doc):
                    systems = {PLUGIN_SYSTEMS[p] for p in enabled if p in PLUGIN_SYSTEMS} & running
                    if systems:
                        configured = True
                        served.setdefault(name, set()).update(systems)
    for system in running:
        default_name = GANG_SCHEDULERS[system][0]
        if system != "coscheduling" or not configured:
            served.setdefault(default_name, set()).add(system)
    return served


def _scheduler(pod: Pod) -> str:
    return pod.spec.scheduler_name or DEFAULT_SCHEDULER


def unenforced_gangs(ctx: AuditContext) -> Iterator[Hit]:
    """KG-105: a gang whose pods name a scheduler that does not enforce their gang marker."""
    served = served_gangs(ctx)
    for gang in sorted(find_gangs(ctx.state).values(), key=lambda g: g.key):
        if gang.system not in GANG_SCHEDULERS:
            continue
        names = sorted({_scheduler(p) for p in gang.members})
        loose = [n for n in names if gang.system not in served.get(n, set())]
        if not loose:
            continue
        first = gang.members[0]
        top = ctx.state.top_controller(first)
        target = f"{top[0]}/{gang.namespace}/{top[1]}" if top else first.ref
        group = ctx.state.get("PodGroup", gang.namespace, gang.name)
        obj = group.ref if group is not None else target
        wanted = GANG_SCHEDULERS[gang.system][0]
        runs = ", ".join(f"{n} ({', '.join(sorted(s))})" for n, s in sorted(served.items())) or "none"
        why = ("kube-scheduler's default profile ignores gang markers" if loose == [DEFAULT_SCHEDULER]
               else f"no running scheduler enforces {gang.system} gangs for schedulerName {', '.join(loose)}")
        patch = None
        if top and top[0] in ("Job", "Deployment", "StatefulSet", "ReplicaSet"):
            patch = Patch(kind="merge-patch", target=target,
                          content=yaml.safe_dump({"spec": {"template": {"spec": {"schedulerName": wanted}}}},
                                                 sort_keys=False))
        yield Hit(object=obj,
                  message=f"gang {gang.key} ({gang.system}, {counted(len(gang.members), 'pod')}, minMember "
                          f"{gang.min_member}) is not enforced: its pods use schedulerName {', '.join(names)} "
                          f"and {why}, so they are placed one by one",
                  evidence=(f"gang schedulers running (schedulerName: gang systems): {runs}",
                            f"members: {', '.join(p.key for p in gang.members[:6])}"
                            + (" ..." if len(gang.members) > 6 else "")),
                  remediation=f"Run the {gang.system} scheduler and set `schedulerName: {wanted}` in the pod "
                              "template (or enable the plugin in the profile the pods already use).",
                  patch=patch)
