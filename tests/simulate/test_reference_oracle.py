"""The fast engine and the plain-Python reference engine write identical event logs on small scenarios."""

import pytest

from kubegpu.simulate.engine import Engine
from kubegpu.simulate.generators import build_jobs
from kubegpu.simulate.reference import ReferenceEngine

from .scenario_helpers import burst, scenario


def mixed(seed, policy):
    gens = [
        {"kind": "poisson", "name": "batch", "rate_per_hour": 30, "median_duration": "20m", "sigma": 1.0,
         "gpus": {"1": 5, "2": 2, "4": 2, "8": 1}, "gang_pods": {"1": 4, "2": 1}, "checkpoint_interval": "15m",
         "restart_overhead": "2m", "pod": {"cpu": 2, "memory": "8Gi", "priority_class": "low"}},
        {"kind": "poisson", "name": "shared", "rate_per_hour": 10, "median_duration": "10m",
         "pod": {"gpus": 1, "gpu_milli": 300, "cpu": 1, "memory": "2Gi", "priority_class": "low"}},
        {"kind": "training", "name": "train", "pods": 2, "count": 2, "every": "1h", "duration": "3h",
         "scheduling_timeout": "40m", "pod": {"gpus": 8, "cpu": 8, "memory": "64Gi", "priority_class": "low"}},
        {"kind": "poisson", "name": "urgent", "rate_per_hour": 12, "median_duration": "30m",
         "gpus": {"1": 1, "4": 1}, "pod": {"cpu": 2, "memory": "8Gi", "priority_class": "mid"}},
        burst(at="2h", replicas=10, length="20m"),
    ]
    return scenario(seed=seed, duration="5h", cluster__scheduler_policy=policy,
                    workload__priority_classes__mid={"value": 500},
                    cluster__node_groups__gpu__initial=4, cluster__node_groups__gpu__min=4,
                    cluster__node_groups__gpu__max=4, autoscaler={"provider": "none"}, workload__generators=gens)


@pytest.mark.parametrize("seed, policy", [(1, "most-allocated"), (2, "least-allocated"), (4, "least-allocated"),
                                          (5, "most-allocated")])
def test_engine_matches_the_reference_event_log(seed, policy):
    sc = mixed(seed, policy)
    fast = Engine(sc, build_jobs(sc), record_events=True).run()
    ref = ReferenceEngine(sc, build_jobs(sc)).run()
    assert len(fast.log) > 100
    assert fast.log == ref.log
    assert fast.stats.lost_work_gpu_s == pytest.approx(ref.lost_work_gpu_s)
    assert sorted(w for ws in fast.stats.waits.values() for w in ws) == pytest.approx(sorted(ref.waits))


def test_the_oracle_comparison_sees_preemptions_and_gangs():
    sc = mixed(2, "most-allocated")
    log = Engine(sc, build_jobs(sc), record_events=True).run().log
    kinds = {e["event"] for e in log}
    assert {"preempt", "evict", "start", "finish"} <= kinds
    assert any(len(e.get("nodes", [])) > 1 for e in log)
