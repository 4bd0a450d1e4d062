"""The initial state of a simulation taken from a real cluster source (`--demo`, `--snapshot`, live).

Node groups: cluster-autoscaler's own `--nodes MIN:MAX:NAME` args name them (`model.autoscaler`, the
reading the audit shares; a malformed one is an input error naming the Deployment); a node belongs to the
group whose NAME is one of its label values (e.g. `eks.amazonaws.com/nodegroup`), else to its pool
label (`kubegpu.model.pools`). Groups the autoscaler does not know keep their size. Each group's
shape (allocatable CPU, memory, physical GPUs, model, labels, taints, max pods) is its first
node's. Flags come from the cluster-autoscaler Deployment's command/args when one exists. Running
pods become service jobs that run on their node's group for the whole simulation.
"""

from __future__ import annotations

from typing import Any

from kubegpu.model.autoscaler import find_cluster_autoscalers
from kubegpu.model.pools import node_pool
from kubegpu.placement.task import Task
from kubegpu.simulate.workload import SERVICE, Job, PriorityClass, Selector

GROUP_LABEL = "kubegpu.io/simulated-node-group"
TOLERATE_EVERYTHING = ""  # a toleration with an empty key (operator Exists) tolerates every taint


def cluster_overrides(state) -> tuple[dict[str, Any], list[Job]]:
    """(scenario overrides for `cluster.node_groups` and `autoscaler`, the running pods as jobs)."""
    found = find_cluster_autoscalers(state)
    ca = found[0] if found else None  # the first, as cluster-autoscaler runs one per cluster
    known = {g.name: (g.min, g.max) for g in ca.node_groups()} if ca is not None else {}
    members: dict[str, list] = {}
    for node in state.nodes:
        values = set(node.metadata.labels.values())
        name = next((g for g in known if g in values), None) or node_pool(node) or "default"
        members.setdefault(name, []).append(node)
    groups: dict[str, dict] = {}
    for name, nodes in members.items():
        first = nodes[0]
        alloc = state.allocatable[first.name]
        gpu = state.node_gpus[first.name]
        lo, hi = known.get(name, (len(nodes), len(nodes)))
        groups[name] = {
            "instance_type": first.metadata.labels.get("node.kubernetes.io/instance-type", ""),
            "cpu": alloc.get("cpu", 0) / 1000, "memory": alloc.get("memory", 0), "gpus": gpu.physical,
            "gpu_model": gpu.model or "", "max_pods": alloc.get("pods", 110),
            "labels": {**{k: v for k, v in first.metadata.labels.items() if isinstance(v, str)}, GROUP_LABEL: name},
            "taints": [t.text for t in first.spec.taints if t.effect],
            "min": min(lo, len(nodes)), "max": max(hi, len(nodes)), "initial": len(nodes),
            "autoscaled": name in known,
        }
    group_of = {n.name: g for g, nodes in members.items() for n in nodes}
    jobs = []
    for pod in state.pods:
        node = pod.spec.node_name
        if not node or pod.is_terminal or node not in group_of:
            continue
        task = Task.from_demand(state.pod_requests(pod), state.gpu_demand(pod, node), pod.key)
        prio = PriorityClass(pod.spec.priority_class_name or "", state.priority_of(pod))
        jobs.append(Job(id=-1, name=pod.key, cls="running", submit=0.0, task=task, kind=SERVICE, end=float("inf"),
                        priority=prio, selector=Selector(((GROUP_LABEL, group_of[node]),), (TOLERATE_EVERYTHING,)),
                        origin=f"{state.source or 'cluster'}: Pod/{pod.key}"))
    overrides: dict[str, Any] = {"cluster.node_groups": groups}
    for flag, value in (ca.modelled_flags if ca is not None else {}).items():
        overrides[f"autoscaler.{flag}"] = value
    return overrides, jobs
