"""NodeUnschedulable: upstream pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go
(TestNodeUnschedulable).

Ported 3 of 3 Filter cases; TestIsSchedulableAfterNodeChange (queueing hints) is Go plumbing.
"""

import pytest

from .cases import UNRESOLVABLE, node, plugin_status, pod, verdict

REASON = "node(s) were unschedulable"
TOLERATE = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]


# node_unschedulable_test.go TestNodeUnschedulable
@pytest.mark.parametrize("unschedulable,tolerations,want", [
    pytest.param(True, None, (UNRESOLVABLE, REASON),
                 id="Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"),
    pytest.param(False, None, (), id="Schedule pod to normal node"),
    pytest.param(True, TOLERATE, (),
                 id="Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)"),
])
def test_node_unschedulable(unschedulable, tolerations, want):
    st = plugin_status("NodeUnschedulable", pod(tolerations=tolerations), [node(unschedulable=unschedulable)])
    assert verdict(st) == want
