"""cluster-autoscaler flags by their real names, with upstream's defaults.

Durations are Go durations ("10m", "30s"); values read from a scenario's `autoscaler:` mapping,
from `--set autoscaler.<flag>=<value>`, or from the args of the cluster's own cluster-autoscaler
Deployment (`--flag=value`). An unknown flag name is an input error, not silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from kubegpu.model.cmdline import command_flags
from kubegpu.errors import InputError
from kubegpu.model.timeutil import parse_duration

# upstream FAQ flag table / main.go defaults. (name, kind, default)
FLAGS: dict[str, tuple[str, Any]] = {
    "scan-interval": ("duration", 10.0),
    "max-node-provision-time": ("duration", 900.0),
    "scale-down-enabled": ("bool", True),
    "scale-down-delay-after-add": ("duration", 600.0),
    "scale-down-delay-after-delete": ("duration", 0.0),
    "scale-down-delay-after-failure": ("duration", 180.0),
    "scale-down-delay-type-local": ("bool", False),
    "scale-down-unneeded-time": ("duration", 600.0),
    "scale-down-unready-time": ("duration", 1200.0),
    "scale-down-unready-enabled": ("bool", True),
    "scale-down-utilization-threshold": ("float", 0.5),
    "scale-down-gpu-utilization-threshold": ("float", 0.5),
    "scale-down-non-empty-candidates-count": ("int", 30),
    "new-pod-scale-up-delay": ("duration", 0.0),
    "expander": ("str", "least-waste"),
    "max-nodes-total": ("int", 0),
    "max-scale-down-parallelism": ("int", 10),
    "max-drain-parallelism": ("int", 1),
    "max-nodes-per-scaleup": ("int", 1000),
    "node-delete-delay-after-taint": ("duration", 5.0),
    "max-graceful-termination-sec": ("int", 600),
    "initial-node-group-backoff-duration": ("duration", 300.0),
    "max-node-group-backoff-duration": ("duration", 1800.0),
    "node-group-backoff-reset-timeout": ("duration", 10800.0),
    "expendable-pods-priority-cutoff": ("int", -10),
    "skip-nodes-with-local-storage": ("bool", True),
    "skip-nodes-with-system-pods": ("bool", True),
    "enforce-node-group-min-size": ("bool", False),
}
EXPANDERS = ("least-waste", "most-pods", "priority", "price", "random")
# Hard-coded in static_autoscaler.go (not flags): pods younger than this are not yet considered.
UNSCHEDULABLE_POD_TIME_BUFFER = 2.0
UNSCHEDULABLE_POD_WITH_GPU_TIME_BUFFER = 30.0


@dataclass(frozen=True)
class AutoscalerConfig:
    """The flags the model uses, in seconds / plain values."""

    scan_interval: float = 10.0
    max_node_provision_time: float = 900.0
    scale_down_enabled: bool = True
    scale_down_delay_after_add: float = 600.0
    scale_down_delay_after_delete: float = 0.0
    scale_down_delay_after_failure: float = 180.0
    scale_down_delay_type_local: bool = False
    scale_down_unneeded_time: float = 600.0
    scale_down_unready_time: float = 1200.0
    scale_down_unready_enabled: bool = True
    scale_down_utilization_threshold: float = 0.5
    scale_down_gpu_utilization_threshold: float = 0.5
    scale_down_non_empty_candidates_count: int = 30
    new_pod_scale_up_delay: float = 0.0
    expander: str = "least-waste"
    max_nodes_total: int = 0
    max_scale_down_parallelism: int = 10
    max_drain_parallelism: int = 1
    max_nodes_per_scaleup: int = 1000
    node_delete_delay_after_taint: float = 5.0
    max_graceful_termination_sec: int = 600
    initial_node_group_backoff_duration: float = 300.0
    max_node_group_backoff_duration: float = 1800.0
    node_group_backoff_reset_timeout: float = 10800.0
    expendable_pods_priority_cutoff: int = -10
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_system_pods: bool = True
    enforce_node_group_min_size: bool = False


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
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise bad
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
    booleans = [name for name, spec in FLAGS.items() if spec[0] == "bool"]
    return {name: value for name, value in command_flags(args, bool_flags=booleans).items() if name in FLAGS}
