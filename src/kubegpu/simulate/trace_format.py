"""Job traces: kubegpu's own format (CSV or JSON) and the Alibaba openb pod lists with their times.

kubegpu trace, one job per row / object (docs/simulate.md has the full table):
  submit            when the job is submitted: seconds or a Go duration ("90m")    required
  duration          running time needed ("12h")     - or -  work_gpu_seconds (divided by the job's GPUs)
  gpus, gpu_milli   GPUs per pod, milli-GPU of each (default 1000); cpu, memory as Kubernetes quantities
  pods              pods per gang (default 1, all-or-nothing)
  priority_class    a name from the scenario's workload.priority_classes
  node_selector     "k=v,k2=v2";  tolerations "key=value:Effect;key2"
  checkpoint_interval, restart_overhead, scheduling_timeout   durations
  name, class, kind (batch|service), safe_to_evict (true|false)
openb pod lists (`creation_time`, `scheduled_time`, `deletion_time` in seconds) become batch jobs
submitted at creation_time (shifted so the first is at 0) that run deletion - scheduled seconds.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import msgspec

from kubegpu.errors import InputError
from kubegpu.fragmentation.podlist import csv_rows, pod_task
from kubegpu.model.integers import shown, parse_int
from kubegpu.placement.task import MILLI, Task
from kubegpu.simulate.scenario_checks import quantity, seconds
from kubegpu.guards.bounded import read_bounded
from kubegpu.simulate.workload import BATCH, SERVICE, Job, PriorityClass, Selector

COLUMNS = ("name", "class", "kind", "submit", "duration", "work_gpu_seconds", "gpus", "gpu_milli", "cpu", "memory",
           "pods", "priority_class", "node_selector", "tolerations", "checkpoint_interval", "restart_overhead",
           "scheduling_timeout", "safe_to_evict")
OPENB_TIME_COLUMNS = ("creation_time", "scheduled_time", "deletion_time")
MAX_TRACE_BYTES = 4 * 1024**3
MAX_TRACE_INT = 2**40 - 1  # counts, milli-CPU and MiB: far beyond any pod, and bytes (MiB << 20) stay in int64


def _rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if path.suffix != ".json":  # the pod lists' CSV reader: bounded, streamed, strict UTF-8
        return [(f"{path}:{line}", row) for line, row in csv_rows(path, ())]
    data = read_bounded(path, where=str(path), max_bytes=MAX_TRACE_BYTES)  # a FIFO or /dev/zero ends too
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", where=str(path)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err.msg} (line {err.lineno})", where=str(path)) from None
    except ValueError as err:  # an integer beyond the interpreter's digit limit
        raise InputError(f"not valid JSON: {' '.join(str(err).split())[:120]}", where=str(path)) from None
    if isinstance(data, dict):
        data = data.get("jobs")
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise InputError("expected a list of job objects (or {\"jobs\": [...]})", where=str(path))
    return [(f"{path}[{i}]", row) for i, row in enumerate(data)]


def _num(row: dict, key: str, where: str, default: float, *, integer: bool = False) -> float:
    value = row.get(key)
    if value in (None, ""):
        return default
    if integer:
        if isinstance(value, float) and value.is_integer():  # JSON traces may write 2.0
            value = int(value)
        return parse_int(value if isinstance(value, (str, int)) else repr(value), where=where, field=key,
                         lo=0, hi=MAX_TRACE_INT)
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{shown(str(value))} is not a number", where=where, field=key) from None
    if not math.isfinite(out):
        raise InputError(f"{shown(str(value))} is not a finite number", where=where, field=key)
    if out < 0:
        raise InputError(f"{value!r} is negative", where=where, field=key)
    return out


@functools.lru_cache(maxsize=4096)
def _quantity(text: str, where: str, field: str) -> float:
    return quantity(text, where=where, field=field)


@functools.lru_cache(maxsize=4096)
def _seconds(text: str, where: str, field: str) -> float:
    return seconds(text, where=where, field=field)


def load_trace(path: str | Path, *, classes: dict[str, PriorityClass], default_class: str = "trace") -> list[Job]:
    p = Path(path)
    rows = _rows(p)
    if rows and all(c in rows[0][1] for c in OPENB_TIME_COLUMNS):
        return _openb(rows)
    jobs = []
    for where, row in rows:
        unknown = set(row) - set(COLUMNS)
        if unknown:
            key = sorted(unknown)[0]
            raise InputError(f"unknown column {key!r}", where=where, field=key)
        if row.get("submit") in (None, ""):
            raise InputError("missing submit time", where=where, field="submit")
        submit = seconds(row["submit"], where=where, field="submit")
        gpus = int(_num(row, "gpus", where, 0, integer=True))
        milli = int(_num(row, "gpu_milli", where, MILLI, integer=True))
        if gpus and not 0 < milli <= MILLI:
            raise InputError(f"{milli!r} is not in 1..1000", where=where, field="gpu_milli")
        pods = int(_num(row, "pods", where, 1, integer=True))
        if pods < 1:
            raise InputError(f"{pods!r}: a job has at least one pod", where=where, field="pods")
        kind = str(row.get("kind") or BATCH)
        if kind not in (BATCH, SERVICE):
            raise InputError(f"{kind!r} is not batch or service", where=where, field="kind")
        if row.get("duration") not in (None, ""):
            duration = seconds(row["duration"], where=where, field="duration")
        elif row.get("work_gpu_seconds") not in (None, ""):
            duration = _num(row, "work_gpu_seconds", where, 0) / max(pods * gpus * milli / MILLI, 1e-9)
        else:
            raise InputError("needs duration or work_gpu_seconds", where=where, field="duration")
        pc = str(row.get("priority_class") or "")
        if pc and pc not in classes:
            raise InputError(f"unknown priority class {pc!r}", where=where, field="priority_class")
        selector = tuple(sorted(tuple(kv.split("=", 1)) for kv in str(row.get("node_selector") or "").split(",")
                                if "=" in kv))
        tolerations = tuple(sorted(t for t in str(row.get("tolerations") or "").split(";") if t))
        safe = str(row.get("safe_to_evict", "true")).lower()
        if safe not in ("true", "false", ""):
            raise InputError(f"{safe!r} is not true or false", where=where, field="safe_to_evict")
        try:
            cpu = _quantity(str(row.get("cpu") or 1), str(p), "cpu")
            mem = _quantity(str(row.get("memory") or "1Gi"), str(p), "memory")
        except InputError as err:
            raise InputError(err.message, where=where, field=err.field) from None
        task = Task(cpu_milli=int(round(cpu * 1000)), mem_bytes=int(mem),
                    num_gpu=gpus, gpu_milli=milli if gpus else 0)
        name = str(row.get("name") or f"job-{len(jobs)}")
        job = Job(id=-1, name=name, cls=str(row.get("class") or default_class), submit=submit, task=task, pods=pods,
                  kind=kind, work=duration, end=submit + duration,
                  priority=classes.get(pc, PriorityClass(pc)), selector=Selector(selector, tolerations),
                  checkpoint_interval=_row_seconds(row, "checkpoint_interval", where),
                  restart_overhead=_row_seconds(row, "restart_overhead", where),
                  scheduling_timeout=_row_seconds(row, "scheduling_timeout", where),
                  safe_to_evict=safe != "false", origin=where)
        jobs.append(job)
    return sorted(jobs, key=lambda j: j.submit)


def _row_seconds(row: dict, key: str, where: str) -> float:
    try:
        return _seconds(str(row.get(key) or 0), "", key)
    except InputError as err:
        raise InputError(err.message, where=where, field=key) from None


def _openb(rows: list[tuple[str, dict[str, Any]]]) -> list[Job]:
    """openb pods as batch jobs: submitted at creation_time, running deletion - scheduled seconds."""
    out = []
    first = None
    for where, row in rows:
        created = _num(row, "creation_time", where, 0)
        scheduled = _num(row, "scheduled_time", where, 0)
        deleted = _num(row, "deletion_time", where, 0)
        if deleted < max(created, scheduled):
            raise InputError(f"deletion_time {deleted:g} is before creation/scheduling", where=where,
                             field="deletion_time")
        first = created if first is None else min(first, created)
        # the pod columns as the pod-list reader reads them; the job carries the name
        task = msgspec.structs.replace(pod_task(row, where=where), name="")
        start = scheduled if scheduled > 0 else created
        out.append(Job(id=-1, name=str(row.get("name") or f"pod-{len(out)}"), cls="openb", submit=created, task=task,
                       work=max(1.0, deleted - start), origin=where))
    for job in out:
        job.submit -= first or 0.0
    return sorted(out, key=lambda j: j.submit)
