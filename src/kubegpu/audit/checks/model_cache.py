"""Pitfall 9: replicas that each pull the same weights over the network, and mixed model versions."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit
from kubegpu.storage.throughput import DEFAULT_THROUGHPUT
from kubegpu.storage.volumes import is_local_provisioner, spec_backends
from kubegpu.audit.workloads import GpuWorkload
from kubegpu.model.kinds import Pod, StorageClass

CACHE_KINDS = ("ModelCache", "LocalModelCache", "LocalModelNodeGroup", "LocalModelNamespaceCache", "Dataset", "DataLoad",
               "AlluxioRuntime", "JindoRuntime", "JuiceFSRuntime")
CACHE_AGENTS = ("dragonfly", "dfdaemon", "localmodelnode-agent", "fluid")
MODEL_IDENTITY_LABELS = ("serving.kserve.io/inferenceservice", "model", "kubegpu.io/model",
                         "app.kubernetes.io/name", "app")
VERSION_LABELS = ("app.kubernetes.io/version", "version", "model-version", "kubegpu.io/model-version")


def cache_mechanisms(ctx: AuditContext) -> list[str]:
    """Names of cluster-wide model caches: KServe LocalModelCache, Fluid, Dragonfly."""
    found = [o.ref for o in ctx.crds(*CACHE_KINDS)]
    found += [w.ref for w in ctx.deployments_like(*CACHE_AGENTS)]
    return found


def _loads_remotely(ctx: AuditContext, w: GpuWorkload) -> str | None:
    """How the workload gets its weights over the network ('nfs volume ...', 'MODEL_URI=s3://...')."""
    for spec in w.specs:
        for b in spec_backends(ctx.state, spec, w.namespace):
            if b.network_fs:
                return f"{b.driver} volume {b.ref}"
        for c in spec.containers:
            for e in c.env:
                if e.value and "://" in e.value and "model" in e.name.lower():
                    return f"{e.name}={e.value}"
    return None


def _has_local_copy(ctx: AuditContext, w: GpuWorkload) -> bool:
    for spec in w.specs:
        for b in spec_backends(ctx.state, spec, w.namespace):
            if b.driver == "local" or is_local_provisioner(b.driver):
                return True
        for vol in spec.volumes:
            if vol.host_path is not None and "model" in str(vol.host_path.get("path", "")).lower():
                return True
    return False


def no_local_cache(ctx: AuditContext) -> Iterator[Hit]:
    """KG-901."""
    if cache_mechanisms(ctx):
        return
    minimum = int(ctx.param("KG-901", "min_replicas"))
    local_classes = [sc.name for sc in ctx.state.of_kind("StorageClass")
                     if isinstance(sc, StorageClass) and is_local_provisioner(sc.provisioner)]
    for w in ctx.inference:
        if w.replicas < minimum or _has_local_copy(ctx, w):
            continue
        source = _loads_remotely(ctx, w)
        if source is None:
            continue
        yield Hit(object=w.ref, message=f"{w.replicas} replicas each load the weights from {source}; no "
                                        "LocalModelCache, Fluid or Dragonfly cache exists",
                  evidence=(f"local StorageClasses available: {', '.join(local_classes) or 'none'}",),
                  remediation=models_plan_remediation(w.replicas))


def models_plan_remediation(replicas: int) -> str:
    """Point at `kubegpu models plan` with this cluster's numbers (replicas) and the seed's throughputs."""
    nfs, nvme = DEFAULT_THROUGHPUT["nfs"], DEFAULT_THROUGHPUT["local-nvme"]
    numbers = (f"{replicas} replicas: every GB of weights costs {1e9 / nfs:g} s per replica over NFS at "
               f"{nfs / 1e6:.0f} MB/s and {replicas} GB through one server per roll-out, vs {1e9 / nvme:.2f} s from "
               f"local NVMe at {nvme / 1e9:.0f} GB/s")
    return ("Pre-distribute the weights to each GPU node's local NVMe with a kubegpu.io ModelCache and gate the "
            "roll-out on it: `kubegpu models plan --cache MODEL.yaml` shows per node the bytes to move, the ETA and "
            f"when the roll-out may start ({numbers}). Alternatives: KServe LocalModelCache, Fluid, Dragonfly.")


def _identity(pod: Pod) -> str | None:
    labels = pod.labels
    for key in MODEL_IDENTITY_LABELS:
        if labels.get(key):
            return f"{pod.namespace}/{labels[key]}"
    return None


def _version(pod: Pod) -> str:
    images = ",".join(sorted(c.image or "" for c in pod.spec.containers))
    model_env = ",".join(sorted(f"{e.name}={e.value}" for c in pod.spec.containers for e in c.env
                                if e.value and "MODEL" in e.name.upper() and
                                any(k in e.name.upper() for k in ("VERSION", "REVISION", "ID", "NAME", "URI",
                                                                  "PATH"))))
    label = next((pod.labels[k] for k in VERSION_LABELS if pod.labels.get(k)), "")
    return " ".join(x for x in (images, model_env, label and f"version={label}") if x)


def mixed_model_versions(ctx: AuditContext) -> Iterator[Hit]:
    """KG-902: running inference replicas of one model that differ in image, model revision or version label."""
    groups: dict[str, dict[str, list[Pod]]] = defaultdict(lambda: defaultdict(list))
    owner: dict[str, str] = {}
    for w in ctx.inference:
        for pod in w.pods:
            if not pod.is_bound:
                continue
            ident = _identity(pod) or w.ref
            groups[ident][_version(pod)].append(pod)
            owner.setdefault(ident, w.ref)
    for ident, versions in sorted(groups.items()):
        if len(versions) > 1:
            parts = sorted(versions.items(), key=lambda kv: -len(kv[1]))
            yield Hit(object=owner[ident],
                      message=f"model {ident.split('/', 1)[-1]} runs {len(versions)} versions: " + "; ".join(
                          f"{len(pods)} x {v}" for v, pods in parts))
