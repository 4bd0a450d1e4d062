"""Karpenter's disruption controller: consolidateAfter from the last pod event, 10 s polling, 15 s validation."""

import pytest

from kubegpu.errors import InputError

from .scenario_helpers import burst, run, scenario, times


def karpenter(**settings):
    return scenario(workload__generators=[burst(at="10m", length="30m")],
                    autoscaler={"provider": "karpenter", **settings})


@pytest.mark.parametrize("after, deleted", [("0s", 2420.0), ("5m", 2720.0), ("1h", 6020.0)])
def test_empty_node_is_deleted_consolidate_after_its_last_pod_event_plus_validation(after, deleted):
    # pods leave at 2400 s; the command comes at the first 10 s poll once lastPodEventTime + consolidateAfter
    # has passed, and the node goes at the first poll after the 15 s commandValidationDelay
    engine, _ = run(karpenter(consolidationPolicy="WhenEmpty", consolidateAfter=after))
    assert times(engine, "scale-up") == [610.0]  # provisioning after the 1 s batch idle time, at a poll
    assert times(engine, "scale-down") == [deleted]


def test_consolidate_after_never_keeps_the_node():
    engine, _ = run(karpenter(consolidateAfter="Never"))
    assert times(engine, "scale-down") == []


def test_a_zero_budget_blocks_disruption():
    engine, _ = run(karpenter(consolidationPolicy="WhenEmpty", budgets=[{"nodes": "0"}]))
    assert times(engine, "scale-down") == []


@pytest.mark.parametrize("policy, removed", [("WhenEmpty", 0), ("WhenEmptyOrUnderutilized", 1)])
def test_when_empty_keeps_nodes_with_pods_underutilized_consolidates_them(policy, removed):
    # two nodes, one pod on each (least-allocated spreads them): only WhenEmptyOrUnderutilized moves one
    sc = scenario(workload__generators=[burst("stay", at="0s", replicas=2, length="6h")],
                  cluster__scheduler_policy="least-allocated", cluster__node_groups__gpu__initial=2,
                  autoscaler={"provider": "karpenter", "consolidationPolicy": policy})
    engine, _ = run(sc)
    assert len(times(engine, "scale-down")) == removed
    assert len(times(engine, "disruption-command")) == removed


def test_unknown_karpenter_fields_are_errors():
    with pytest.raises(InputError, match="consolidationPolicyy"):
        karpenter(consolidationPolicyy="WhenEmpty")
    with pytest.raises(InputError, match="WhenIdle"):
        karpenter(consolidationPolicy="WhenIdle")
