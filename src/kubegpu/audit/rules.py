"""The PrometheusRule (monitoring.coreos.com/v1) with the alerts a GPU cluster needs.

Storage-starved GPUs look idle, not broken; these alerts make it visible: node iowait, GPUs
allocated to pods but idle (dcgm-exporter), both at once on one node, and kubegpu's own
fragmentation metrics. Thresholds are options; `kubegpu rules` writes the YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

# Names `kubegpu serve` exports on /metrics (alerts on absent series never fire).
METRIC_FRAG_RATE = "kubegpu_fragmentation_rate"
METRIC_STRANDED = "kubegpu_stranded_gpus"


@dataclass(frozen=True)
class RuleOptions:
    name: str = "kubegpu-gpu-cluster"
    namespace: str = "monitoring"
    labels: dict[str, str] = field(default_factory=dict)   # e.g. {"release": "kube-prometheus-stack"}
    iowait_threshold: float = 10.0   # percent of CPU time
    iowait_for: str = "10m"
    idle_util: float = 5.0           # percent GPU utilisation
    idle_for: str = "30m"
    idle_iowait_util: float = 20.0   # GPU utilisation below which "idle while iowait is high"
    frag_rate: float = 0.5
    stranded_gpus: int = 4
    kubegpu_metrics: bool = True


def _num(x: float) -> str:
    return f"{x:g}"


def iowait_expr(o: RuleOptions, by: str = "instance") -> str:
    return f'avg by ({by}) (rate(node_cpu_seconds_total{{mode="iowait"}}[5m])) * 100 > {_num(o.iowait_threshold)}'


def rule_groups(o: RuleOptions) -> list[dict[str, Any]]:
    """The rule groups, as plain data."""
    node = [{
        "alert": "NodeHighIOWait",
        "expr": iowait_expr(o),
        "for": o.iowait_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "Node {{ $labels.instance }} spends {{ $value | printf \"%.0f\" }}% of CPU time in IO wait",
            "description": "IO wait above " + _num(o.iowait_threshold) + "% for " + o.iowait_for + ": storage "
                           "(often model or data loading over NFS) is the bottleneck."}}]
    gpu = [{
        "alert": "GPUAllocatedButIdle",
        "expr": (f'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pod!=""}}[{o.idle_for}]) < {_num(o.idle_util)} or '
                 f'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{exported_pod!=""}}[{o.idle_for}]) < {_num(o.idle_util)}'),
        "for": o.idle_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "GPU {{ $labels.gpu }} is allocated to a pod but below " + _num(o.idle_util) + "% busy",
            "description": "An allocated GPU did almost nothing for " + o.idle_for + ": a stuck job, a pod "
                           "waiting for data, or a GPU that time-slicing could share."}}, {
        "alert": "GPUIdleWhileIOWaitHigh",
        "expr": (f"(avg by (node) (DCGM_FI_DEV_GPU_UTIL) < {_num(o.idle_iowait_util)}) and on (node) "
                 f"({iowait_expr(o, by='node')})"),
        "for": o.iowait_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "GPUs on {{ $labels.node }} are idle while the node waits on IO",
            "description": "Low GPU utilisation with high iowait on the same node: the workload is IO-bound "
                           "(see `kubegpu storage estimate`). Needs a `node` label on both series "
                           "(relabel; dcgm-exporter's Hostname may be the exporter pod's name)."}}]
    groups = [{"name": "kubegpu.node-io", "rules": node}, {"name": "kubegpu.gpu-utilisation", "rules": gpu}]
    if o.kubegpu_metrics:
        groups.append({"name": "kubegpu.fragmentation", "rules": [{
            "alert": "GPUFragmentationHigh",
            "expr": f"{METRIC_FRAG_RATE} > {_num(o.frag_rate)}",
            "for": "30m",
            "labels": {"severity": "warning"},
            "annotations": {"summary": "{{ $value | humanizePercentage }} of idle GPU capacity is fragmented",
                            "description": "Run `kubegpu frag` and `kubegpu defrag` to see and fix it."}}, {
            "alert": "GPUsStranded",
            "expr": f"{METRIC_STRANDED} >= {o.stranded_gpus}",
            "for": "30m",
            "labels": {"severity": "warning"},
            "annotations": {"summary": "{{ $value }} free GPUs cannot host a {{ $labels.size }}-GPU pod",
                            "description": "Free GPUs are spread over nodes; `kubegpu defrag` plans the moves."}}]})
    return groups


def prometheus_rule(o: RuleOptions) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": o.name, "namespace": o.namespace}
    if o.labels:
        meta["labels"] = dict(o.labels)
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": meta,
            "spec": {"groups": rule_groups(o)}}


def prometheus_rule_yaml(o: RuleOptions) -> str:
    return yaml.safe_dump(prometheus_rule(o), sort_keys=False, width=120)
