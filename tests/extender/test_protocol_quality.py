"""Placement quality through the protocol, small scale: the FGD inflation experiment replayed via the
kube-scheduler stand-in and the extender on every 30th node of the shared openb trace (a few dozen
nodes) matches the policy run directly (`simulate inflation`): the node bound is the policy's
choice for nearly every scored pod, and the unallocated GPU share at 100 % arrival is within
0.3 percentage points. The full-size numbers are bench/bench_protocol_quality.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from replay import replay_run, strided

from kubegpu.fragmentation.shapes import mix_from_tasks
from kubegpu.simulate.inflation import run_result
from kubegpu.simulate.trace import TraceNodes, load_nodes, load_pods

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "alibaba-gpu-v2023"
CHART_WEIGHT = 10      # deploy/helm/kubegpu values.yaml scheduler.extender.weight
STRIDE = 30

pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/alibaba-gpu-v2023 not present")


def small_cluster() -> TraceNodes:
    return strided(load_nodes(SHARED / "openb_node_list_gpu_node.csv"), STRIDE)


@pytest.mark.parametrize("trace", ["default", "gpushare100"])
@pytest.mark.parametrize("policy", ["fgd", "kubegpu"])
def test_replay_through_standin_matches_simulate_inflation(policy, trace):
    """Every pod sent (managedResources []), the chart's weight: agreement and unallocated % hold."""
    nodes = small_cluster()
    tasks = load_pods(SHARED / f"openb_pod_list_{trace}.csv")
    seed = 42
    direct = 100.0 - run_result(nodes, tasks, policy, seed, mix=mix_from_tasks(tasks)).alloc_pct["100"]
    run = replay_run(nodes, tasks, policy, seed, weight=CHART_WEIGHT, managed=[])
    assert run.scored > 100
    assert run.agreement >= 0.95, (run.agreed, run.scored)
    assert abs(run.unallocated_at_100 - direct) <= 0.3, (run.unallocated_at_100, direct)


def test_low_weight_lets_kube_scheduler_scores_override_the_policy():
    """With weight 1 the stand-in's own LeastAllocated/BalancedAllocation scores outvote the extender often."""
    nodes = small_cluster()
    tasks = load_pods(SHARED / "openb_pod_list_default.csv")
    run = replay_run(nodes, tasks, "fgd", 42, weight=1, managed=[])
    assert run.agreement < 0.8
