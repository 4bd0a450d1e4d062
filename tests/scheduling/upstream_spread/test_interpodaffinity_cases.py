"""InterPodAffinity Filter: upstream's own table cases, run through kubegpu.

Source: kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go
(TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes). Each case id is upstream's
test name; the want is upstream's Filter status (code and reason) per node, a PreFilter Skip
counting as Success on every node. Namespace "" in upstream becomes "default" here.

Ported: 24 of 26 TestRequiredAffinitySingleNode cases, 18 of 18 TestRequiredAffinityMultipleNodes.
Skipped (with reasons):
- 2 single-node cases "PodAffinity/PodAntiAffinity fails PreFilter with an invalid ... label
  syntax": the API server rejects such selectors at pod creation, so no dump can hold them.
- TestPreFilterDisabled (1): Go plumbing (Filter without its PreFilter state).
- TestPreFilterStateAddRemovePod (3), TestPreFilterStateClone (1),
  TestGetTPMapMatchingIncomingAffinityAntiAffinity (8): internal count maps of the PreFilter
  state, not Filter verdicts (their effect is covered by the Filter cases above).
"""

import pytest

from .harness import affinity, namespace, plugin_statuses, sel, term, unode, upod, verdict

PLUGIN = "InterPodAffinity"
OK = ("Success", ())
AFF = ("UnschedulableAndUnresolvable", ("node(s) didn't match pod affinity rules",))
ANTI = ("Unschedulable", ("node(s) didn't match pod anti-affinity rules",))
EXIST = ("Unschedulable", ("node(s) didn't satisfy existing pods anti-affinity rules",))

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = unode("node1", {"region": "r1", "zone": "z11"})
EXISTING = upod("e", node_name="node1", labels=POD_LABEL)  # upstream `pod`
NAMESPACES = [namespace("subteam1.team1", {"team": "team1"}), namespace("subteam2.team1", {"team": "team1"}),
              namespace("subteam1.team2", {"team": "team2"}), namespace("subteam2.team2", {"team": "team2"})]


def In(key, values):
    return sel((key, "In", values))


def NotIn(key, values):
    return sel((key, "NotIn", values))


def Exists(key):
    return sel((key, "Exists"))


SVC_IN = In("service", ["securityscan", "value2"])
ANTIVIRUS = In("service", ["antivirusscan", "value2"])
TEAM1 = In("team", ["team1"])

SINGLE = [
    ("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
     upod("p"), [], OK),
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
     "matches the existing pod",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, "region")])), [EXISTING], OK),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator "
     "in labelSelector that matches the existing pod",
     upod("p", labels=POD_LABEL2, aff=affinity([term(NotIn("service", ["securityscan3", "value3"]), "region")])),
     [EXISTING], OK),
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, namespaces=["DiffNameSpace"])])),
     [upod("e", ns="ns", node_name="node1", labels=POD_LABEL)], AFF),
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     upod("p", labels=POD_LABEL, aff=affinity([term(ANTIVIRUS, "")])), [EXISTING], AFF),
    ("satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuring"
     "Execution ",
     upod("p", labels=POD_LABEL2, aff=affinity([
         term(sel(("service", "Exists"), ("wrongkey", "DoesNotExist")), "region"),
         term(sel(("service", "In", ["securityscan"]), ("service", "NotIn", ["WrongValue"])), "region")])),
     [EXISTING], OK),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
     "because one of the matchExpression item don't match.",
     upod("p", labels=POD_LABEL2, aff=affinity([
         term(sel(("service", "Exists"), ("wrongkey", "DoesNotExist")), "region"),
         term(sel(("service", "In", ["securityscan2"]), ("service", "NotIn", ["WrongValue"])), "region")])),
     [EXISTING], AFF),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, "region")], [term(ANTIVIRUS, "node")])),
     [EXISTING], OK),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, "region")], [term(ANTIVIRUS, "node")])),
     [upod("e", node_name="node1", labels=POD_LABEL, aff=affinity(anti=[term(ANTIVIRUS, "node")]))], OK),
    ("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, "region")], [term(SVC_IN, "zone")])),
     [EXISTING], ANTI),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
     "existing pod",
     upod("p", labels=POD_LABEL, aff=affinity([term(SVC_IN, "region")], [term(ANTIVIRUS, "node")])),
     [upod("e", node_name="node1", labels=POD_LABEL, aff=affinity(anti=[term(SVC_IN, "zone")]))], EXIST),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     upod("p", labels=POD_LABEL, aff=affinity([term(NotIn("service", ["securityscan", "value2"]), "region")])),
     [upod("e", node_name="node2", labels=POD_LABEL)], AFF),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
     "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     upod("p", labels=POD_LABEL),
     [upod("e", node_name="node1", labels=POD_LABEL, aff=affinity(anti=[term(SVC_IN, "zone")]))], EXIST),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
     "satisfy PodAntiAffinity symmetry with the existing pod",
     upod("p", labels=POD_LABEL),
     [upod("e", node_name="node1", labels=POD_LABEL,
           aff=affinity(anti=[term(NotIn("service", ["securityscan", "value2"]), "zone")]))], OK),
    ("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with "
     "incoming pod",
     upod("p", labels=POD_LABEL, aff=affinity(anti=[term(Exists("service"), "region"),
                                                     term(Exists("security"), "region")])),
     [upod("e", node_name="node1", labels=POD_LABEL2, aff=affinity(anti=[term(Exists("security"), "zone")]))],
     ANTI),
    ("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
     "AffinityTerms",
     upod("p", labels=POD_LABEL, aff=affinity(anti=[term(Exists("service"), "zone"),
                                                     term(Exists("security"), "zone")])),
     [upod("e", node_name="node1", labels=POD_LABEL2, aff=affinity(anti=[term(Exists("security"), "zone")]))],
     ANTI),
    ("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on "
     "AffinityTerms",
     upod("p", labels=POD_LABEL2, aff=affinity(anti=[term(Exists("security"), "zone")])),
     [upod("e", node_name="node1", labels=POD_LABEL,
           aff=affinity(anti=[term(Exists("service"), "zone"), term(Exists("security"), "zone")]))], EXIST),
    ("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
     "AffinityTerms",
     upod("p", labels={"abc": "", "xyz": ""}, aff=affinity(anti=[term(Exists("abc"), "zone"),
                                                                  term(Exists("def"), "zone")])),
     [upod("e", node_name="node1", labels={"def": "", "xyz": ""},
           aff=affinity(anti=[term(Exists("abc"), "zone"), term(Exists("def"), "zone")]))], ANTI),
    ("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
     "AffinityTerms",
     upod("p", labels={"def": "", "xyz": ""}, aff=affinity(anti=[term(Exists("abc"), "zone"),
                                                                  term(Exists("def"), "zone")])),
     [upod("e", node_name="node1", labels={"abc": "", "xyz": ""},
           aff=affinity(anti=[term(Exists("abc"), "zone"), term(Exists("def"), "zone")]))], ANTI),
    ("affinity with NamespaceSelector",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, "region", ns_selector=TEAM1)])),
     [upod("e", ns="subteam1.team1", node_name="node1", labels=POD_LABEL)], OK),
    ("affinity with non-matching NamespaceSelector",
     upod("p", labels=POD_LABEL2, aff=affinity([term(SVC_IN, "region", ns_selector=TEAM1)])),
     [upod("e", ns="subteam1.team2", node_name="node1", labels=POD_LABEL)], AFF),
    ("anti-affinity with matching NamespaceSelector",
     upod("p", ns="subteam1.team1", labels=POD_LABEL2, aff=affinity(anti=[term(SVC_IN, "zone", ns_selector=TEAM1)])),
     [upod("e", ns="subteam2.team1", node_name="node1", labels=POD_LABEL)], ANTI),
    ("anti-affinity with matching all NamespaceSelector",
     upod("p", ns="subteam1.team1", labels=POD_LABEL2, aff=affinity(anti=[term(SVC_IN, "zone", ns_selector={})])),
     [upod("e", ns="subteam2.team1", node_name="node1", labels=POD_LABEL)], ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     upod("p", ns="subteam1.team1", labels=POD_LABEL2, aff=affinity(anti=[term(SVC_IN, "zone", ns_selector=TEAM1)])),
     [upod("e", ns="subteam1.team2", node_name="node1", labels=POD_LABEL)], OK),
]


# filtering_test.go TestRequiredAffinitySingleNode
@pytest.mark.parametrize("incoming,pods,want", [c[1:] for c in SINGLE], ids=[c[0] for c in SINGLE])
def test_required_affinity_single_node(incoming, pods, want):
    got = plugin_statuses(PLUGIN, incoming, [NODE1], pods, NAMESPACES)
    assert verdict(got[0]) == want


CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def ab(*zones, key="zone"):
    """nodeA, nodeB(, nodeC) in region r1 with the given zones, hostname = node name."""
    return [unode(f"node{c}", {"region": "r1", key: z, "hostname": f"node{c}"}) for c, z in zip("ABC", zones)]


def china_india(*names):
    return [unode(n, lab) for n, lab in zip(names, (CHINA, CHINA_AZ1, INDIA))]


FOO_BAR_SVC = {"foo": "bar", "service": "securityscan"}
FOO, BAR = Exists("foo"), Exists("bar")

MULTIPLE = [
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them "
     "has an existing pod that matches the affinity rules",
     upod("p", aff=affinity([term(In("foo", ["bar"]), "region")])),
     [upod("p1", node_name="node1", labels={"foo": "bar"})], china_india("node1", "node2", "node3"), [OK, OK, AFF]),
    ("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the "
     "collection should not be blocked from being scheduled onto any node, even there's no existing pod that "
     "matches the rule anywhere.",
     upod("p", labels=FOO_BAR_SVC, aff=affinity([term(In("foo", ["bar"]), "zone"),
                                                 term(In("service", ["securityscan"]), "zone")])),
     [upod("p1", node_name="nodeA", labels={"foo": "bar"})],
     [unode("nodeA", {"zone": "az1", "hostname": "h1"}), unode("nodeB", {"zone": "az2", "hostname": "h2"})],
     [OK, OK]),
    ("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
     upod("p", labels=FOO_BAR_SVC, aff=affinity([term(In("foo", ["bar"]), "zone"),
                                                 term(In("service", ["securityscan"]), "zone")])),
     [upod("p1", node_name="nodeA", labels={"foo": "bar"})],
     [unode("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), unode("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
     [AFF, AFF]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     upod("p", aff=affinity(anti=[term(In("foo", ["abc"]), "region")])),
     [upod("e", node_name="nodeA", labels={"foo": "abc"})],
     [unode("nodeA", {"region": "r1", "hostname": "nodeA"}), unode("nodeB", {"region": "r1", "hostname": "nodeB"})],
     [ANTI, ANTI]),
    ("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
     upod("p", aff=affinity(anti=[term(In("foo", ["abc"]), "region"), term(In("service", ["securityscan"]), "zone")])),
     [upod("e", node_name="nodeA", labels={"foo": "abc", "service": "securityscan"})], ab("z1", "z2"), [ANTI, ANTI]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
     upod("p", aff=affinity(anti=[term(In("foo", ["abc"]), "region")])),
     [upod("e", node_name="nodeA", labels={"foo": "abc"})], china_india("nodeA", "nodeB", "nodeC"),
     [ANTI, ANTI, OK]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an "
     "existing pod that match the inter pod affinity rule but in different namespace)",
     upod("p", ns="NS1", labels={"foo": "123"}, aff=affinity(anti=[term(In("foo", ["bar"]), "region")])),
     [upod("e", ns="NS1", node_name="nodeA", labels={"foo": "bar"}),
      upod("e", ns="NS2", node_name="nodeC", aff=affinity(anti=[term(In("foo", ["123"]), "region")]))],
     china_india("nodeA", "nodeB", "nodeC"), [ANTI, ANTI, OK]),
    ("Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of "
     "the term is firstly checked, and then topologyKey of the term is also checked",
     upod("p", labels={"foo": ""}),
     [upod("e", node_name="nodeA", aff=affinity(anti=[term(FOO, "invalid-node-label")]))], ab("z1", "z1"), [OK, OK]),
    ("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
     upod("p", aff=affinity(anti=[term(FOO, "invalid-node-label")])),
     [upod("e", node_name="nodeA", labels={"foo": ""})], ab("z1", "z1"), [OK, OK]),
    ("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
     "existingPod's terms on all nodes",
     upod("p", labels={"foo": "", "bar": ""}),
     [upod("e", node_name="nodeA", aff=affinity(anti=[term(FOO, "zone")])),
      upod("e", node_name="nodeA", aff=affinity(anti=[term(BAR, "region")]))], ab("z1", "z2"), [EXIST, EXIST]),
    ("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
     "anti-affinity rule of existingPod",
     upod("p", aff=affinity(anti=[term(FOO, "zone"), term(BAR, "region")])),
     [upod("e", node_name="nodeA", labels={"foo": ""}), upod("e", node_name="nodeB", labels={"bar": ""})],
     ab("z1", "z2"), [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when one term has invalid topologyKey",
     upod("p", labels={"foo": "", "bar": ""}),
     [upod("e", node_name="nodeA", aff=affinity(anti=[term(FOO, "invalid-node-label"), term(BAR, "zone")]))],
     ab("z1", "z2"), [EXIST, OK]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when one term has invalid topologyKey",
     upod("p", aff=affinity(anti=[term(FOO, "invalid-node-label"), term(BAR, "zone")])),
     [upod("podA", node_name="nodeA", labels={"foo": "", "bar": ""})], ab("z1", "z2"), [ANTI, OK]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when all terms have valid topologyKey",
     upod("p", labels={"foo": "", "bar": ""}),
     [upod("e", node_name="nodeA", aff=affinity(anti=[term(FOO, "region"), term(BAR, "zone")]))],
     ab("z1", "z2"), [EXIST, EXIST]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when all terms have valid topologyKey",
     upod("p", aff=affinity(anti=[term(FOO, "region"), term(BAR, "zone")])),
     [upod("e", node_name="nodeA", labels={"foo": "", "bar": ""})], ab("z1", "z2"), [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches "
     "incoming pod, so incoming pod can only be scheduled to nodeC",
     upod("p", labels={"foo": "", "bar": ""}),
     [upod("e", node_name="nodeA", aff=affinity(anti=[term(FOO, "zone"), term(Exists("labelA"), "zone")])),
      upod("e", node_name="nodeB", aff=affinity(anti=[term(BAR, "zone"), term(Exists("labelB"), "zone")]))],
     ab("z1", "z2", "z3"), [EXIST, EXIST, OK]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
     "match",
     upod("p", aff=affinity([term(FOO, "region"), term(BAR, "zone")])),
     [upod("pod1", node_name="nodeA", labels={"foo": "", "bar": ""})], ab("z1", "z1"), [OK, OK]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
     "match, and the match logic should be satisfied on the same pod",
     upod("p", aff=affinity([term(FOO, "region"), term(BAR, "zone")])),
     [upod("pod1", node_name="nodeA", labels={"foo": ""}), upod("pod2", node_name="nodeB", labels={"bar": ""})],
     ab("z1", "z2"), [AFF, AFF]),
]


# filtering_test.go TestRequiredAffinityMultipleNodes
@pytest.mark.parametrize("incoming,pods,nodes,want", [c[1:] for c in MULTIPLE], ids=[c[0] for c in MULTIPLE])
def test_required_affinity_multiple_nodes(incoming, pods, nodes, want):
    got = plugin_statuses(PLUGIN, incoming, nodes, pods, [namespace("NS1")])
    assert [verdict(s) for s in got] == want
