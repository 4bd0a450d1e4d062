"""Pitfall 8: many pods on one network-filesystem volume, mount timeouts, NFS mount options."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Iterator

from kubegpu.audit.checks.model_cache import models_plan_remediation
from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit
from kubegpu.storage.volumes import VolumeBackend, pod_backends, pv_driver, spec_backends
from kubegpu.model.kinds import PersistentVolume, StorageClass

# kubelet's mount timeout in every version's wording (<=1.16, "timed out waiting for the condition",
# "context deadline exceeded"); the unmounted volumes list is common to all.
FAILED_MOUNT_TIMEOUT = re.compile(
    r"(Unable to (attach or )?mount volumes|timeout expired waiting for volumes to attach)"
    r".*?unmounted volumes=\[(?P<vols>[^\]]*)\]", re.S)


MODEL_HINTS = ("model", "weight", "checkpoint-serving", "hf-cache", "huggingface", "llm")


def _is_model_mount(pod_role: str, volume: str, claim: str, mount_paths: list[str]) -> bool:
    """Model weights: mounted by a serving workload, or named/mounted like a model store."""
    text = " ".join([claim, volume, *mount_paths]).lower()
    return pod_role == "inference" or any(h in text for h in MODEL_HINTS)


def shared_model_volume(ctx: AuditContext) -> Iterator[Hit]:
    """KG-801: one shared network-FS model volume mounted by at least `min_pods` pods.

    Checkpoint and dataset volumes of training are shared by design; the pitfall is every serving
    replica pulling the same weights through one file server at start-up.
    """
    minimum = int(ctx.param("KG-801", "min_pods"))
    roles = {p.key: w.role for w in ctx.workloads for p in w.pods}
    users: dict[str, list[str]] = defaultdict(list)
    backends: dict[str, VolumeBackend] = {}
    for pod in ctx.state.live_pods:
        for b in pod_backends(ctx.state, pod):
            paths = [m.mount_path for c in pod.spec.containers for m in c.volume_mounts if m.name == b.volume]
            if b.network_fs and b.shared and _is_model_mount(roles.get(pod.key, "other"), b.volume, b.ref, paths):
                top = ctx.state.top_controller(pod)
                users[b.ref].append(f"{top[0]}/{top[1]}" if top else pod.name)
                backends[b.ref] = b
    for ref, owners in sorted(users.items()):
        if len(owners) >= minimum:
            by_owner = Counter(owners)
            parts = ", ".join(f"{o}: {n}" for o, n in by_owner.most_common(5))
            yield Hit(object=ref, message=f"{len(owners)} pods read one {backends[ref].driver} volume ({parts})",
                      remediation=models_plan_remediation(len(owners)))


def failed_mount_timeouts(ctx: AuditContext) -> Iterator[Hit]:
    """KG-802: FailedMount events that are kubelet's attach/mount timeout, one finding per pod."""
    per_pod: dict[str, list] = defaultdict(list)
    siblings: dict[str, list[str]] = defaultdict(list)
    for ev in ctx.state.of_kind("Event"):
        if ev.reason != "FailedMount":
            continue
        subj = ev.subject
        ref = f"{subj.kind or 'Pod'}/{subj.namespace or ev.namespace}/{subj.name}"
        m = FAILED_MOUNT_TIMEOUT.search(ev.text)
        if m:
            per_pod[ref].append((ev, m.group("vols")))
        else:
            siblings[ref].append(ev.text)
    for ref, hits in sorted(per_pod.items()):
        count = sum(ev.count or 1 for ev, _ in hits)
        volumes = sorted({v.strip() for _, vols in hits for v in vols.split() if v.strip()})
        yield Hit(object=ref, message=f"timed out mounting volumes [{' '.join(volumes)}] ({count}x)",
                  evidence=tuple(siblings[ref][:3]) or (hits[-1][0].text,))


def _nfs_targets(ctx: AuditContext) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(ref, mount options) of NFS StorageClasses and of NFS PVs not made by one of those classes."""
    nfs_classes = set()
    for sc in ctx.state.of_kind("StorageClass"):
        if isinstance(sc, StorageClass) and "nfs" in sc.provisioner.lower():
            nfs_classes.add(sc.name)
            yield sc.ref, tuple(sc.mount_options)
    for pv in ctx.state.of_kind("PersistentVolume"):
        if isinstance(pv, PersistentVolume) and "nfs" in pv_driver(pv).lower() \
                and (pv.spec.storage_class_name or "") not in nfs_classes:
            yield pv.ref, tuple(pv.spec.mount_options)


def _options(raw: tuple[str, ...]) -> set[str]:
    return {o.strip().split("=")[0] for item in raw for o in item.split(",") if o.strip()}


def nfs_soft_mount(ctx: AuditContext) -> Iterator[Hit]:
    """KG-803."""
    for ref, options in _nfs_targets(ctx):
        if "soft" in _options(options):
            yield Hit(object=ref, message=f"mountOptions {', '.join(options)} include soft: reads fail with EIO "
                                          "under load")


def nfs_without_nconnect(ctx: AuditContext) -> Iterator[Hit]:
    """KG-804."""
    for ref, options in _nfs_targets(ctx):
        if "nconnect" not in _options(options):
            yield Hit(object=ref, message="NFS mounted without nconnect: one TCP connection per server")


def no_startup_gating(ctx: AuditContext) -> Iterator[Hit]:
    """KG-805: GPU pods on a network-FS volume without a startupProbe or an init container."""
    for w in ctx.workloads:
        if w.role != "inference":
            continue
        spec = w.templates[0].spec if w.templates else None
        if spec is None:
            continue
        if not any(b.network_fs for b in spec_backends(ctx.state, spec, w.namespace)):
            continue
        if spec.init_containers or any(c.startup_probe is not None for c in spec.containers):
            continue
        yield Hit(object=w.ref, message="loads weights from a network filesystem with no startupProbe and no "
                                        "init container: slow mounts meet liveness probes and early traffic")
