"""NodeName: upstream pkg/scheduler/framework/plugins/nodename/node_name_test.go (TestNodeName).

Ported 3 of 3 Filter cases; none skipped.
"""

import pytest

from .cases import UNRESOLVABLE, node, plugin_status, pod, verdict

REASON = "node(s) didn't match the requested node name"


# node_name_test.go TestNodeName
@pytest.mark.parametrize("node_name,spec_node,want", [
    pytest.param("foo", None, (), id="no host specified"),
    pytest.param("foo", "foo", (), id="host matches"),
    pytest.param("foo", "bar", (UNRESOLVABLE, REASON), id="host doesn't match"),
])
def test_node_name(node_name, spec_node, want):
    st = plugin_status("NodeName", pod(node_name=spec_node), [node(node_name)], on=node_name)
    assert verdict(st) == want
