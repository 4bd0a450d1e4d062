"""`kubegpu rebalance` modelled in the event simulation: it frees a node for a pod that waited too long,
moves only what defrag would move, and counts the work it throws away."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.errors import InputError
from kubegpu.simulate.rebalancer import RebalancerSettings
from kubegpu.simulate.scenario import load_scenario

from .scenario_helpers import run, scenario

GROUP = {"cpu": 96, "memory": "1152Gi", "gpus": 4, "gpu_model": "A100", "labels": {"pool": "gpu"}, "min": 2,
         "max": 2, "initial": 2, "autoscaled": False, "price_per_hour": 20}


def sweeps(*, pods=1, safe=True, priority="low"):
    return {"kind": "training", "name": "sweep", "count": 2, "pods": pods, "duration": "10h", "submit": "0s",
            "safe_to_evict": safe, "restart_overhead": "2m",
            "pod": {"gpus": 1, "cpu": 4, "memory": "8Gi", "priority_class": priority}}


BIG = {"kind": "training", "name": "big", "count": 1, "pods": 1, "duration": "1h", "submit": "1m",
       "pod": {"gpus": 4, "cpu": 8, "memory": "16Gi", "priority_class": "low"}}   # same priority: no preemption


def world(*, enabled: bool, generators, **rebalancer):
    return scenario(duration="12h", cluster__scheduler_policy="least-allocated",
                    cluster__node_groups={"gpu": GROUP}, autoscaler={},
                    workload__generators=generators,
                    rebalancer={"enabled": enabled, "interval": "5m", "min-pending-age": "10m", **rebalancer})


def big_wait(out) -> float:
    return out["pods"]["by_class"]["big"]["wait_seconds"]["mean"]


def test_a_4_gpu_pod_waiting_behind_two_spread_sweeps_gets_a_node_after_min_pending_age():
    # least-allocated spreads the two 1-GPU sweeps, one per 4-GPU node: the 4-GPU job fits nowhere
    _, off = run(world(enabled=False, generators=[sweeps(), BIG]))
    engine, on = run(world(enabled=True, generators=[sweeps(), BIG]))
    assert big_wait(off) > 9 * 3600                       # without: until a sweep ends (10 h)
    # with: the first round at which it has waited 10 min (rounds every 5 min; queued at 1 min) is at 15 min
    assert big_wait(on) == pytest.approx(14 * 60)
    assert on["rebalance"]["moves"] == 1 and on["rebalance"]["rounds"] >= 1
    # the moved sweep had no checkpoint: 15 min of 1 GPU lost, plus its 2 min restart
    assert on["rebalance"]["gpu_hours_lost"] == pytest.approx((15 + 2) / 60, abs=1e-3)
    moved = [e for e in engine.log if e["event"] == "rebalance-move"]
    assert len(moved) == 1 and any(e["event"] == "rebalance-placed" for e in engine.log)
    assert off["rebalance"]["stranded_gpus"]["mean"] > on["rebalance"]["stranded_gpus"]["mean"]


@pytest.mark.parametrize("blocker", [dict(pods=2), dict(safe=False), dict(priority="high")])
def test_gangs_pinned_pods_and_higher_priority_pods_are_never_moved(blocker):
    _, out = run(world(enabled=True, generators=[sweeps(**blocker), BIG]))
    assert out["rebalance"]["moves"] == 0


def test_max_moves_zero_moves_nothing_and_bad_settings_are_refused():
    _, out = run(world(enabled=True, generators=[sweeps(), BIG], **{"max-moves": 0}))
    assert out["rebalance"]["moves"] == 0
    with pytest.raises(InputError, match="unknown rebalancer setting"):
        run(world(enabled=True, generators=[sweeps(), BIG], **{"max-move": 1}))
    with pytest.raises(InputError):
        run(world(enabled=True, generators=[sweeps(), BIG], interval="0s"))


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "examples" / "rebalance").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_the_rebalance_example_scenarios_load_with_their_rebalancer_settings(path):
    sc = load_scenario(str(path), ["rebalancer.enabled=true"])
    settings = RebalancerSettings.from_spec(sc.spec.rebalancer, where=str(path))
    assert settings.enabled and settings.max_moves_per_node == 2
