"""The values of a scenario checked one by one: types YAML should not give, ranges, and the work asked for.

`validate` in `scenario` converts the file to structs; these checks then name the field and the
value of anything out of range, and refuse what would run until killed (bounds in `limits`).
Generators are told apart by their `kind` tag, so this module needs no scenario types.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from kubegpu.errors import InputError, QuantityError
from kubegpu.model.quantity import parse_quantity
from kubegpu.model.timeutil import parse_duration
from kubegpu.placement.registry import POLICY_NAMES
from kubegpu.simulate import limits

# `spec` below is a simulate.scenario.ScenarioSpec; it is not imported, even for type checking,
# because scenario imports these checks (the layer test refuses type-level cycles too).
ScenarioSpec = Any


def shown(value: Any, width: int = 60) -> str:
    """`repr(value)` cut to `width` characters, for one-line messages (a 5,000-digit int included)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond the interpreter's digit limit
        text = f"<a number of {value.bit_length():,} bits>"
    return text if len(text) <= width else text[:width - 3] + "..."


def clip(text: str, width: int = 120) -> str:
    """A field path or name cut to `width` characters for a one-line message."""
    return text if len(text) <= width else text[:width - 3] + "..."


def check_plain(data: Any, *, where: str, path: tuple[str, ...] = ()) -> None:
    """Refuse YAML values that are not JSON data (a date, a timestamp, !!binary, !!set), naming the field.

    YAML reads `2024-01-01` as a date: quoted, it is the string the user meant.
    """
    stack = [(data, path)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                stack.extend(((key, at), (item, (*at, str(key)))))
        elif isinstance(value, list):
            stack.extend((item, (*at, str(i))) for i, item in enumerate(value))
        elif isinstance(value, (datetime.date, datetime.datetime)):
            raise InputError(f"{value.isoformat()} is a date; quote it to make it a string", where=where,
                             field=clip(".".join(at)) or None)
        elif not (value is None or isinstance(value, (str, int, float, bool))):
            raise InputError(f"a YAML {type(value).__name__} is not a scenario value", where=where,
                             field=clip(".".join(at)) or None)


def seconds(value: Any, *, where: str, field: str, allow_empty: bool = False) -> float:
    """A duration field in seconds; negative or unreadable values are input errors."""
    if allow_empty and value == "":
        return -1.0
    if isinstance(value, bool) or (isinstance(value, int) and value.bit_length() > 64):
        out = None
    elif isinstance(value, (int, float)):
        out = float(value)
    else:
        out = parse_duration(str(value), bare_seconds=True)
    if out is None or out < 0 or not math.isfinite(out):
        raise InputError(f"{shown(value)} is not a non-negative duration", where=where, field=field)
    return out


def quantity(value: Any, *, where: str, field: str) -> float:
    """A non-negative Kubernetes quantity (`model.quantity`'s grammar) as a float."""
    try:
        q = parse_quantity(value)
    except QuantityError as err:
        raise InputError(err.message, where=where, field=field) from None
    if q < 0:
        raise InputError(f"{shown(value)} is negative", where=where, field=field)
    return float(q)


def _kind(generator: Any) -> str:
    return type(generator).__struct_config__.tag


def _check_names(spec: ScenarioSpec, source: str) -> None:
    names = [("name", spec.name), *((f"cluster.node_groups.{k}", k) for k in spec.cluster.node_groups),
             *((f"workload.priority_classes.{k}", k) for k in spec.workload.priority_classes),
             *((f"workload.generators.{i}.name", g.name) for i, g in enumerate(spec.workload.generators))]
    for field, name in names:
        if len(name) > limits.MAX_NAME_CHARS:
            raise InputError(f"{shown(name, 40)} is {len(name):,} characters long (at most {limits.MAX_NAME_CHARS})",
                             where=source, field=clip(field))
    if len(spec.description) > limits.MAX_DESCRIPTION_CHARS:
        raise InputError(f"{len(spec.description):,} characters (at most {limits.MAX_DESCRIPTION_CHARS:,})",
                         where=source, field="description")
    if not 0 <= spec.seed <= limits.SEED_MAX:
        raise InputError(f"{shown(spec.seed)} is not a seed (0 to {limits.SEED_MAX})", where=source, field="seed")


def _finite(value: float, low: float, high: float, *, where: str, field: str, high_open: bool = False) -> None:
    if not (math.isfinite(value) and low <= value and (value < high if high_open else value <= high)):
        raise InputError(f"{shown(value)} is not in [{low:g}, {high:g}{')' if high_open else ']'}", where=where,
                         field=field)


def _weights(weights: dict[str, float], low: int, high: int, *, where: str, field: str) -> None:
    """`gpus` / `gang_pods` of a poisson generator: whole-number keys in [low, high], finite weights, sum > 0."""
    for key, weight in weights.items():
        if not (key.isascii() and key.isdigit() and low <= int(key) <= high):
            raise InputError(f"key {shown(key)} is not a whole number from {low} to {high:,}", where=where, field=field)
        _finite(weight, 0, math.inf, where=where, field=f"{field}.{key}")
    if weights and not sum(weights.values()) > 0:
        raise InputError("the weights add up to 0", where=where, field=field)


def check_values(spec: ScenarioSpec, source: str) -> None:
    """Every field in its range, or an InputError naming it."""
    _check_names(spec, source)
    if spec.cluster.scheduler_policy not in POLICY_NAMES:
        raise InputError(f"unknown policy {shown(spec.cluster.scheduler_policy)}; choose from {', '.join(POLICY_NAMES)}",
                         where=source, field="cluster.scheduler_policy")
    if not spec.cluster.node_groups:
        raise InputError("a scenario needs at least one node group", where=source, field="cluster.node_groups")
    for name, g in spec.cluster.node_groups.items():
        f = f"cluster.node_groups.{name}"
        for key in ("min", "max", "initial", "gpus", "reserved", "max_pods"):
            if getattr(g, key) < 0:
                raise InputError(f"{shown(getattr(g, key))} is negative", where=source, field=f"{f}.{key}")
        if not g.min <= g.initial <= g.max:
            raise InputError(f"need min <= initial <= max, got {shown(g.min, 20)} <= {shown(g.initial, 20)} <= "
                             f"{shown(g.max, 20)}", where=source, field=f"{f}.initial")
        _finite(g.price_per_hour, 0, math.inf, where=source, field=f"{f}.price_per_hour")
        _finite(g.provision_failure_rate, 0, 1, where=source, field=f"{f}.provision_failure_rate", high_open=True)
        for key in ("provision_time", "provision_jitter", "gpu_ready_lag"):
            seconds(getattr(g, key), where=source, field=f"{f}.{key}")
        limits.at_most(g.gpus, limits.MAX_GPUS_PER_NODE, "GPUs on a node", where=source, field=f"{f}.gpus")
        limits.at_most(g.max_pods, limits.MAX_PODS_PER_NODE, "pods on a node", where=source, field=f"{f}.max_pods")
        limits.at_most(quantity(g.cpu, where=source, field=f"{f}.cpu"), limits.MAX_NODE_CPU, "cores", where=source,
                       field=f"{f}.cpu")
        limits.at_most(quantity(g.memory, where=source, field=f"{f}.memory"), limits.MAX_NODE_MEMORY, "bytes",
                       where=source, field=f"{f}.memory")
    classes = spec.workload.priority_classes
    for name, c in classes.items():
        if not -(2**31) <= c.value <= 10**9:  # a PriorityClass's value range (system classes above 1e9 excluded)
            raise InputError(f"{shown(c.value)} is not in -2147483648..1000000000", where=source,
                             field=f"workload.priority_classes.{name}.value")
    for i, gen in enumerate(spec.workload.generators):
        f = f"workload.generators.{i}"
        if gen.pod.priority_class and gen.pod.priority_class not in classes:
            raise InputError(f"unknown priority class {shown(gen.pod.priority_class)}", where=source,
                             field=f"{f}.pod.priority_class")
        if gen.pod.gpus < 0:
            raise InputError(f"{shown(gen.pod.gpus)} is negative", where=source, field=f"{f}.pod.gpus")
        limits.at_most(gen.pod.gpus, limits.MAX_GPUS_PER_NODE, "GPUs per pod", where=source, field=f"{f}.pod.gpus")
        limits.at_most(quantity(gen.pod.cpu, where=source, field=f"{f}.pod.cpu"), limits.MAX_NODE_CPU, "cores",
                       where=source, field=f"{f}.pod.cpu")
        limits.at_most(quantity(gen.pod.memory, where=source, field=f"{f}.pod.memory"), limits.MAX_NODE_MEMORY,
                       "bytes", where=source, field=f"{f}.pod.memory")
        if not 0 < gen.pod.gpu_milli <= 1000:
            raise InputError(f"{shown(gen.pod.gpu_milli)} is not in 1..1000", where=source, field=f"{f}.pod.gpu_milli")
        for key in gen.__struct_fields__:
            value = getattr(gen, key)
            if key in ("submit", "every", "duration", "checkpoint_interval", "restart_overhead", "scheduling_timeout",
                       "first_peak", "period", "peak_duration", "step", "median_duration", "start", "stop",
                       "peak_start_jitter"):
                seconds(value, where=source, field=f"{f}.{key}", allow_empty=key == "stop")
            elif isinstance(value, float):
                _finite(value, 0, math.inf, where=source, field=f"{f}.{key}")
            elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
                raise InputError(f"{shown(value)} is negative", where=source, field=f"{f}.{key}")
        if _kind(gen) == "poisson":
            _finite(gen.sigma, 0, limits.MAX_SIGMA, where=source, field=f"{f}.sigma")
            _weights(gen.gpus, 0, limits.MAX_GPUS_PER_NODE, where=source, field=f"{f}.gpus")
            _weights(gen.gang_pods, 1, limits.MAX_GANG_PODS, where=source, field=f"{f}.gang_pods")
    b = spec.billing
    for key in ("granularity", "minimum"):
        seconds(getattr(b, key), where=source, field=f"billing.{key}")
    if seconds(b.granularity, where=source, field="billing.granularity") <= 0:
        raise InputError(f"{shown(b.granularity)} must be positive", where=source, field="billing.granularity")
    _finite(b.reserved_discount, 0, 1, where=source, field="billing.reserved_discount", high_open=True)
    for i, tier in enumerate(b.tiers):
        seconds(tier.after, where=source, field=f"billing.tiers.{i}.after")
        _finite(tier.factor, 0, math.inf, where=source, field=f"billing.tiers.{i}.factor")


def check_work(spec: ScenarioSpec, duration: float, source: str) -> None:
    """Refuse what would run until killed (limits.py): node slots, replicas, gangs, arrivals, loop counts."""
    slots = sum(max(g.max, g.initial) for g in spec.cluster.node_groups.values())
    limits.at_most(slots, limits.MAX_NODES, "node slots (the sum of every group's max)", where=source,
                   field="cluster.node_groups")
    jobs = pods = 0.0
    for i, gen in enumerate(spec.workload.generators):
        f = f"workload.generators.{i}"
        if _kind(gen) == "inference-peaks":
            limits.at_most(gen.base_replicas + gen.peak_replicas, limits.MAX_REPLICAS, "replicas", where=source,
                           field=f"{f}.peak_replicas")
            limits.at_most(gen.jitter, limits.MAX_REPLICAS, "replicas of noise", where=source, field=f"{f}.jitter")
            limits.at_most(gen.peaks_per_day, limits.MAX_PEAKS_PER_DAY, "peaks a day", where=source,
                           field=f"{f}.peaks_per_day")
            limits.check_steps(duration, seconds(gen.step, where=source, field=f"{f}.step"), where=source,
                               field=f"{f}.step")
        elif _kind(gen) == "training":
            limits.at_most(gen.pods, limits.MAX_GANG_PODS, "pods in a gang", where=source, field=f"{f}.pods")
            jobs += gen.count
            pods += gen.count * gen.pods
        else:
            start = seconds(gen.start, where=source, field=f"{f}.start")
            stop = duration if gen.stop == "" else min(duration, seconds(gen.stop, where=source, field=f"{f}.stop"))
            expected = max(0.0, stop - start) / 3600.0 * gen.rate_per_hour
            limits.at_most(round(expected), limits.MAX_JOBS, "jobs expected in the run", where=source,
                           field=f"{f}.rate_per_hour")
            jobs += expected
            gang = gen.gang_pods or {"1": 1.0}
            pods += expected * sum(int(k) * w for k, w in gang.items()) / sum(gang.values())
        limits.at_most(round(jobs), limits.MAX_JOBS, "jobs in the run (all generators)", where=source, field=f)
        limits.at_most(round(pods), limits.MAX_PODS, "pods of jobs in the run (all generators)", where=source,
                       field=f)


