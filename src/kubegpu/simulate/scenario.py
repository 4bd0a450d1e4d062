"""Scenario files: the cluster, the workload, the autoscaler (real flag names), billing, duration, seed.

A scenario is YAML (documented in docs/simulate.md). Built-in ones ship in `scenarios/` and are
run by name; `NAME/VARIANT` applies one of the file's `variants` (a mapping of `--set` keys to
values). `--set key=value` overrides any field by its dotted path before validation, so an
override is checked exactly like the file itself. Every error names the file, the field and the value.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal, Union

import msgspec

from kubegpu.errors import InputError
from kubegpu.simulate import limits
from kubegpu.simulate.autoscaler.config import AutoscalerConfig, autoscaler_config
from kubegpu.simulate.karpenter_config import KarpenterSettings
from kubegpu.simulate.scenario_checks import check_plain, check_values, check_work, clip, seconds, shown
from kubegpu.guards.safe_yaml import load_yaml_documents, load_yaml_file

Duration = Union[str, int, float]


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class NodeGroupSpec(_Strict):
    instance_type: str = ""
    cpu: Union[str, int, float] = 96
    memory: Union[str, int] = "768Gi"
    gpus: int = 0
    gpu_model: str = ""
    labels: dict[str, str] = {}
    taints: list[str] = []
    min: int = 0
    max: int = 10
    initial: int = 0
    autoscaled: bool = True
    price_per_hour: float = 0.0
    reserved: int = 0                 # this many nodes are billed at the reserved price
    provision_time: Duration = "4m"   # creation -> Ready
    provision_jitter: Duration = "1m" # + uniform [0, jitter), seeded
    gpu_ready_lag: Duration = "60s"   # Ready -> nvidia.com/gpu allocatable (device plugin, driver)
    provision_failure_rate: float = 0.0  # share of new nodes that never register
    max_pods: int = 110
    expander_priority: int = 0        # the priority expander's ConfigMap value for this group


class ClusterSpec(_Strict):
    node_groups: dict[str, NodeGroupSpec] = {}
    scheduler_policy: str = "least-allocated"


class PriorityClassSpec(_Strict):
    value: int = 0
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"


class PodShape(_Strict):
    gpus: int = 0
    gpu_milli: int = 1000
    cpu: Union[str, int, float] = 1
    memory: Union[str, int] = "4Gi"
    gpu_models: list[str] = []
    node_selector: dict[str, str] = {}
    tolerations: list[str] = []
    priority_class: str = ""


class InferencePeaks(_Strict, tag="inference-peaks", tag_field="kind"):
    """An inference service whose replicas follow load: a baseline plus peaks at fixed times each day."""

    name: str
    pod: PodShape
    base_replicas: int = 0
    peak_replicas: int = 0
    first_peak: Duration = "8h"
    period: Duration = "45m"          # start of one peak to the start of the next
    peak_duration: Duration = "15m"
    peaks_per_day: int = 8
    peak_start_jitter: Duration = "0s"  # each peak starts up to this much later (seeded)
    step: Duration = "1m"             # how often the replica count follows load (HPA sync)
    jitter: float = 0.0               # replica noise: sd of a normal, rounded
    safe_to_evict: bool = True


class Training(_Strict, tag="training", tag_field="kind"):
    """Long training jobs: gangs of `pods` pods that need `duration` of running time."""

    name: str
    pod: PodShape
    count: int = 1
    pods: int = 1
    submit: Duration = "0s"
    every: Duration = "0s"            # spacing between the `count` submissions
    duration: Duration = "12h"
    checkpoint_interval: Duration = "0s"
    restart_overhead: Duration = "0s"
    scheduling_timeout: Duration = "0s"
    safe_to_evict: bool = False


class PoissonJobs(_Strict, tag="poisson", tag_field="kind"):
    """Batch jobs arriving at `rate_per_hour`; log-normal durations; GPU counts and gang sizes by weight."""

    name: str
    pod: PodShape
    rate_per_hour: float
    median_duration: Duration = "15m"
    sigma: float = 1.0
    gpus: dict[str, float] = {}       # GPUs per pod -> weight (default: the pod's gpus)
    gang_pods: dict[str, float] = {}  # pods per gang -> weight (default 1)
    start: Duration = "0s"
    stop: Duration = ""               # default: the scenario's end
    checkpoint_interval: Duration = "0s"
    restart_overhead: Duration = "0s"


Generator = Union[InferencePeaks, Training, PoissonJobs]


class WorkloadSpec(_Strict):
    priority_classes: dict[str, PriorityClassSpec] = {}
    generators: list[Generator] = []
    trace: str = ""                   # a trace file in kubegpu's format (CSV or JSON) or an openb pod list
    trace_class: str = "trace"


class BillingTier(_Strict):
    after: Duration                   # billed time of a node after which `factor` applies
    factor: float


class BillingSpec(_Strict):
    currency: str = "USD"
    granularity: Duration = "1s"
    minimum: Duration = "0s"
    tiers: list[BillingTier] = []
    reserved_discount: float = 0.0    # 0.4 = reserved nodes cost 60 % of the list price


class ScenarioSpec(_Strict):
    name: str = ""
    description: str = ""
    seed: int = 1
    duration: Duration = "24h"
    cluster: ClusterSpec = msgspec.field(default_factory=ClusterSpec)
    workload: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    autoscaler: dict[str, Any] = {}
    rebalancer: dict[str, Any] = {}   # `kubegpu rebalance` as a controller (simulate/rebalancer.py)
    billing: BillingSpec = msgspec.field(default_factory=BillingSpec)
    variants: dict[str, dict[str, Any]] = {}


class Scenario(msgspec.Struct, frozen=True, kw_only=True):
    """A validated scenario: the spec plus the parsed values the engine uses."""

    spec: ScenarioSpec
    source: str
    duration_s: float
    provider: str
    autoscaler: AutoscalerConfig
    base_dir: str = "."

    @property
    def name(self) -> str:
        return self.spec.name


def builtin_names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in resources.files("kubegpu.simulate.scenarios").iterdir()
                  if p.name.endswith(".yaml"))


def _index(part: str, items: list) -> int | None:
    """The list index a path part names (ASCII digits, within the list), else None."""
    if part.isascii() and part.isdigit() and len(part) <= 9 and int(part) < len(items):
        return int(part)
    return None


def _lookup(data: Any, path: list[str]) -> Any:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and _index(part, data) is not None:
            data = data[_index(part, data)]
        else:
            return None
    return data


def set_path(data: dict, key: str, value: Any, *, where: str) -> None:
    """Apply one `--set a.b.c=value` (list items by index)."""
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            index = _index(part, node)
            if index is None:
                raise InputError(f"no list item {shown(part)}", where=where, field=clip(key))
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise InputError(f"{clip('.'.join(parts[:i]))} is not a mapping", where=where, field=clip(key))


def parse_set(item: str) -> tuple[str, Any]:
    """`KEY=VALUE`, the value read as YAML by the one guarded loader (an alias bomb is refused)."""
    key, eq, text = item.partition("=")
    if not eq or not key.strip():
        raise InputError(f"{shown(item)}: expected key=value", where="--set")
    key = key.strip()
    if not text:
        return key, ""
    docs = load_yaml_documents(text, where=f"--set {clip(key)}")
    if len(docs) > 1:
        raise InputError("one YAML value, not several documents", where=f"--set {clip(key)}")
    return key, docs[0] if docs else None


def read_raw(name_or_path: str) -> tuple[dict, str, str, str | None]:
    """(raw mapping, source label, base dir, variant) of a file path or a built-in NAME[/VARIANT]."""
    path = Path(name_or_path)
    variant = None
    if path.exists() or path.is_symlink():  # a FIFO or a folder too: read_bounded says what is wrong
        source, base = str(path), str(path.parent)
        docs = load_yaml_file(source, max_bytes=limits.MAX_SCENARIO_BYTES)
    else:
        name, _, variant = name_or_path.partition("/")
        if name not in builtin_names():
            raise InputError(f"no such scenario file or built-in scenario (built-in: {', '.join(builtin_names())})",
                             where=shown(name_or_path, 200))
        text = resources.files("kubegpu.simulate.scenarios").joinpath(f"{name}.yaml").read_text()
        source, base = f"scenario:{name}", "."
        docs = load_yaml_documents(text, where=source)
        variant = variant or None
    docs = [d for d in docs if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("a scenario is one YAML mapping", where=source)
    return docs[0], source, base, variant


def load_scenario(name_or_path: str, overrides: list[str] = (), *, extra: dict[str, Any] | None = None,
                  base: dict[str, Any] | None = None) -> Scenario:
    """Read, apply `base` (e.g. a cluster's own state), the variant and `--set` overrides, validate;
    InputError names file, field and value."""
    raw, source, base_dir, variant = read_raw(name_or_path)
    sets: list[tuple[str, Any]] = list((base or {}).items())
    if variant:
        variants = raw.get("variants") or {}
        if variant not in variants:
            raise InputError(f"no variant {variant!r} (variants: {', '.join(variants) or 'none'})", where=source,
                             field="variants")
        sets.extend((variants[variant] or {}).items())
        raw.setdefault("name", source.removeprefix("scenario:"))
        raw["name"] = f"{raw['name']}/{variant}"
    sets.extend(parse_set(s) for s in overrides)
    sets.extend((extra or {}).items())
    for key, value in sets:
        set_path(raw, key, value, where=source)
    return validate(raw, source=source, base_dir=base_dir)


def validate(raw: dict, *, source: str, base_dir: str = ".") -> Scenario:
    check_plain(raw, where=source)
    # mappings of structs first, one entry at a time, so an error can name the entry's key
    for path, kind in ((("cluster", "node_groups"), NodeGroupSpec), (("workload", "priority_classes"), PriorityClassSpec)):
        entries = _lookup(raw, list(path))
        if isinstance(entries, dict):
            for key, value in entries.items():
                try:
                    msgspec.convert(value, kind, strict=False)
                except msgspec.ValidationError as err:
                    raise _validation_error(err, raw, source, prefix=[*path, str(key)]) from None
    try:
        spec = msgspec.convert(raw, ScenarioSpec, strict=False)
    except msgspec.ValidationError as err:
        raise _validation_error(err, raw, source) from None
    if not spec.name:
        spec = msgspec.structs.replace(spec, name=Path(source.removeprefix("scenario:")).stem)
    duration = seconds(spec.duration, where=source, field="duration")
    if duration <= 0 or duration > limits.MAX_DURATION_S:
        raise InputError(f"{shown(spec.duration)}: a run must last more than 0 s and at most 366 days", where=source,
                         field="duration")
    flags = dict(spec.autoscaler)
    provider = flags.pop("provider", "cluster-autoscaler")
    if provider not in ("cluster-autoscaler", "karpenter", "none"):
        raise InputError(f"unknown autoscaler provider {shown(provider)} (cluster-autoscaler, karpenter or none)",
                         where=source, field="autoscaler.provider")
    if provider == "karpenter":
        KarpenterSettings(flags, where=source)  # validated here, used by the engine
        config = autoscaler_config({}, where=source)
    else:
        config = autoscaler_config(flags, where=source)
        if provider == "cluster-autoscaler":
            limits.check_steps(duration, config.scan_interval, where=source, field="autoscaler.scan-interval")
    check_values(spec, source)
    check_work(spec, duration, source)
    return Scenario(spec=spec, source=source, duration_s=duration, provider=provider, autoscaler=config,
                    base_dir=base_dir)


def _validation_error(err: msgspec.ValidationError, raw: dict, source: str, prefix: list[str] = ()) -> InputError:
    text = str(err)
    message, _, path = text.partition(" - at `$")
    path = path.rstrip("`")
    parts = [*prefix, *(p for p in path.replace("[", ".").replace("]", "").split(".") if p)]
    if message.startswith("Object contains unknown field"):
        key = message.split("`")[1]
        return InputError(f"unknown key {shown(key)}", where=source, field=clip(".".join(parts + [key])))
    value = _lookup(raw, parts)
    return InputError(f"{shown(value)}: {message[0].lower()}{message[1:]}", where=source,
                      field=clip(".".join(parts)) or None)
