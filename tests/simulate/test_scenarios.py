"""The built-in scenarios reproduce the seed's numbers (the README's table comes from these runs)."""

import json

import pytest

from kubegpu.simulate.results import run_scenario
from kubegpu.simulate.scenario import builtin_names, load_scenario


@pytest.fixture(scope="module")
def flapping():
    return {v: run_scenario(load_scenario("seed-flapping" + v))
            for v in ("", "/delay-after-add-30m", "/unneeded-40m", "/per-second-billing", "/reserved-baseline")}


def test_builtin_scenarios_are_listed():
    assert {"seed-flapping", "seed-preemption"} <= set(builtin_names())


def test_seed_flapping_about_8_cycles_a_day_each_billed_a_whole_node_hour(flapping):
    base = flapping[""]
    gpu = base["autoscaler"]["groups"][0]
    assert 6 <= base["autoscaler"]["cycles_per_day"] <= 10
    assert gpu["cycles"] == base["autoscaler"]["cycles_per_day"]
    # hourly billing: every node added and removed again cost at least one whole node-hour
    added_hours = gpu["billed_node_hours"] - 5 * 24
    assert added_hours >= gpu["node_cycles"]
    assert gpu["node_cycles"] >= 5 * gpu["cycles"] - 8  # about 5 nodes per cycle


def test_delay_after_add_30m_falls_short_when_peaks_are_45_minutes_apart(flapping):
    assert flapping["/delay-after-add-30m"]["autoscaler"]["cycles_per_day"] >= 6


def test_unneeded_time_longer_than_the_gap_stops_flapping_and_cuts_p95_wait(flapping):
    fixed, base = flapping["/unneeded-40m"], flapping[""]
    assert fixed["autoscaler"]["cycles_per_day"] <= 2
    assert fixed["pods"]["wait_seconds"]["p95"] < base["pods"]["wait_seconds"]["p95"]


def test_per_second_billing_costs_only_the_real_lifetimes(flapping):
    per_s, hourly = flapping["/per-second-billing"], flapping[""]
    assert per_s["autoscaler"]["billed_node_hours"] == pytest.approx(per_s["autoscaler"]["node_hours"], abs=0.01)
    assert per_s["cost"]["total"] < hourly["cost"]["total"]
    assert per_s["autoscaler"]["cycles_per_day"] == hourly["autoscaler"]["cycles_per_day"]


def test_reserved_baseline_discounts_the_min_nodes(flapping):
    reserved, base = flapping["/reserved-baseline"], flapping[""]
    assert base["cost"]["by_group"]["gpu"] - reserved["cost"]["by_group"]["gpu"] == pytest.approx(5 * 24 * 40 * 0.4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seed_preemption_without_checkpoints_loses_the_whole_run(seed):
    r = run_scenario(load_scenario("seed-preemption", [f"seed={seed}"]))
    assert r["preemption"]["count"] == 1
    # the peak comes between 11 h and 12 h into the 12-hour, 16-GPU run
    assert 11 * 16 - 1 <= r["preemption"]["work_gpu_hours_lost"] <= 12 * 16
    assert r["preemption"]["restart_gpu_hours"] == pytest.approx(16 * 10 / 60, abs=1e-3)


def test_seed_preemption_with_hourly_checkpoints_loses_at_most_an_hour_about_half_on_average():
    lost = [run_scenario(load_scenario("seed-preemption/checkpoint-1h", [f"seed={s}"]))["preemption"]["work_gpu_hours_lost"]
            for s in range(1, 9)]
    assert all(0 <= x <= 16 for x in lost)
    assert 0.2 * 16 <= sum(lost) / len(lost) <= 0.8 * 16


def test_seed_preemption_separate_pools_no_preemption():
    r = run_scenario(load_scenario("seed-preemption/separate-pools"))
    assert r["preemption"]["count"] == 0 and r["preemption"]["gpu_hours_lost"] == 0
    assert r["pods"]["by_class"]["training"]["completed"] == 1


def test_same_scenario_and_seed_give_byte_identical_json():
    a = json.dumps(run_scenario(load_scenario("seed-preemption/checkpoint-1h")))
    b = json.dumps(run_scenario(load_scenario("seed-preemption/checkpoint-1h")))
    assert a == b
    c = json.dumps(run_scenario(load_scenario("seed-preemption/checkpoint-1h", ["seed=2"])))
    assert c != a
