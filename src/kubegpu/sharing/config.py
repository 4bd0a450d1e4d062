"""The NVIDIA device plugin / GPU Operator configuration for sharing, and its field-by-field check.

Format (NVIDIA/k8s-device-plugin api/config/v1; GPU Operator "Time-Slicing GPUs in Kubernetes"):

    version: v1
    flags: {migStrategy: none}
    sharing:
      timeSlicing:                      # or mps: (mutually exclusive)
        renameByDefault: false          # true: advertise nvidia.com/gpu.shared instead
        failRequestsGreaterThanOne: true    # time-slicing only: a request > 1 fails at admission
        resources: [{name: nvidia.com/gpu, replicas: 4}]

delivered as one data key of a ConfigMap in the operator's namespace, named by the ClusterPolicy
(`spec.devicePlugin.config.name`) and selected per node by the label `nvidia.com/device-plugin.config=<key>`.
"""

from __future__ import annotations

from typing import Any

import yaml

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_STRATEGIES = ("none", "single", "mixed")
CONFIGMAP_NAME = "time-slicing-config"
OPERATOR_NAMESPACE = "gpu-operator"
MAX_REPLICAS = 1024


def sharing_config(method: str, replicas: int, *, rename_by_default: bool = False) -> dict[str, Any]:
    """The device plugin config file for `method` ("timeSlicing" or "mps") with `replicas` per GPU."""
    block: dict[str, Any] = {"renameByDefault": rename_by_default}
    if method == "timeSlicing":
        block["failRequestsGreaterThanOne"] = True    # recommended: a 2-GPU request fails at admission
    block["resources"] = [{"name": GPU_RESOURCE, "replicas": replicas}]
    return {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": {method: block}}


def validate_config(config: Any) -> list[str]:
    """Every way `config` departs from the device plugin's config format: "field: problem" lines."""
    errors: list[str] = []
    if not isinstance(config, dict):
        return ["<root>: not a mapping"]
    known = {"version", "flags", "sharing"}
    errors += [f"{k}: not a field of the device plugin config" for k in config if k not in known]
    if config.get("version") != "v1":
        errors.append("version: must be v1")
    flags = config.get("flags") or {}
    strategy = flags.get("migStrategy", "none") if isinstance(flags, dict) else None
    if strategy not in MIG_STRATEGIES:
        errors.append(f"flags.migStrategy: {strategy!r} is not one of {', '.join(MIG_STRATEGIES)}")
    sharing = config.get("sharing")
    if not isinstance(sharing, dict):
        return errors + ["sharing: missing"]
    methods = [m for m in ("timeSlicing", "mps") if m in sharing]
    errors += [f"sharing.{k}: not a sharing method" for k in sharing if k not in ("timeSlicing", "mps")]
    if len(methods) != 1:
        return errors + ["sharing: exactly one of timeSlicing or mps"]
    method = methods[0]
    block = sharing[method]
    at = f"sharing.{method}"
    if not isinstance(block, dict):
        return errors + [f"{at}: not a mapping"]
    allowed = {"renameByDefault", "resources"} | ({"failRequestsGreaterThanOne"} if method == "timeSlicing" else set())
    errors += [f"{at}.{k}: not a field of {method}" for k in block if k not in allowed]
    for flag in ("renameByDefault", "failRequestsGreaterThanOne"):
        if flag in block and not isinstance(block[flag], bool):
            errors.append(f"{at}.{flag}: must be true or false")
    if method == "mps" and strategy == "mixed":
        errors.append("flags.migStrategy: using --mig-strategy=mixed is not supported with MPS")
    resources = block.get("resources")
    if not isinstance(resources, list) or not resources:
        return errors + [f"{at}.resources: a non-empty list of {{name, replicas}}"]
    for i, r in enumerate(resources):
        here = f"{at}.resources[{i}]"
        if not isinstance(r, dict):
            errors.append(f"{here}: not a mapping")
            continue
        for k in r:
            if k in ("rename", "devices"):
                errors.append(f"{here}.{k}: ignored by the device plugin (not yet supported)")
            elif k not in ("name", "replicas"):
                errors.append(f"{here}.{k}: not a field of a resource")
        name = r.get("name")
        if method == "mps" and name != GPU_RESOURCE:
            errors.append(f"{here}.name: MPS shares only {GPU_RESOURCE} on full GPUs")
        elif name != GPU_RESOURCE and not (isinstance(name, str) and name.startswith(MIG_RESOURCE_PREFIX)):
            errors.append(f"{here}.name: {name!r} is neither {GPU_RESOURCE} nor a MIG resource")
        replicas = r.get("replicas")
        if isinstance(replicas, bool) or not isinstance(replicas, int) or not 2 <= replicas <= MAX_REPLICAS:
            errors.append(f"{here}.replicas: an integer from 2 (sharing) to {MAX_REPLICAS}")
    return errors


def config_key(product: str, method: str, replicas: int) -> str:
    """The ConfigMap data key (and node label value): product, method and replicas, label-safe."""
    base = product.lower().replace("nvidia-", "") or "gpu"
    word = "ts" if method == "timeSlicing" else "mps"
    return f"{base}-{word}-x{replicas}"[:63].strip("-.")


def configmap(key: str, config: dict[str, Any]) -> dict[str, Any]:
    """The GPU Operator ConfigMap holding one profile under `key`."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP_NAME, "namespace": OPERATOR_NAMESPACE},
            "data": {key: yaml.safe_dump(config, sort_keys=False)}}


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (the config file inside the ConfigMap) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def manifest_yaml(obj: dict[str, Any]) -> str:
    """A manifest as YAML, multi-line values as literal blocks (as the GPU Operator docs write them)."""
    return yaml.dump(obj, Dumper=_BlockDumper, sort_keys=False)


def apply_steps(key: str, nodes: list[str]) -> list[str]:
    """The commands that turn it on for `nodes` (and only them)."""
    return [
        f"kubectl apply -f {CONFIGMAP_NAME}.yaml   # the ConfigMap above, in namespace {OPERATOR_NAMESPACE}",
        "kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p "
        f"'{{\"spec\":{{\"devicePlugin\":{{\"config\":{{\"name\":\"{CONFIGMAP_NAME}\"}}}}}}}}'",
        f"kubectl label node {' '.join(nodes)} {CONFIG_LABEL}={key} --overwrite",
        "restart the device plugin pods if they do not pick the change up (gpu-operator#1144)",
    ]
