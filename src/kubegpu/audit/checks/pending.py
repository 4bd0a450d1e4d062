"""Pitfall 2: Pending GPU pods (with the reason), and GPU taints that nothing tolerates."""

from __future__ import annotations

from typing import Iterator

from kubegpu.audit.context import AuditContext
from kubegpu.audit.findings import Hit
from kubegpu.audit.workloads import all_pod_templates
from kubegpu.explain.summary import PendingSummary
from kubegpu.model.kinds import Pod
from kubegpu.scheduling.filters.tainttoleration import FILTER_EFFECTS, tolerates
from kubegpu.model.text import counted

# Taints that nodes carry for a while by design (conditions, autoscaler marks): not a pitfall.
TRANSIENT_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "karpenter.sh/",
                            "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler")


def _explain_engine(ctx: AuditContext) -> dict[str, PendingSummary]:
    """pod key -> the explain engine's summary (reason, first_remedy, gang)."""
    return {item.pod: item for item in ctx.pending_summaries}


def _last_failed_scheduling(ctx: AuditContext, pod: Pod) -> str | None:
    events = [e for e in ctx.state.events_for(pod) if e.reason == "FailedScheduling" and e.text]
    if not events:
        return None
    events.sort(key=lambda e: e.last_timestamp or e.event_time or e.first_timestamp or "")
    return events[-1].text


def _own_reason(ctx: AuditContext, pod: Pod) -> str:
    """A short reason from the GPU arithmetic alone, when neither the explain engine nor an event says."""
    demand = ctx.state.gpu_demand(pod)
    free = ctx.free_whole_gpus[ctx.model_mask(demand.models)]
    largest = int(free.max(initial=0))
    models = f" of model {', '.join(sorted(demand.models))}" if demand.models else ""
    return f"needs {counted(demand.num_gpu, 'GPU')}{models}; the most free on one schedulable node is {largest}"


def pending_gpu_pods(ctx: AuditContext) -> Iterator[Hit]:
    """KG-201: every Pending GPU pod, with the scheduler's reason."""
    explained = _explain_engine(ctx)
    for pod in ctx.pending_gpu_pods:
        entry = explained.get(pod.key)
        remedies = [entry.first_remedy] if entry is not None and entry.first_remedy else []
        if pod.spec.scheduling_gates:
            gates = ", ".join(g.name for g in pod.spec.scheduling_gates)
            why = f"held by scheduling gates ({gates})"
        else:
            why = ((entry.reason if entry is not None else None) or _last_failed_scheduling(ctx, pod)
                   or _own_reason(ctx, pod))
        evidence = [f"since {pod.metadata.creation_timestamp}"] if pod.metadata.creation_timestamp else []
        evidence += [f"remedy: {r}" for r in remedies]
        if entry is not None and entry.gang:
            evidence.append(f"gang: {entry.gang}")
        yield Hit(object=pod.ref, message=f"Pending: {why}", evidence=tuple(evidence),
                  remediation=remedies[0] if remedies else None)


def untolerated_gpu_taints(ctx: AuditContext) -> Iterator[Hit]:
    """KG-202: a GPU node taint (NoSchedule/NoExecute) that no workload's pods tolerate.

    DaemonSets are left out: node agents (device plugin, DCGM) tolerate GPU taints by design,
    which says nothing about whether any workload can use the GPUs (Popeye #1, reversed).
    """
    tolerations = [t for kind, tmpl in all_pod_templates(ctx.state) if kind != "DaemonSet"
                   for t in tmpl.spec.tolerations]
    for node in ctx.gpu_nodes:
        for taint in node.spec.taints:
            if taint.effect not in FILTER_EFFECTS or taint.key.startswith(TRANSIENT_TAINT_PREFIXES):
                continue
            if any(tolerates(t, taint) for t in tolerations):
                continue
            gpus = ctx.state.node_gpus[node.name].physical
            toleration = {"key": taint.key, "operator": "Equal" if taint.value else "Exists",
                          "effect": taint.effect, **({"value": taint.value} if taint.value else {})}
            yield Hit(object=node.ref,
                      message=f"taint {taint.text} is tolerated by no workload: the node's {gpus} GPUs cannot be used",
                      evidence=(f"toleration to add to GPU pod templates: {toleration}",))
