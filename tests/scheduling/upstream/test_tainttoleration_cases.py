"""TaintToleration: upstream pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go.

Ported 13 Filter cases: 9 of TestTaintTolerationFilter and 4 of TestTaintTolerationFilterWithFeatureGate.
Skipped 7, all with the TaintTolerationComparisonOperators gate on (alpha, off by default):
5 of TestTaintTolerationFilter (numeric Gt/Lt tolerations) and 2 of TestTaintTolerationFilterWithFeatureGate.
With the gate off (the default) a Gt/Lt toleration tolerates nothing, which the ported cases pin.
Score, queueing-hint and event tests are not Filter behaviour.
"""

import pytest

from .cases import UNRESOLVABLE, node, plugin_status, pod, verdict

REASON = "node(s) had untolerated taint(s)"
FAIL = (UNRESOLVABLE, REASON)


def tol(key, value=None, effect=None, operator=None):
    t = {"key": key}
    for k, v in (("value", value), ("effect", effect), ("operator", operator)):
        if v is not None:
            t[k] = v
    return t


def taint(key, value, effect):
    return {"key": key, "value": value, "effect": effect}


SLA = "node.kubernetes.io/sla"


# taint_toleration_test.go TestTaintTolerationFilter (gate off) and TestTaintTolerationFilterWithFeatureGate (gate off)
@pytest.mark.parametrize("tolerations,taints,want", [
    pytest.param([], [taint("dedicated", "user1", "NoSchedule")], FAIL,
                 id="A pod having no tolerations can't be scheduled onto a node with nonempty taints"),
    pytest.param([tol("dedicated", "user1", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], (),
                 id="A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal")], [taint("dedicated", "user1", "NoSchedule")],
                 FAIL,
                 id="A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule"),
    pytest.param([tol("foo", None, "NoSchedule", "Exists")], [taint("foo", "bar", "NoSchedule")], (),
                 id="A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates "
                    "the taints on the node"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal"), tol("foo", None, "NoSchedule", "Exists")],
                 [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], (),
                 id="A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
                    "pod can be scheduled onto the node"),
    pytest.param([tol("foo", "bar", "PreferNoSchedule", "Equal")], [taint("foo", "bar", "NoSchedule")], FAIL,
                 id="A pod has a toleration that keys and values match the taint on the node, but (non-empty) "
                    "effect doesn't match, can't be scheduled onto the node"),
    pytest.param([tol("foo", "bar", None, "Equal")], [taint("foo", "bar", "NoSchedule")], (),
                 id="The pod has a toleration that keys and values match the taint on the node, the effect of "
                    "toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal")], [taint("dedicated", "user1", "PreferNoSchedule")],
                 (), id="The pod has a toleration that key and value don't match the taint on the node, but the "
                        "effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node"),
    pytest.param([], [taint("dedicated", "user1", "PreferNoSchedule")], (),
                 id="The pod has no toleration, but the effect of taint on node is PreferNoSchedule. "
                    "Pod can be scheduled onto the node"),
    pytest.param([tol(SLA, "750", "NoSchedule", "Gt")], [taint(SLA, "950", "NoSchedule")], FAIL,
                 id="Pod with Gt toleration cannot be scheduled when feature gate is disabled"),
    pytest.param([tol(SLA, "950", "NoSchedule", "Lt")], [taint(SLA, "800", "NoSchedule")], FAIL,
                 id="Pod with Lt toleration cannot be scheduled when feature gate is disabled"),
    pytest.param([tol("dedicated", "user1", "NoSchedule", "Equal"), tol(SLA, "750", "NoSchedule", "Gt")],
                 [taint("dedicated", "user1", "NoSchedule")], (),
                 id="Pod with mixed tolerations (Equal and Gt) when feature gate is disabled - only Equal is honored"),
    pytest.param([tol("dedicated", "user1", "NoSchedule", "Equal"), tol(SLA, "750", "NoSchedule", "Gt")],
                 [taint("dedicated", "user1", "NoSchedule"), taint(SLA, "950", "NoSchedule")], FAIL,
                 id="Pod with mixed tolerations, Gt toleration needed but filtered out when feature gate is disabled"),
])
def test_taint_toleration_filter(tolerations, taints, want):
    st = plugin_status("TaintToleration", pod(tolerations=tolerations), [node(taints=taints)])
    assert verdict(st) == want
