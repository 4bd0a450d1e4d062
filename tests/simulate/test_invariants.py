"""Invariants of the engine on random small scenarios (hypothesis)."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubegpu.simulate.engine import RUNNING, Engine
from kubegpu.simulate.generators import build_jobs
from kubegpu.simulate.results import summarise

from .scenario_helpers import burst, scenario


@st.composite
def small_scenarios(draw):
    gens = [{"kind": "poisson", "name": "batch", "rate_per_hour": draw(st.integers(1, 40)),
             "median_duration": f"{draw(st.integers(1, 90))}m", "sigma": 1.0,
             "gpus": {"1": 3, "2": 1, "8": 1}, "gang_pods": {"1": 3, str(draw(st.integers(2, 3))): 1},
             "checkpoint_interval": draw(st.sampled_from(["0s", "10m", "1h"])), "restart_overhead": "1m",
             "pod": {"cpu": 1, "memory": "1Gi", "priority_class": "low"}},
            burst(at=f"{draw(st.integers(0, 180))}m", replicas=draw(st.integers(1, 20)), length="20m")]
    return scenario(seed=draw(st.integers(0, 10_000)), duration="4h", workload__generators=gens,
                    cluster__node_groups__gpu__initial=draw(st.integers(1, 3)),
                    cluster__node_groups__gpu__max=4,
                    autoscaler={"provider": draw(st.sampled_from(["cluster-autoscaler", "none"]))})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_gangs_are_whole_capacity_is_never_exceeded_and_runs_repeat_exactly(sc):
    engine = Engine(sc, build_jobs(sc), record_events=True).run()
    state = engine.state
    assert (state.dev_free >= 0).all() and (state.dev_free <= state.dev_total).all()
    assert (state.cpu_free >= 0).all()
    for job, run in zip(engine.jobs, engine.runs):
        # all-or-nothing: a running job holds exactly its pods, anything else holds none
        assert len(run.placements) == (job.pods if run.status == RUNNING else 0)
        for node, _ in run.placements:
            assert engine.cluster.status[node] != 0  # only on nodes that exist
    held = sum(job.pods * job.task.total_gpu_milli for job, run in zip(engine.jobs, engine.runs) if run.status == RUNNING)
    assert held == int((state.dev_total - state.dev_free).sum()) == engine.alloc_milli
    result = summarise(engine)
    assert 0 <= result["utilization"]["allocation_mean"] <= 1 + 1e-9
    assert 0 <= result["utilization"]["effective"] <= 1 + 1e-9
    assert result["autoscaler"]["billed_node_hours"] >= result["autoscaler"]["node_hours"] - 1e-6
    again = summarise(Engine(sc, build_jobs(sc)).run())
    assert json.dumps(again) == json.dumps(result)
