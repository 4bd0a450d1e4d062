"""NodeAffinity: upstream pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go (TestNodeAffinity).

Ported 28 of 31 cases of the plugin test (nodeSelector, matchExpressions, matchFields, invalid
terms, the PreFilter name pins and their conflict), plus 6 of the matcher it uses (component-helpers
nodeaffinity_test.go, at the end). Skipped 3 that need NodeAffinityArgs.addedAffinity
(a non-default scheduler profile): "Matches added affinity and Pod's node affinity", "Matches
added affinity but not Pod's node affinity", "Doesn't match added affinity".
kubegpu always runs PreFilter, so the two "... even if PreFilter is not called" cases check
the same verdict with PreFilter run. Where upstream's node is node2 and the PreFilterResult
names node1, a bare node1 exists too, so the name pin refers to a node of the cluster.
Score tests are not Filter behaviour.
"""

import pytest

from .cases import UNRESOLVABLE, node, plugin_status, pod, verdict

REASON = "node(s) didn't match Pod's node affinity/selector"
CONFLICT = "pod affinity terms conflict"
FAIL = (UNRESOLVABLE, REASON)
NAME = "metadata.name"


def req(key, op, *values):
    r = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def exprs(*reqs):
    return {"matchExpressions": list(reqs)}


def fields(*reqs):
    return {"matchFields": list(reqs)}


CASES = [
    # (id, nodeSelector, affinity, node name, node labels, want)
    ("missing labels", {"foo": "bar"}, None, "node", {}, FAIL),
    ("same labels", {"foo": "bar"}, None, "node", {"foo": "bar"}, ()),
    ("node labels are superset", {"foo": "bar"}, None, "node", {"foo": "bar", "baz": "blah"}, ()),
    ("node labels are subset", {"foo": "bar", "baz": "blah"}, None, "node", {"foo": "bar"}, FAIL),
    ("Pod with matchExpressions using In operator that matches the existing node", None,
     required(exprs(req("foo", "In", "bar", "value2"))), "node", {"foo": "bar"}, ()),
    ("Pod with matchExpressions using Gt operator that matches the existing node", None,
     required(exprs(req("kernel-version", "Gt", "0204"))), "node", {"kernel-version": "0206"}, ()),
    ("Pod with matchExpressions using NotIn operator that matches the existing node", None,
     required(exprs(req("mem-type", "NotIn", "DDR", "DDR2"))), "node", {"mem-type": "DDR3"}, ()),
    ("Pod with matchExpressions using Exists operator that matches the existing node", None,
     required(exprs(req("GPU", "Exists"))), "node", {"GPU": "NVIDIA-GRID-K1"}, ()),
    ("Pod with affinity that don't match node's labels won't schedule onto the node", None,
     required(exprs(req("foo", "In", "value1", "value2"))), "node", {"foo": "bar"}, FAIL),
    ("Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
     None, required({"matchExpressions": []}), "node", {"foo": "bar"}, FAIL),
    ("Pod with no Affinity will schedule onto a node", None, None, "node", {"foo": "bar"}, ()),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node", None, {"nodeAffinity": {}}, "node",
     {"foo": "bar"}, ()),
    ("Pod with multiple matchExpressions ANDed that matches the existing node", None,
     required(exprs(req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER"))), "node", {"GPU": "NVIDIA-GRID-K1"}, ()),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node", None,
     required(exprs(req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER"))), "node", {"GPU": "NVIDIA-GRID-K1"}, FAIL),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
     None, required(exprs(req("foo", "In", "bar", "value2")), exprs(req("diffkey", "In", "wrong", "value2"))),
     "node", {"foo": "bar"}, ()),
    ("Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, "
     "will schedule onto the node", {"foo": "bar"}, required(exprs(req("foo", "Exists"))), "node", {"foo": "bar"}, ()),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) "
     "is not satisfied, won't schedule onto the node", {"foo": "bar"}, required(exprs(req("foo", "Exists"))), "node",
     {"foo": "barrrrrr"}, FAIL),
    ("Pod with an invalid value in Affinity term won't be scheduled onto the node", None,
     required(exprs(req("foo", "NotIn", "invalid value: ___@#$%^"))), "node", {"foo": "bar"}, FAIL),
    ("Pod with matchFields using In operator that matches the existing node", None,
     required(fields(req(NAME, "In", "node1"))), "node1", {}, ()),
    ("Pod with matchFields using In operator that does not match the existing node", None,
     required(fields(req(NAME, "In", "node1"))), "node2", {}, FAIL),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches", None,
     required(fields(req(NAME, "In", "node1"), req(NAME, "In", "node2")), exprs(req("foo", "In", "bar"))),
     "node2", {"foo": "bar"}, ()),
    ("Pod with one term: matchFields does not match, but matchExpressions matches", None,
     required({**fields(req(NAME, "In", "node1")), **exprs(req("foo", "In", "bar"))}), "node2", {"foo": "bar"}, FAIL),
    ("Pod with one term: both matchFields and matchExpressions match", None,
     required({**fields(req(NAME, "In", "node1")), **exprs(req("foo", "In", "bar"))}), "node1", {"foo": "bar"}, ()),
    ("Pod with two terms: both matchFields and matchExpressions do not match", None,
     required(fields(req(NAME, "In", "node1")), exprs(req("foo", "In", "not-match-to-bar"))), "node2",
     {"foo": "bar"}, FAIL),
    ("Pod with two terms of node.Name affinity", None,
     required(fields(req(NAME, "In", "node1")), fields(req(NAME, "In", "node2"))), "node2", {}, ()),
    ("Pod with two conflicting mach field requirements", None,
     required(fields(req(NAME, "In", "node1"), req(NAME, "In", "node2"))), "node2", {"foo": "bar"},
     (UNRESOLVABLE, CONFLICT)),
    ("Matches node selector correctly even if PreFilter is not called", {"foo": "bar"}, None, "node",
     {"foo": "bar", "baz": "blah"}, ()),
    ("Matches node affinity correctly even if PreFilter is not called", None,
     required(exprs(req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER"))), "node", {"GPU": "NVIDIA-GRID-K1"}, ()),
]


# node_affinity_test.go TestNodeAffinity
@pytest.mark.parametrize("selector,affinity,node_name,labels,want", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_node_affinity(selector, affinity, node_name, labels, want):
    nodes = [node(node_name, labels=labels)]
    if node_name == "node2":
        nodes.append(node("node1"))
    st = plugin_status("NodeAffinity", pod(node_selector=selector, affinity=affinity), nodes, on=node_name)
    assert verdict(st) == want


# component-helpers scheduling/corev1/nodeaffinity/nodeaffinity_test.go: the matcher NodeAffinity's Filter
# uses. TestPodMatchesNodeSelectorAndAffinityTerms cases that the plugin table above does not repeat,
# and TestNodeSelectorMatch's three matching cases ("nil node" and the strict-constructor error case
# are Go plumbing: the scheduler uses the lazy-error selector, whose per-term errors the cases above pin).
@pytest.mark.parametrize("selector,affinity,node_name,labels,want", [
    pytest.param(None, None, "node", {}, (), id="TestPodMatchesNodeSelectorAndAffinityTerms/no selector"),
    # a nil slice, written as the API server writes it (nodeSelectorTerms has no omitempty): null
    pytest.param(None, {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": None}}},
                 "node", {"foo": "bar"}, FAIL,
                 id="TestPodMatchesNodeSelectorAndAffinityTerms/Pod with a nil []NodeSelectorTerm in affinity, "
                    "can't match the node's labels and won't schedule onto the node"),
    pytest.param(None, required(), "node", {"foo": "bar"}, FAIL,
                 id="TestPodMatchesNodeSelectorAndAffinityTerms/Pod with an empty []NodeSelectorTerm in affinity, "
                    "can't match the node's labels and won't schedule onto the node"),
    pytest.param(None, required({**exprs(req("label_1", "In", "label_1_val")), **fields(req(NAME, "In", "host_1"))}),
                 "host_1", {}, FAIL, id="TestNodeSelectorMatch/node matches field selector, but not labels"),
    pytest.param(None, required({**exprs(req("label_1", "In", "label_1_val")), **fields(req(NAME, "In", "host_1"))}),
                 "host_1", {"label_1": "label_1_val"}, (),
                 id="TestNodeSelectorMatch/node matches field selector and label selector"),
    pytest.param(None, required(exprs(req("label_1", "In", "label_1_val")), fields(req(NAME, "In", "host_1"))),
                 "host_1", {}, (), id="TestNodeSelectorMatch/second term matches"),
])
def test_required_node_affinity_match(selector, affinity, node_name, labels, want):
    st = plugin_status("NodeAffinity", pod(node_selector=selector, affinity=affinity),
                       [node(node_name, labels=labels)], on=node_name)
    assert verdict(st) == want
