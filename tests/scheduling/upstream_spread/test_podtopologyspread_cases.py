"""PodTopologySpread Filter: upstream's own table cases, run through kubegpu.

Source: kubernetes/kubernetes pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go
(TestSingleConstraint, TestMultipleConstraints). Each case id is upstream's test name; upstream
asserts the Filter status code per node, and the reason follows from the code (Unschedulable:
"node(s) didn't match pod topology spread constraints"; UnschedulableAndUnresolvable: the same
with " (missing required label)"), so both are asserted. Node inclusion policies are GA and on
by default, so every case runs with them on, as upstream's default configuration does.

Ported: 23 of 23 TestSingleConstraint cases, 11 of 11 TestMultipleConstraints cases, and 7
TestPreFilterState cases (matchLabelKeys, nil selector, tolerated taints, inclusion policies):
those assert the PreFilter state (matching pods per topology pair, domain count, critical
paths), so their want here is the Filter verdict that state gives under upstream's Filter rule
(matching(pair) + selfMatch - globalMin > maxSkew -> Unschedulable), written out per node.
Skipped (with reasons):
- the other TestPreFilterState cases (~25), TestPreFilterStateAddPod (~12),
  TestPreFilterStateRemovePod (~8): internal-map bookkeeping (critical-path order, Add/RemovePod
  updates) already covered by the Filter cases; "matchLabelKeys ignored when feature gate
  disabled": the gate is on by default.
- TestPreFilterDisabled (1): Go plumbing (Filter without its PreFilter state).
- BenchmarkFilter: a benchmark.
"""

import pytest

from .harness import UNSCHEDULABLE_TAINT, node_affinity, plugin_statuses, sel, spread, unode, upod, verdict

PLUGIN = "PodTopologySpread"
S = ("Success", ())
U = ("Unschedulable", ("node(s) didn't match pod topology spread constraints",))
UAU = ("UnschedulableAndUnresolvable", ("node(s) didn't match pod topology spread constraints (missing required label)",))
FOO = sel(("foo", "Exists"))
BAR = sel(("bar", "Exists"))
FOO_LABEL = {"foo": ""}


def zones4(key="zone"):
    return [unode("node-a", {key: "zone1", "node": "node-a"}), unode("node-b", {key: "zone1", "node": "node-b"}),
            unode("node-x", {"zone": "zone2", "node": "node-x"}), unode("node-y", {"zone": "zone2", "node": "node-y"})]


def at(*spec, labels=FOO_LABEL, ns=""):
    """Existing pods: ('node-a', 2) puts two pods on node-a."""
    return [upod(f"p-{n[-1]}{k}", ns=ns, node_name=n, labels=labels) for n, c in spec for k in range(c)]


def me(*constraints, labels=FOO_LABEL, **kw):
    return upod("p", labels=labels, constraints=list(constraints), **kw)


def foo_nodes(taint_y=False, foo_on=("node-a", "node-b", "node-x")):
    return [unode(n, {"node": n, **({"foo": ""} if n in foo_on else {})},
                  taints=UNSCHEDULABLE_TAINT if (taint_y and n == "node-y") else None)
            for n in ("node-a", "node-b", "node-x", "node-y")]


SPREAD_2_1_0_3 = at(("node-a", 2), ("node-b", 1), ("node-y", 3))
SPREAD_1_1_0_1 = [upod("p-b1", node_name="node-a", labels=FOO_LABEL), upod("p-b2", node_name="node-b", labels=FOO_LABEL),
                  upod("p-y1", node_name="node-y", labels=FOO_LABEL)]
THREE_NODES = [unode(n, {"node": n}) for n in ("node-a", "node-b", "node-c")]
SPREAD_2_2_1 = at(("node-a", 2), ("node-b", 2), ("node-c", 1))
ZONE_2_1 = [upod("p-b1", node_name="node-a", labels=FOO_LABEL), upod("p-b2", node_name="node-b", labels=FOO_LABEL),
            upod("p-y1", node_name="node-y", labels=FOO_LABEL)]

SINGLE = [
    ("no existing pods", me(spread(1, "zone", FOO)), zones4(), [], [S, S, S, S]),
    ("no existing pods, incoming pod doesn't match itself", me(spread(1, "zone", BAR)), zones4(), [], [S, S, S, S]),
    ("existing pods in a different namespace do not count", me(spread(1, "zone", FOO)), zones4(),
     [upod("p-a1", ns="ns1", node_name="node-a", labels=FOO_LABEL),
      upod("p-b1", ns="ns2", node_name="node-a", labels=FOO_LABEL), *at(("node-x", 1), ("node-y", 1))],
     [S, S, U, U]),
    ("existing pods do not match null selector", me(spread(1, "zone", None)), zones4(),
     at(("node-x", 1), ("node-y", 1)), [S, S, S, S]),
    ("pods spread across zones as 3/3, all nodes fit", me(spread(1, "zone", FOO)), zones4(), SPREAD_2_1_0_3,
     [S, S, S, S]),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b", me(spread(1, "zone", FOO)),
     [unode("node-a", {"zone": "zone1", "node": "node-a"}), unode("node-b", {"zon": "zone1", "node": "node-b"}),
      unode("node-x", {"zone": "zone2", "node": "node-x"}), unode("node-y", {"zone": "zone2", "node": "node-y"})],
     at(("node-a", 1), ("node-b", 1), ("node-x", 1), ("node-y", 1)), [S, UAU, U, U]),
    ("pod cannot be scheduled as all nodes don't have label 'rack'", me(spread(1, "rack", FOO)),
     [unode("node-a", {"zone": "zone1", "node": "node-a"}), unode("node-x", {"zone": "zone2", "node": "node-x"})],
     [], [UAU, UAU]),
    ("pods spread across nodes as 2/1/0/3, only node-x fits", me(spread(1, "node", FOO)), zones4(), SPREAD_2_1_0_3,
     [U, U, S, U]),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit", me(spread(2, "node", FOO)),
     zones4(), SPREAD_2_1_0_3, [U, S, S, U]),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
     me(spread(1, "node", FOO), labels={"bar": ""}), zones4(), SPREAD_2_1_0_3, [U, S, S, U]),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     me(spread(1, "node", FOO), aff=node_affinity("node", "In", ["node-a", "node-y"])), zones4(), SPREAD_2_1_0_3,
     [S, S, S, U]),
    ("terminating Pods should be excluded", me(spread(1, "node", FOO)),
     [unode("node-a", {"node": "node-a"}), unode("node-b", {"node": "node-b"})],
     [upod("p-a", node_name="node-a", labels=FOO_LABEL, terminating=True),
      upod("p-b", node_name="node-b", labels=FOO_LABEL)], [S, U]),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     me(spread(1, "zone", FOO), aff=node_affinity("node", "NotIn", ["node-b"])), zones4(),
     at(("node-b", 2), ("node-y", 1)), [S, S, U, U]),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third "
     "node fits", me(spread(2, "node", FOO, min_domains=4)), THREE_NODES, SPREAD_2_2_1, [U, U, S]),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes "
     "fit", me(spread(2, "node", FOO, min_domains=2)), THREE_NODES, SPREAD_2_2_1, [S, S, S]),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and "
     "fourth nodes fit", me(spread(2, "zone", FOO, min_domains=3)), zones4(), ZONE_2_1, [U, U, S, S]),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     me(spread(2, "zone", FOO, min_domains=1)), zones4(), ZONE_2_1, [S, S, S, S]),
    ("NodeAffinityPolicy honored with labelSelectors",
     me(spread(1, "node", FOO), node_selector={"foo": ""}), foo_nodes(), SPREAD_1_1_0_1, [U, U, S, S]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     me(spread(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}), foo_nodes(), SPREAD_1_1_0_1,
     [U, U, S, U]),
    ("NodeAffinityPolicy honored with nodeAffinity",
     me(spread(1, "node", FOO), aff=node_affinity("foo", "In", [""])), foo_nodes(), SPREAD_1_1_0_1, [U, U, S, S]),
    ("NodeAffinityPolicy ignored with labelSelectors",  # upstream reuses the name for the nodeAffinity variant
     me(spread(1, "node", FOO, affinity_policy="Ignore"), aff=node_affinity("foo", "In", [""])), foo_nodes(),
     SPREAD_1_1_0_1, [U, U, S, U]),
    ("NodeTaintsPolicy honored", me(spread(1, "node", FOO, taints_policy="Honor")),
     foo_nodes(taint_y=True), SPREAD_1_1_0_1, [U, U, S, S]),
    ("NodeTaintsPolicy ignored", me(spread(1, "node", FOO)), foo_nodes(taint_y=True), SPREAD_1_1_0_1, [U, U, S, U]),
]


# filtering_test.go TestSingleConstraint
@pytest.mark.parametrize("incoming,nodes,pods,want", [c[1:] for c in SINGLE], ids=[c[0] for c in SINGLE])
def test_single_constraint(incoming, nodes, pods, want):
    assert [verdict(s) for s in plugin_statuses(PLUGIN, incoming, nodes, pods)] == want


def zone_foo_nodes(foo_on, taint_y=False, node_label_on=("node-a", "node-b", "node-x", "node-y")):
    return [unode(n, {"zone": z, **({"node": n} if n in node_label_on else {}), **({"foo": ""} if n in foo_on else {})},
                  taints=UNSCHEDULABLE_TAINT if (taint_y and n == "node-y") else None)
            for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))]


FB = {"foo": "", "bar": ""}
INCLUSION_PODS = [upod("p-a1", node_name="node-a", labels=FOO_LABEL), upod("p-b1", node_name="node-b", labels=FOO_LABEL),
                  upod("p-y1", node_name="node-y", labels=FOO_LABEL)]

MULTIPLE = [
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     me(spread(1, "zone", FOO), spread(1, "node", FOO)), zones4(), SPREAD_2_1_0_3, [U, U, S, U]),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     me(spread(1, "zone", FOO), spread(1, "node", FOO)), zones4(), at(("node-a", 2), ("node-b", 1), ("node-y", 4)),
     [U, U, U, U]),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     me(spread(1, "zone", FOO), spread(1, "node", BAR), labels=FB), zones4(),
     [*at(("node-a", 1)), *at(("node-y", 1), labels={"bar": ""})], [U, U, S, U]),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     me(spread(1, "zone", FOO), spread(1, "node", BAR), labels=FB), zones4(),
     [*at(("node-a", 1)), *at(("node-x", 1), ("node-y", 1), labels={"bar": ""})], [U, U, U, U]),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     me(spread(1, "zone", FOO), spread(1, "node", BAR), labels=FB), zones4(),
     [upod("p-a1", node_name="node-a", labels=FOO_LABEL), upod("p-a2", node_name="node-a", labels=FB),
      upod("p-y1", node_name="node-y", labels=FOO_LABEL), upod("p-y2", node_name="node-y", labels=FB),
      upod("p-y3", node_name="node-y", labels=FOO_LABEL)], [U, S, U, U]),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     me(spread(1, "zone", FOO), spread(1, "node", BAR), labels={"bar": ""}), zones4(),
     [*at(("node-a", 1)), *at(("node-x", 1), ("node-y", 1), labels={"bar": ""})], [S, S, U, U]),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     me(spread(1, "zone", FOO), spread(1, "node", FOO)),
     zone_foo_nodes((), node_label_on=("node-a", "node-b", "node-y")), at(("node-a", 1), ("node-y", 1)),
     [U, S, UAU, U]),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     me(spread(1, "zone", FOO), spread(1, "node", FOO, affinity_policy="Ignore"), node_selector={"foo": ""}),
     zone_foo_nodes(("node-a", "node-b", "node-x")), INCLUSION_PODS, [U, U, S, U]),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     me(spread(1, "zone", FOO, taints_policy="Honor"), spread(1, "node", FOO)),
     zone_foo_nodes(("node-a", "node-b", "node-x"), taint_y=True), INCLUSION_PODS, [U, U, S, U]),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     me(spread(1, "zone", FOO), spread(1, "node", FOO), node_selector={"foo": ""}),
     zone_foo_nodes(("node-a", "node-x", "node-y"), taint_y=True), INCLUSION_PODS, [U, S, S, U]),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     me(spread(1, "zone", FOO, taints_policy="Honor"), spread(1, "node", FOO, affinity_policy="Ignore"),
        node_selector={"foo": ""}),
     zone_foo_nodes(("node-a", "node-x", "node-y"), taint_y=True), INCLUSION_PODS, [U, U, S, U]),
]


# filtering_test.go TestMultipleConstraints
@pytest.mark.parametrize("incoming,nodes,pods,want", [c[1:] for c in MULTIPLE], ids=[c[0] for c in MULTIPLE])
def test_multiple_constraints(incoming, nodes, pods, want):
    assert [verdict(s) for s in plugin_statuses(PLUGIN, incoming, nodes, pods)] == want


STATE_PODS = at(("node-a", 2), ("node-b", 1), ("node-y", 2), labels={"foo": "a"})
TAINTED_C = [unode("node-a", {"node": "node-a"}), unode("node-b", {"node": "node-b"}),
             unode("node-c", {"node": "node-c", "bar": ""}, taints=UNSCHEDULABLE_TAINT)]
TOLERATE = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]

PREFILTER_STATE = [
    # want zone1 1, zone2 1 matching (foo AND bar=a): 1 + 1 - 1 everywhere
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     me(spread(1, "zone", FOO, match_label_keys=["bar"]), labels={"foo": "", "bar": "a"}), zones4(),
     [upod("p-a1", node_name="node-a", labels=FOO_LABEL), upod("p-a2", node_name="node-a", labels={"foo": "", "bar": "a"}),
      upod("p-b1", node_name="node-b", labels=FOO_LABEL), upod("p-y1", node_name="node-y", labels={"foo": "", "bar": "a"}),
      upod("p-y2", node_name="node-y", labels={"bar": ""})], [S, S, S, S]),
    # want zone1 3, zone2 2 (selector becomes foo=a)
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     me(spread(1, "zone", {}, match_label_keys=["foo"]), labels={"foo": "a"}), zones4(), STATE_PODS, [U, U, S, S]),
    # want 0/0: a nil selector stays Nothing, keys are not merged into it
    ("key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
     me(spread(1, "zone", None, match_label_keys=["bar"])), zones4(), STATE_PODS, [S, S, S, S]),
    ("no pod is matched when LabelSelector is nil when feature gate disabled",
     me(spread(1, "zone", None, match_label_keys=["bar"])), zones4(), STATE_PODS, [S, S, S, S]),
    # want zone1 3, zone2 2: bar is not a label of the pod, so only foo Exists applies
    ("key in matchLabelKeys is ignored when it isn't exist in pod.labels",
     me(spread(1, "zone", FOO, match_label_keys=["bar"])), zones4(), STATE_PODS, [U, U, S, S]),
    # want node-a 1, node-b 2, node-c 0 (tolerated taint counts): the pod matches not itself
    ("NodeTaintsPolicy honored with tolerated taints",
     me(spread(1, "node", BAR, taints_policy="Honor"), tolerations=TOLERATE), TAINTED_C,
     [upod("p-a", node_name="node-a", labels={"bar": ""}), upod("p-b", node_name="node-b", labels={"bar": ""}),
      upod("p-c", node_name="node-b", labels={"bar": ""}), upod("p-d", node_name="node-c", labels={})], [S, U, S]),
    # want zone1 2, zone2 3 (zone ignores the nodeSelector); node-x 2, node-y 1 (a fails it, b is tainted)
    ("two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
     me(spread(1, "zone", FOO, affinity_policy="Ignore"), spread(1, "node", FOO, taints_policy="Honor"),
        node_selector={"foo": ""}),
     [unode("node-a", {"zone": "zone1", "node": "node-a"}),
      unode("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}, taints=UNSCHEDULABLE_TAINT),
      unode("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
      unode("node-y", {"zone": "zone2", "node": "node-y", "foo": ""})],
     at(("node-a", 2), ("node-x", 2), ("node-y", 1)), [S, S, U, U]),
]


# filtering_test.go TestPreFilterState (want: the Filter verdicts of upstream's expected state)
@pytest.mark.parametrize("incoming,nodes,pods,want", [c[1:] for c in PREFILTER_STATE],
                         ids=[c[0] for c in PREFILTER_STATE])
def test_prefilter_state_verdicts(incoming, nodes, pods, want):
    assert [verdict(s) for s in plugin_statuses(PLUGIN, incoming, nodes, pods)] == want
