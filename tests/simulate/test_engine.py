"""Gangs, preemption with lost work, billing, and the event order (no autoscaler unless asked)."""

import pytest

from kubegpu.simulate.billing import Billing
from kubegpu.simulate.nodes import NodeRecord
from kubegpu.simulate.scenario import BillingSpec, BillingTier

from .scenario_helpers import burst, run, scenario, times


def training(name="train", *, pods=2, gpus=8, duration="2h", submit="0s", ckpt="0s", overhead="0s", timeout="0s",
             priority="low"):
    return {"kind": "training", "name": name, "pods": pods, "duration": duration, "submit": submit,
            "checkpoint_interval": ckpt, "restart_overhead": overhead, "scheduling_timeout": timeout,
            "pod": {"gpus": gpus, "cpu": 1, "memory": "1Gi", "priority_class": priority}}


def fixed(nodes, **sets):
    return scenario(cluster__node_groups__gpu__initial=nodes, cluster__node_groups__gpu__min=nodes,
                    cluster__node_groups__gpu__max=nodes, autoscaler={"provider": "none"}, **sets)


def test_gang_is_placed_all_or_nothing():
    # 3 nodes: a 2x8 gang holds two; a second 2x8 gang cannot get only the third, so it waits for the first
    engine, result = run(fixed(3, workload__generators=[training("a"), training("b", submit="1m")]))
    starts = {e["job"]: e["t"] for e in engine.log if e["event"] == "start"}
    assert starts == {"a-0": 0.0, "b-0": 7200.0}
    assert result["pods"]["by_class"]["b"]["wait_seconds"]["mean"] == 7200.0 - 60.0


def test_gang_scheduling_timeout_gives_up():
    engine, result = run(fixed(3, workload__generators=[training("a"), training("b", submit="1m", timeout="30m")]))
    assert times(engine, "gang-timeout") == [60.0 + 1800.0]
    assert result["pods"]["by_class"]["b"]["timed_out"] == 1


def test_higher_priority_preempts_and_the_whole_gang_restarts():
    # the service needs 1 GPU on a full 2-node cluster: one training pod is evicted, the whole gang restarts
    gens = [training(duration="4h", overhead="5m"), burst(at="1h", replicas=1, length="10m")]
    engine, result = run(fixed(2, workload__generators=gens))
    assert [e["job"] for e in engine.log if e["event"] == "preempt"] == ["train-0"]
    assert result["preemption"]["count"] == 1
    # no checkpoints: 1 h x 16 GPUs lost, plus 5 min x 16 GPUs of restart
    assert result["preemption"]["work_gpu_hours_lost"] == pytest.approx(16.0)
    assert result["preemption"]["restart_gpu_hours"] == pytest.approx(16 * 5 / 60, abs=1e-3)
    restart = [e["t"] for e in engine.log if e["event"] == "start" and e["job"] == "train-0"][1]
    assert restart == 3600.0 + 600.0  # after the service replica leaves
    assert times(engine, "finish")[0] == pytest.approx(restart + 300.0 + 4 * 3600.0)


def test_checkpoints_bound_the_lost_work():
    gens = [training(duration="4h", ckpt="25m"), burst(at="1h", replicas=1, length="10m")]
    _, result = run(fixed(2, workload__generators=gens))
    # last checkpoint at 50 min of the run: 10 min x 16 GPUs lost
    assert result["preemption"]["work_gpu_hours_lost"] == pytest.approx(16 * 10 / 60, abs=1e-3)


def test_preemption_policy_never_waits_instead():
    gens = [training(duration="4h"), burst(at="1h", replicas=1, length="10m")]
    sc = fixed(2, workload__generators=gens, workload__priority_classes__high__preemption_policy="Never")
    engine, result = run(sc)
    assert result["preemption"]["count"] == 0
    assert result["pods"]["by_class"]["burst"]["wait_seconds"]["mean"] == 600.0  # gone before it ever ran


def test_equal_priority_does_not_preempt():
    gens = [training(duration="4h"), burst(at="1h", replicas=1, length="10m", priority="low")]
    _, result = run(fixed(2, workload__generators=gens))
    assert result["preemption"]["count"] == 0


def test_victims_are_the_lowest_priority_pods():
    sc = fixed(2, workload__priority_classes__mid={"value": 500},
               workload__generators=[training("low", pods=1, duration="4h"),
                                     training("mid", pods=1, duration="4h", submit="1s", priority="mid"),
                                     burst(at="1h", replicas=1, length="10m")])
    engine, _ = run(sc)
    assert [e["job"] for e in engine.log if e["event"] == "preempt"] == ["low-0"]


@pytest.mark.parametrize("granularity, minimum, life, billed", [
    ("1s", "0s", 1500.4, 1501), ("60s", "0s", 1500, 1500), ("60s", "0s", 1501, 1560), ("3600s", "0s", 1, 3600),
    ("3600s", "0s", 3600, 3600), ("3600s", "0s", 3601, 7200), ("1s", "60s", 30, 60), ("1s", "60s", 90, 90)])
def test_billing_granularity_and_minimum(granularity, minimum, life, billed):
    b = Billing.from_spec(BillingSpec(granularity=granularity, minimum=minimum), where="t")
    assert b.billed_seconds(life) == billed


def test_billing_tiers_and_reserved_nodes():
    b = Billing.from_spec(BillingSpec(tiers=[BillingTier(after="100h", factor=0.5)], reserved_discount=0.4), where="t")
    assert b.charge(200 * 3600, 10.0) == pytest.approx(100 * 10 + 100 * 5)
    rec = NodeRecord("n", "g", created=0.0, deleted=1800.0, reserved=True)
    assert b.node_cost(rec, 10.0, end=7200.0) == (7200.0, pytest.approx(2 * 10 * 0.6))


def test_nodes_are_billed_from_creation_including_initialisation():
    engine, result = run(scenario(workload__generators=[burst(at="10m", length="30m")],
                                  billing={"granularity": "1s"}))
    gpu = result["autoscaler"]["groups"][0]
    # created at 630 s (ready at 870), deleted at 3010 + 5 s taint delay
    assert gpu["billed_node_hours"] == pytest.approx((3015 - 630) / 3600, abs=1e-3)
    assert result["cost"]["total"] == pytest.approx(40 * (3015 - 630) / 3600, abs=0.01)


def test_a_busy_cluster_has_high_allocation_and_effective_utilization():
    _, result = run(fixed(2, workload__generators=[training(duration="6h")], duration="6h"))
    assert result["utilization"]["allocation_mean"] == pytest.approx(1.0)
    assert result["utilization"]["effective"] == pytest.approx(1.0)
