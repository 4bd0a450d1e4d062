"""Run a scenario and summarise it in the stable JSON shape of `kubegpu simulate run -o json`.

A scale cycle is the group growing and later shrinking again: a run of scale-ups followed by a
scale-down counts once, however many nodes moved (`groups[].node_cycles` counts nodes that were
added and later removed). Floats are
rounded so the same scenario and seed give byte-identical JSON wherever they run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kubegpu.simulate.billing import Billing
from kubegpu.simulate.engine import Engine
from kubegpu.simulate.generators import build_jobs
from kubegpu.simulate.scenario import Scenario


def _r(x: float, nd: int = 4) -> float:
    return float(round(float(x), nd)) + 0.0


def wait_summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "p95": 0.0, "p99": 0.0}
    a = np.asarray(values, dtype=float)
    return {"mean": _r(a.mean(), 3), "p95": _r(np.percentile(a, 95), 3), "p99": _r(np.percentile(a, 99), 3)}


def scale_cycles(ups: list[tuple], downs: list[tuple]) -> int:
    """Times the group grew and then shrank again: each run of scale-ups followed by a scale-down."""
    moves = sorted([(t, 0) for t, *_ in ups] + [(t, 1) for t, *_ in downs])
    cycles, grown = 0, False
    for _, down in moves:
        if not down:
            grown = True
        elif grown:
            cycles += 1
            grown = False
    return cycles


def simulate(scenario: Scenario, *, record_events: bool = False, running: list | None = None,
             on_progress: Callable[[float], None] | None = None) -> Engine:
    """Run the scenario; `running` are jobs already running in a source cluster (submitted at 0);
    `on_progress(simulated seconds)` about every 1 % of the run."""
    return Engine(scenario, [*(running or []), *build_jobs(scenario)], record_events=record_events).run(on_progress)


def summarise(engine: Engine) -> dict[str, Any]:
    sc, end = engine.scenario, engine.end
    billing = Billing.from_spec(sc.spec.billing, where=sc.source)
    days = end / 86400.0
    groups_out = []
    total_cost = 0.0
    by_group_cost: dict[str, float] = {}
    node_h = billed_h = 0.0
    cycles_total = 0
    gpu_paid_s = 0.0
    ca = engine.autoscaler
    for g in engine.cluster.groups:
        recs = [r for r in engine.cluster.records if r.group == g.name]
        cost = billed = life = 0.0
        for r in recs:
            b, c = billing.node_cost(r, g.spec.price_per_hour, end)
            billed += b
            cost += c
            life += (min(r.deleted if r.deleted is not None else end, end) - r.created)
        gpu_paid_s += billed * g.gpus
        removed = [r for r in recs if r.deleted is not None and r.scale_up >= 0 and not r.failed]
        ups = [u for u in ca.scale_ups if u[1] == g.name] if ca else []
        downs = [d for d in ca.scale_downs if d[1] == g.name] if ca else []
        cycles = scale_cycles(ups, downs)
        groups_out.append({"name": g.name, "gpus_per_node": g.gpus, "min": g.spec.min, "max": g.spec.max,
                           "scale_ups": len(ups), "nodes_added": sum(u[2] for u in ups),
                           "scale_downs": len(downs), "nodes_removed": sum(d[2] for d in downs),
                           "cycles": cycles, "node_cycles": len(removed),
                           "node_hours": _r(life / 3600), "billed_node_hours": _r(billed / 3600),
                           "cost": _r(cost, 2)})
        by_group_cost[g.name] = _r(cost, 2)
        total_cost += cost
        node_h += life / 3600
        billed_h += billed / 3600
        cycles_total += cycles
    st = engine.stats
    all_waits = [w for ws in st.waits.values() for w in ws]
    classes = sorted(set(st.waits) | set(st.completed) | set(st.timed_out) | {j.cls for j in engine.jobs})
    by_class = {c: {"pods": len(st.waits.get(c, [])), "wait_seconds": wait_summary(st.waits.get(c, [])),
                    "completed": st.completed.get(c, 0), "timed_out": st.timed_out.get(c, 0)} for c in classes}
    return with_rebalance(engine, {
        "scenario": sc.name,
        "seed": sc.spec.seed,
        "duration_s": _r(end, 3),
        "autoscaler": {"provider": sc.provider, "scale_ups": len(ca.scale_ups) if ca else 0,
                       "scale_downs": len(ca.scale_downs) if ca else 0,
                       "cycles_per_day": _r(cycles_total / days, 3), "node_hours": _r(node_h),
                       "billed_node_hours": _r(billed_h), "groups": groups_out},
        "cost": {"total": _r(total_cost, 2), "currency": billing.currency, "by_group": by_group_cost},
        "pods": {"wait_seconds": wait_summary(all_waits), "by_class": by_class},
        "preemption": {"count": st.preemptions, "gpu_hours_lost": _r((st.lost_work_gpu_s + st.restart_gpu_s) / 3600),
                       "work_gpu_hours_lost": _r(st.lost_work_gpu_s / 3600),
                       "restart_gpu_hours": _r(st.restart_gpu_s / 3600),
                       "scale_down_evictions": st.evictions_by_scale_down},
        "utilization": {"allocation_mean": _r(st.alloc_gpu_milli_s / 1000 / st.ready_gpu_s if st.ready_gpu_s else 0.0),
                        "effective": _r(st.useful_gpu_s / gpu_paid_s if gpu_paid_s else 0.0)},
    })


def with_rebalance(engine: Engine, out: dict[str, Any]) -> dict[str, Any]:
    """Scenarios with a `rebalancer` key (on or off) also report stranded GPUs, the waits of GPU pods
    and the rebalancer's work, so a run with it and one without compare field by field."""
    if not engine.scenario.spec.rebalancer:
        return out
    st = engine.stranded
    gpu_classes = {j.cls for j in engine.jobs if j.task.wants_gpu}
    gpu_waits = [w for c in sorted(gpu_classes) for w in engine.stats.waits.get(c, [])]
    out["rebalance"] = {**(engine.rebalancer.summary() if engine.rebalancer is not None else
                           {"rounds": 0, "moves": 0, "gpu_hours_lost": 0.0}),
                        "gpu_pod_wait_seconds": wait_summary(gpu_waits),
                        "stranded_gpus": {"mean": _r(float(np.mean(st)) if st else 0.0, 3),
                                          "p95": _r(float(np.percentile(st, 95)) if st else 0.0, 3),
                                          "size": engine.stranded_size}}
    return out


def run_scenario(scenario: Scenario) -> dict[str, Any]:
    return summarise(simulate(scenario))
