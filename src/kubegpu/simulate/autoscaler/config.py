"""cluster-autoscaler flags by their real names, with upstream's defaults.

Durations are Go durations ("10m", "30s"); values read from a scenario's `autoscaler:` mapping,
from `--set autoscaler.<flag>=<value>`, or from the args of the cluster's own cluster-autoscaler
Deployment (`--flag=value`). An unknown flag name is an input error, not silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from kubegpu.errors import InputError
from kubegpu.model.autoscaler import BOOL_FLAGS, FLAGS, go_bool
from kubegpu.model.cmdline import command_flags
from kubegpu.model.timeutil import parse_duration

EXPANDERS = ("least-waste", "most-pods", "priority", "price", "random")
# Hard-coded in static_autoscaler.go (not flags): pods younger than this are not yet considered.
UNSCHEDULABLE_POD_TIME_BUFFER = 2.0
UNSCHEDULABLE_POD_WITH_GPU_TIME_BUFFER = 30.0


def _convert(flag: str, kind: str, value: Any, where: str) -> Any:
    bad = InputError(f"{value!r} is not a valid {kind} for cluster-autoscaler flag --{flag}", where=where,
                     field=f"autoscaler.{flag}")
    if kind == "duration":
        if isinstance(value, bool):
            raise bad
        seconds = float(value) if isinstance(value, (int, float)) else parse_duration(str(value))
        if seconds is None or seconds < 0:
            raise bad
        return float(seconds)
    if kind == "bool":
        if isinstance(value, bool):
            return value
        parsed = go_bool(value) if isinstance(value, str) else None
        if parsed is None:
            raise bad
        return parsed
    if kind == "int":
        if isinstance(value, bool):
            raise bad
        try:
            out = int(value)
        except (TypeError, ValueError):
            raise bad from None
        if out < (-(2**31) if flag == "expendable-pods-priority-cutoff" else 0) or str(out) != str(value).strip():
            raise bad
        return out
    if kind == "float":
        try:
            out = float(value)
        except (TypeError, ValueError):
            raise bad from None
        if isinstance(value, bool) or not 0.0 <= out <= 1.0:
            raise bad
        return out
    text = str(value)
    if flag == "expander":
        for part in text.split(","):
            if part not in EXPANDERS:
                raise InputError(f"unknown expander {part!r} (choose from {', '.join(EXPANDERS)})", where=where,
                                 field="autoscaler.expander")
    return text


def _default(flag: str) -> Any:
    """Upstream's default of `flag` (model.autoscaler.FLAGS, the one table), converted."""
    kind, text = FLAGS[flag]
    return _convert(flag, kind, text, "cluster-autoscaler defaults")


@dataclass(frozen=True)
class AutoscalerConfig:
    """The flags the model uses, in seconds / plain values."""

    scan_interval: float = _default("scan-interval")
    max_node_provision_time: float = _default("max-node-provision-time")
    scale_down_enabled: bool = _default("scale-down-enabled")
    scale_down_delay_after_add: float = _default("scale-down-delay-after-add")
    scale_down_delay_after_delete: float = _default("scale-down-delay-after-delete")
    scale_down_delay_after_failure: float = _default("scale-down-delay-after-failure")
    scale_down_delay_type_local: bool = _default("scale-down-delay-type-local")
    scale_down_unneeded_time: float = _default("scale-down-unneeded-time")
    scale_down_unready_time: float = _default("scale-down-unready-time")
    scale_down_unready_enabled: bool = _default("scale-down-unready-enabled")
    scale_down_utilization_threshold: float = _default("scale-down-utilization-threshold")
    scale_down_gpu_utilization_threshold: float = _default("scale-down-gpu-utilization-threshold")
    scale_down_non_empty_candidates_count: int = _default("scale-down-non-empty-candidates-count")
    new_pod_scale_up_delay: float = _default("new-pod-scale-up-delay")
    expander: str = _default("expander")
    max_nodes_total: int = _default("max-nodes-total")
    max_scale_down_parallelism: int = _default("max-scale-down-parallelism")
    max_drain_parallelism: int = _default("max-drain-parallelism")
    max_nodes_per_scaleup: int = _default("max-nodes-per-scaleup")
    node_delete_delay_after_taint: float = _default("node-delete-delay-after-taint")
    max_graceful_termination_sec: int = _default("max-graceful-termination-sec")
    initial_node_group_backoff_duration: float = _default("initial-node-group-backoff-duration")
    max_node_group_backoff_duration: float = _default("max-node-group-backoff-duration")
    node_group_backoff_reset_timeout: float = _default("node-group-backoff-reset-timeout")
    expendable_pods_priority_cutoff: int = _default("expendable-pods-priority-cutoff")
    skip_nodes_with_local_storage: bool = _default("skip-nodes-with-local-storage")
    skip_nodes_with_system_pods: bool = _default("skip-nodes-with-system-pods")
    enforce_node_group_min_size: bool = _default("enforce-node-group-min-size")


def autoscaler_config(flags: dict[str, Any], *, where: str) -> AutoscalerConfig:
    """Build the config from flag-name -> value; unknown names are errors."""
    values: dict[str, Any] = {}
    for name, value in flags.items():
        if name not in FLAGS:
            raise InputError(f"unknown cluster-autoscaler flag {name!r}", where=where, field=f"autoscaler.{name}")
        kind, _ = FLAGS[name]
        values[name.replace("-", "_")] = _convert(name, kind, value, where)
    known = {f.name for f in fields(AutoscalerConfig)}
    return AutoscalerConfig(**{k: v for k, v in values.items() if k in known})


def flags_from_args(args: list[str]) -> dict[str, str]:
    """The flags we model from a cluster-autoscaler container's args (the one command-line reader).

    Flags the model does not use (cloud-provider, nodes, ...) are skipped: they are legitimate there.
    """
    return {name: value for name, value in command_flags(args, bool_flags=BOOL_FLAGS).items() if name in FLAGS}
