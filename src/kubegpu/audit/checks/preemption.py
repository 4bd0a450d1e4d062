"""Pitfall 4: inference preempting training; training without PDBs, checkpoints or its own pool."""

from __future__ import annotations

import re
from typing import Iterator

import yaml

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit, Patch
from kubegpu.audit.workloads import GpuWorkload, PodTemplate
from kubegpu.model.kinds import GenericObject, Workload
from kubegpu.model.pools import node_pool
from kubegpu.model.selectors import selector_matches
from kubegpu.model.text import counted

# Labels that change per pod or per revision: never part of a PDB selector we propose.
VOLATILE_LABELS = ("pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
                   "controller-uid", "batch.kubernetes.io/controller-uid", "apps.kubernetes.io/pod-index",
                   "batch.kubernetes.io/job-completion-index", "training.kubeflow.org/replica-index",
                   "training.kubeflow.org/replica-type", "training.kubeflow.org/job-role")
PERSISTENT_VOLUMES = ("persistent_volume_claim", "nfs", "cephfs", "csi", "ephemeral")


def workload_priority(ctx: AuditContext, w: GpuWorkload) -> tuple[int, str, str]:
    """(value, class name or '', preemption policy) of a workload's pods."""
    for spec in w.specs:
        name = spec.priority_class_name or ""
        pc = ctx.state.priority_classes.get(name)
        if pc is not None:
            policy = spec.preemption_policy or pc.preemption_policy or "PreemptLowerPriority"
            return pc.value, name, policy
        if spec.priority is not None:
            return spec.priority, name, spec.preemption_policy or "PreemptLowerPriority"
    default = next((pc for pc in ctx.state.priority_classes.values() if pc.global_default), None)
    if default is not None:
        return default.value, default.name, default.preemption_policy or "PreemptLowerPriority"
    return 0, "", "PreemptLowerPriority"


def is_finished(w: GpuWorkload) -> bool:
    """A Job (or training CRD) that has completed or failed: nothing left to protect."""
    obj = w.obj
    if isinstance(obj, Workload) and obj.kind == "Job":
        return not obj.status.active and bool(obj.status.succeeded or obj.status.failed) and not w.pods
    if isinstance(obj, GenericObject):
        conditions = obj.body.get("status", {}).get("conditions", []) if isinstance(obj.body.get("status"),
                                                                                    dict) else []
        done = {"Succeeded", "Complete", "Completed", "Failed"}
        return any(isinstance(c, dict) and c.get("type") in done and c.get("status") == "True"
                   for c in conditions) and not w.pods
    return False


def active_training(ctx: AuditContext) -> list[GpuWorkload]:
    return [w for w in ctx.training if not is_finished(w)]


def inference_preempts_training(ctx: AuditContext) -> Iterator[Hit]:
    """KG-401: a PriorityClass of inference pods above training, allowed to preempt."""
    training = [(w, workload_priority(ctx, w)) for w in active_training(ctx)]
    by_class: dict[str, list[GpuWorkload]] = {}
    for w in ctx.inference:
        value, name, policy = workload_priority(ctx, w)
        if name and policy != "Never":
            by_class.setdefault(name, []).append(w)
    for name, users in sorted(by_class.items()):
        pc = ctx.state.priority_classes[name]
        victims = [(w, p) for w, p in training if p[0] < pc.value]
        if not victims:
            continue
        lowest = min(victims, key=lambda v: v[1][0])
        policy = pc.preemption_policy or "PreemptLowerPriority"
        manifest = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                    "value": pc.value, "globalDefault": pc.global_default, "preemptionPolicy": "Never",
                    "description": pc.description or "inference: queued first, never preempts training"}
        yield Hit(object=pc.ref,
                  message=f"inference pods of class {name} (value {pc.value}, {policy}) can preempt "
                          f"{counted(len(victims), 'training workload')}, e.g. {lowest[0].ref} at priority {lowest[1][0]}",
                  evidence=(f"inference: {', '.join(w.ref for w in users[:5])}",
                            f"training: {', '.join(w.ref for w, _ in victims[:5])}",
                            "preemptionPolicy is immutable: delete and recreate the PriorityClass"),
                  patch=Patch(kind="manifest", content=yaml.safe_dump(manifest, sort_keys=False)))


def _template_covered(ctx: AuditContext, w: GpuWorkload, t: PodTemplate) -> bool:
    return any(selector_matches(pdb.spec.selector, t.labels) for pdb in ctx.state.of_kind("PodDisruptionBudget")
               if pdb.namespace == w.namespace)


def _pdb_manifest(w: GpuWorkload) -> str | None:
    labels = {k: v for k, v in (w.templates[0].labels if w.templates else {}).items() if k not in VOLATILE_LABELS}
    if not labels:
        return None
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": f"{w.name}-pdb", "namespace": w.namespace},
           "spec": {"minAvailable": max(w.replicas, 1), "selector": {"matchLabels": labels}}}
    return manifest_yaml(pdb)


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when present: the same text


def _yaml_node(value: dict | str | int) -> yaml.Node:
    """What yaml.dump's representer makes of a manifest of mappings, strings and integers."""
    if isinstance(value, dict):
        return yaml.MappingNode("tag:yaml.org,2002:map", [(_yaml_node(k), _yaml_node(v)) for k, v in value.items()],
                                flow_style=False)
    if isinstance(value, int) and not isinstance(value, bool):
        return yaml.ScalarNode("tag:yaml.org,2002:int", str(value))
    if isinstance(value, str):
        return yaml.ScalarNode("tag:yaml.org,2002:str", value)
    raise TypeError(f"not a manifest value: {type(value).__name__}")


# A string PyYAML writes plain and reads back as a string: a letter first (no int, float, timestamp,
# indicator), no space, colon or quote (no folding, no mapping), shorter than its simple-key limit of 128;
# of such strings only YAML 1.1's bool and null words resolve to something else (yaml/resolver.py).
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/-]{0,99}")
_RESOLVED_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                            "null Null NULL".split())


def _plain(value: object) -> bool:
    return isinstance(value, str) and _PLAIN.fullmatch(value) is not None and value not in _RESOLVED_WORDS


def _block_lines(mapping: dict, indent: str, out: list[str]) -> bool:
    """The block-style lines yaml.dump writes for `mapping`; False when a key or value needs more than
    the plain style (quotes, an empty mapping...), for which PyYAML's emitter decides."""
    for key, value in mapping.items():
        if not _plain(key):
            return False
        if isinstance(value, dict):
            out.append(f"{indent}{key}:\n")
            if not value or not _block_lines(value, indent + "  ", out):
                return False
        elif isinstance(value, int) and not isinstance(value, bool):
            out.append(f"{indent}{key}: {value}\n")
        elif _plain(value):
            out.append(f"{indent}{key}: {value}\n")
        else:
            return False
    return True


def manifest_yaml(manifest: dict) -> str:
    """`yaml.dump(manifest, sort_keys=False)`, byte for byte, without PyYAML's Python representer
    (95% of the time of one PDB per training workload: 50,000 of them at 20,000 nodes). Manifests of
    plain names and integers (the usual PDB) are written directly; anything else goes through the emitter."""
    lines: list[str] = []
    if manifest and _block_lines(manifest, "", lines):
        return "".join(lines)
    return yaml.serialize(_yaml_node(manifest), Dumper=_DUMPER)


def training_without_pdb(ctx: AuditContext) -> Iterator[Hit]:
    """KG-402."""
    for w in active_training(ctx):
        covered = any(ctx.state.pdbs_for(p) for p in w.pods) if w.pods else any(
            _template_covered(ctx, w, t) for t in w.templates)
        if covered:
            continue
        manifest = _pdb_manifest(w)
        yield Hit(object=w.ref,
                  message=f"no PodDisruptionBudget covers its {counted(w.replicas, 'pod')}: drains and autoscaler "
                          "scale-down evict them freely",
                  patch=Patch(kind="manifest", content=manifest) if manifest else None)


def _has_checkpoint_store(w: GpuWorkload) -> bool:
    for spec in w.specs:
        if any(getattr(v, attr) is not None for v in spec.volumes for attr in PERSISTENT_VOLUMES):
            return True
        for c in spec.containers:
            words = [*(f"{e.name}={e.value or ''}" for e in c.env), *c.args, *c.command]
            if any(("checkpoint" in x.lower() or "ckpt" in x.lower()) and "://" in x for x in words):
                return True
    return False


def training_without_checkpoints(ctx: AuditContext) -> Iterator[Hit]:
    """KG-403."""
    for w in active_training(ctx):
        if not _has_checkpoint_store(w):
            yield Hit(object=w.ref,
                      message="no persistent volume and no object-store checkpoint location: a preempted or "
                              "evicted pod restarts from step 0")


def training_shares_pool_with_preemptors(ctx: AuditContext) -> Iterator[Hit]:
    """KG-404: higher-priority GPU pods that may preempt run in the training pods' pools."""
    def pools(w: GpuWorkload) -> set[str]:
        out = set()
        for p in w.pods:
            node = ctx.state.node_by_name.get(p.spec.node_name or "")
            if node is not None:
                out.add(node_pool(node) or node.name)
        return out

    # Only controllers preempt again: a bare pod that already runs never goes through scheduling again.
    others = [(w, workload_priority(ctx, w), pools(w)) for w in ctx.workloads if w.kind != "Pod"]
    # The threats depend only on the training workload's priority and pools (a workload never threatens
    # itself: a threat's priority is strictly higher), so workloads that share both share the scan; at
    # 5,000 nodes that turns training x workloads comparisons into one scan per distinct pair.
    seen: dict[tuple[int, frozenset[str]], list] = {}
    for w in active_training(ctx):
        value = workload_priority(ctx, w)[0]
        mine = frozenset(pools(w))
        if not mine:
            continue
        key = (value, mine)
        if key not in seen:
            seen[key] = [(o, pr) for o, pr, where in others if pr[0] > value and pr[2] != "Never" and where & mine]
        threats = seen[key]
        if threats:
            o, pr = max(threats, key=lambda t: t[1][0])
            yield Hit(object=w.ref,
                      message=f"runs in pool {', '.join(sorted(mine))} next to {o.ref} (priority {pr[0]}, "
                              f"{pr[2]}), which can preempt it (training priority {value})",
                      evidence=tuple(f"{t.ref}: priority {p[0]}" for t, p in threats[:5]))
