"""cluster-autoscaler's loop, pinned behaviour by behaviour (names follow upstream's code/FAQ)."""

import json

import numpy as np
import pytest

from kubegpu.simulate.autoscaler.config import autoscaler_config, flags_from_args
from kubegpu.errors import InputError

from .scenario_helpers import burst, run, scenario, times


def test_gpu_pods_wait_for_the_30s_unschedulable_pod_with_gpu_time_buffer():
    # static_autoscaler.go: unschedulablePodWithGpuTimeBuffer = 30 s; pods arrive at 600 s, scan every 10 s
    engine, _ = run(scenario(workload__generators=[burst(at="10m")]))
    assert times(engine, "scale-up")[0] == 630.0


def test_cpu_pods_wait_only_the_2s_unschedulable_pod_time_buffer():
    engine, _ = run(scenario(workload__generators=[burst(at="10m", gpus=0)],
                             cluster__node_groups__gpu__gpus=0))
    assert times(engine, "scale-up")[0] == 610.0


def test_new_pod_scale_up_delay_filters_young_pods():
    engine, _ = run(scenario(workload__generators=[burst(at="10m")], **{"autoscaler__new-pod-scale-up-delay": "2m"}))
    assert times(engine, "scale-up")[0] == 720.0


def test_upcoming_nodes_count_as_capacity_no_second_scale_up_for_the_same_pods():
    # addUpcomingNodesToClusterSnapshot: 8 one-GPU pods -> one 8-GPU node, and no more while it boots
    engine, result = run(scenario(workload__generators=[burst(at="10m", replicas=8)]))
    ups = [e for e in engine.log if e["event"] == "scale-up"]
    assert [(u["nodes"], u["pods"]) for u in ups] == [(1, 8)]


def test_binpacking_estimator_first_fit_decreasing_counts_nodes():
    engine, _ = run(scenario(workload__generators=[burst(at="10m", replicas=20)]))
    ups = [e for e in engine.log if e["event"] == "scale-up"]
    assert ups[0]["nodes"] == 3  # ceil(20 / 8)


def test_max_size_caps_scale_up():
    engine, _ = run(scenario(workload__generators=[burst(at="10m", replicas=40)], cluster__node_groups__gpu__max=2))
    assert sum(e["nodes"] for e in engine.log if e["event"] == "scale-up") == 2


def test_max_nodes_total_caps_scale_up():
    engine, _ = run(scenario(workload__generators=[burst(at="10m", replicas=40)], **{"autoscaler__max-nodes-total": 3}))
    assert sum(e["nodes"] for e in engine.log if e["event"] == "scale-up") == 3


def _down_after_burst(**sets):
    # burst 600 s..2400 s; node created at 630, ready at 870 (4 m); pods leave at 2400
    engine, result = run(scenario(workload__generators=[burst(at="10m", length="30m")], **sets))
    return engine, result


def test_unneeded_timer_needs_since_plus_unneeded_time_strictly_before_now():
    # unneeded/nodes.go: !since.Add(threshold).Before(now) => NotUnneededLongEnough. The node becomes
    # unneeded at the 2400 s scan (the pods end first at equal times); 2400 + 600 = 3000 is not
    # before 3000, so deletion happens one scan later, at 3010.
    engine, _ = _down_after_burst()
    assert times(engine, "scale-down") == [3010.0]


def test_scale_down_delay_after_add_is_measured_from_the_scale_up():
    # cooldown until 630 + 3600; the unneeded timer keeps running during cooldown, so deletion comes
    # at the first scan after the cooldown ends (4230 is not < 4230 -> not in cooldown)
    engine, _ = _down_after_burst(**{"autoscaler__scale-down-delay-after-add": "60m"})
    assert times(engine, "scale-down") == [4230.0]


def test_local_delay_type_hides_candidates_so_the_timer_starts_after_the_cooldown():
    # --scale-down-delay-type-local: candidates of a group in cooldown are removed, so the timer starts
    # at the first scan after the cooldown (4230) and runs the full 10 minutes from there
    engine, _ = _down_after_burst(**{"autoscaler__scale-down-delay-after-add": "60m",
                                     "autoscaler__scale-down-delay-type-local": True})
    assert times(engine, "scale-down") == [4230.0 + 610.0]


def test_cluster_wide_delay_after_add_a_scale_up_in_any_group_delays_every_group():
    other = {"cpu": 8, "memory": "32Gi", "labels": {"pool": "cpu"}, "min": 0, "max": 10, "provision_time": "1m",
             "provision_jitter": "0s"}
    cpu_burst = burst("cpu", at="45m", replicas=4, gpus=0, length="3h")
    cpu_burst["pod"]["cpu"] = 6
    cpu_burst["pod"]["node_selector"] = {"pool": "cpu"}
    gpu_burst = burst(at="10m", length="30m")
    gpu_burst["pod"]["node_selector"] = {"pool": "gpu"}
    common = {"cluster__node_groups__cpu": other, "workload__generators": [gpu_burst, cpu_burst]}
    engine, _ = run(scenario(**common))
    gpu_down_global = [e["t"] for e in engine.log if e["event"] == "scale-down" and e["group"] == "gpu"]
    engine, _ = run(scenario(**common, **{"autoscaler__scale-down-delay-type-local": True}))
    gpu_down_local = [e["t"] for e in engine.log if e["event"] == "scale-down" and e["group"] == "gpu"]
    # the CPU scale-up at 2702 s (2 s buffer) puts every group in cooldown until 3302 in global mode, so
    # the GPU node (unneeded since 2400) goes at the first scan after that; in local mode it goes at 3010
    cpu_up = [e["t"] for e in engine.log if e["event"] == "scale-up" and e["group"] == "cpu"][0]
    assert gpu_down_global == [min(t for t in range(0, 20000, 10) if t >= cpu_up + 600)]
    assert gpu_down_local == [3010.0]


@pytest.mark.parametrize("used, threshold, candidate", [(4, 0.5, True), (5, 0.5, False), (2, 0.25, True),
                                                      (3, 0.25, False)])
def test_gpu_node_utilization_at_exactly_the_threshold_is_a_candidate(used, threshold, candidate):
    # eligibility.go: utilization > threshold => NotUnderutilized; a GPU node counts only GPU requests
    from kubegpu.simulate.autoscaler.scaledown.eligibility import underutilized

    full = burst("full", at="0s", replicas=8, length="6h")
    part = burst("part", at="0s", replicas=used, length="6h")
    sc = scenario(workload__generators=[full, part], cluster__node_groups__gpu__initial=2,
                  **{"autoscaler__scale-down-gpu-utilization-threshold": threshold})
    engine, _ = run(sc)
    state = engine.cluster.state
    partly_used = np.asarray([s for s in np.flatnonzero(engine.cluster.status == 2) if state.gpu_free[s] != 0])
    assert state.gpu_free[partly_used[0]] == (8 - used) * 1000
    assert bool(underutilized(state, partly_used, engine.autoscaler.config)[0]) is candidate
    # its pods cannot move (the other node is full), so the node stays either way
    assert times(engine, "scale-down") == []


@pytest.mark.parametrize("min_size, downs", [(0, [610.0]), (1, [610.0]), (2, [])])
def test_node_group_min_size_reached_keeps_nodes(min_size, downs):
    # two empty nodes at start; no cooldown at start (lastScaleUp = now - 1 h); min size caps deletions
    engine, result = run(scenario(cluster__node_groups__gpu__initial=2, cluster__node_groups__gpu__min=min_size))
    assert times(engine, "scale-down") == downs
    assert result["autoscaler"]["groups"][0]["nodes_removed"] == 2 - min_size


def test_not_safe_to_evict_pods_block_scale_down():
    b = burst(at="10m", length="30m")
    keeper = {"kind": "training", "name": "train", "pods": 1, "duration": "5h", "submit": "11m",
              "pod": {"gpus": 1, "cpu": 1, "memory": "1Gi", "priority_class": "low"}}
    engine, _ = run(scenario(workload__generators=[b, keeper]))
    finished = times(engine, "finish")[0]
    downs = times(engine, "scale-down")
    # 9 pods -> 2 nodes; the one without the training goes after the burst, the other only after it finishes
    assert downs[0] == 3010.0 and len(downs) == 2 and downs[1] > finished
    assert [e for e in engine.log if e["event"] == "evict"] == []


def test_node_not_registered_within_max_node_provision_time_backs_off_the_group():
    sc = scenario(workload__generators=[burst(at="10m", length="3h")],
                  cluster__node_groups__gpu__provision_failure_rate=0.999999,
                  **{"autoscaler__max-node-provision-time": "15m"})
    engine, _ = run(sc)
    timeouts = [e for e in engine.log if e["event"] == "provision-timeout"]
    assert timeouts[0]["t"] == 630.0 + 900.0 + 10.0 and timeouts[0]["backoff_s"] == 300.0
    ups = times(engine, "scale-up")
    assert ups[1] >= timeouts[0]["t"] + 300.0
    assert [t["backoff_s"] for t in timeouts][:3] == [300.0, 600.0, 1200.0]


def test_expendable_pods_do_not_trigger_scale_up():
    sc = scenario(workload__generators=[burst(at="10m", priority="low")],
                  workload__priority_classes__low__value=-20)
    engine, _ = run(sc)
    assert times(engine, "scale-up") == []


def test_flags_from_the_deployment_args_and_unknown_flags():
    flags = flags_from_args(["./cluster-autoscaler", "--cloud-provider=aws", "--scale-down-delay-after-add=30m",
                             "--expander", "priority,least-waste", "--scale-down-delay-type-local"])
    cfg = autoscaler_config(flags, where="deploy")
    assert cfg.scale_down_delay_after_add == 1800 and cfg.expander == "priority,least-waste"
    assert cfg.scale_down_delay_type_local is True
    with pytest.raises(InputError, match="scale-down-delay-aftr-add"):
        autoscaler_config({"scale-down-delay-aftr-add": "1m"}, where="x")
    with pytest.raises(InputError, match="least-wasted"):
        autoscaler_config({"expander": "least-wasted"}, where="x")


def test_defaults_are_upstreams():
    cfg = autoscaler_config({}, where="x")
    assert (cfg.scan_interval, cfg.scale_down_unneeded_time, cfg.scale_down_delay_after_add,
            cfg.scale_down_delay_after_delete, cfg.scale_down_delay_after_failure, cfg.scale_down_unready_time,
            cfg.max_node_provision_time, cfg.scale_down_gpu_utilization_threshold, cfg.expander,
            cfg.max_scale_down_parallelism, cfg.max_drain_parallelism) == (
        10, 600, 600, 0, 180, 1200, 900, 0.5, "least-waste", 10, 1)



def _two_groups(expander, gpu_priority=0):
    small = {"cpu": 16, "memory": "128Gi", "gpus": 2, "gpu_model": "A100", "labels": {"pool": "gpu"}, "min": 0,
             "max": 10, "price_per_hour": 8, "provision_time": "4m", "provision_jitter": "0s", "gpu_ready_lag": "0s"}
    return scenario(workload__generators=[burst(at="10m", replicas=2)], cluster__node_groups__small=small,
                    cluster__node_groups__gpu__expander_priority=gpu_priority, **{"autoscaler__expander": expander})


@pytest.mark.parametrize("expander, gpu_priority, group", [
    ("least-waste", 0, "small"),          # 2 pods x 1 CPU waste less of a 16-CPU node than of a 96-CPU one
    ("price", 0, "small"),                # 8/h for 2 pods beats 40/h
    ("most-pods", 10, "gpu"),             # both host the 2 pods: a tie, broken at random (seeded)
    ("priority,least-waste", 10, "gpu"),  # the priority expander's value wins first
    ("priority,least-waste", 0, "small"),  # equal priorities fall through to least-waste
])
def test_expanders_choose_the_group_upstream_would(expander, gpu_priority, group):
    engine, _ = run(_two_groups(expander, gpu_priority))
    ups = [e for e in engine.log if e["event"] == "scale-up"]
    if expander == "most-pods":
        assert ups[0]["group"] in ("gpu", "small") and ups[0]["pods"] == 2
    else:
        assert ups[0]["group"] == group


def test_random_expander_is_reproducible_with_the_seed():
    logs = [json.dumps(run(_two_groups("random"))[0].log) for _ in range(2)]
    assert logs[0] == logs[1]
