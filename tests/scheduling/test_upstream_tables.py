"""Table tests taken from upstream's plugin tests (pkg/scheduler/framework/plugins/*/..._test.go),
named after the behaviour: NodePorts with host IPs, NodeAffinity matchFields and invalid terms,
pod-level resources (KEP-2837) in NodeResourcesFit."""

import pytest
from sched_builders import cluster, node, pod

from kubegpu.model.resources import pod_requests
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion
from kubegpu.scheduling.cycle import filter_pod

V = KubeVersion(1, 34, 2)
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"


def first(*objs, target="p"):
    st = cluster(*objs)
    snap = SchedulingSnapshot.from_cluster(st)
    o = filter_pod(snap, st.pod("default", target), version=V)
    return o, [o.first_status(i) for i in range(len(snap.nodes))]


def port(host_port, ip=None, proto=None):
    p = {"containerPort": 80, "hostPort": host_port}
    if ip is not None:
        p["hostIP"] = ip
    if proto:
        p["protocol"] = proto
    return p


# node_ports_test.go: "same port, different hostIP", "second udp port conflict", "0.0.0.0 hostIP"...
@pytest.mark.parametrize("used,wanted,conflict", [
    ([port(8080, "127.0.0.1")], [port(8080, "127.0.0.2")], False),     # different hostIP: no conflict
    ([port(8080, "127.0.0.1")], [port(8080, "127.0.0.1")], True),      # same IP and port
    ([port(8080, "10.0.0.1", "UDP")], [port(8080, "10.0.0.1")], False),  # different protocol
    ([port(8080, "10.0.0.1")], [port(8080)], True),                    # wanted 0.0.0.0 vs any IP
    ([port(8080)], [port(8080, "10.0.0.2")], True),                    # used 0.0.0.0 vs any IP
    ([port(8080, "0.0.0.0")], [port(8081, "0.0.0.0")], False),         # different port
    ([port(8080, "")], [port(8080, "10.0.0.3")], True),                # empty hostIP defaults to 0.0.0.0
])
def test_node_ports_host_ip_semantics(used, wanted, conflict):
    _, st = first(node("n"), pod("u", node_name="n", ports=used), pod("p", ports=wanted))
    assert (st[0].plugin == "NodePorts" and st[0].reasons == (PORTS_REASON,)) is conflict
    assert st[0].ok is not conflict


def _affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


# node_affinity_test.go: matchFields on metadata.name, invalid requirements, contradicting terms
@pytest.mark.parametrize("terms,fits", [
    ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}], [True, False]),
    ([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}], [False, True]),
    # a field requirement with two values does not parse: the term matches nothing
    ([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n3"]}]}], [False, False]),
    ([{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n1"]}]}], [False, False]),
    # Exists with values, NotIn without values, Gt with a non-integer: invalid, no match
    ([{"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}], [False, False]),
    ([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": []}]}], [False, False]),
    ([{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["four"]}]}], [False, False]),
    ([{"matchExpressions": [{"key": "zone", "operator": "Foo", "values": ["a"]}]}], [False, False]),
    # an invalid term does not spoil a valid one (terms are ORed)
    ([{"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]},
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}], [False, True]),
    # requirements of one term that contradict each other
    ([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                            {"key": "zone", "operator": "NotIn", "values": ["a"]}]}], [False, False]),
    ([{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["4"]}]}], [True, False]),
])
def test_node_affinity_match_fields_and_invalid_terms(terms, fits):
    nodes = [node("n1", labels={"zone": "a", "gpus": "8"}), node("n2", labels={"zone": "b", "gpus": "2"})]
    _, st = first(*nodes, pod("p", affinity=_affinity(*terms)))
    assert [s.ok for s in st] == fits
    assert all(s.reasons == (AFFINITY_REASON,) for s in st if not s.ok and s.plugin == "NodeAffinity")
    assert all(s.ok or s.plugin in ("NodeAffinity", None) for s in st)


def _pod_level(requests=None, limits=None, **kw):
    p = pod("p", **kw)
    p["spec"]["resources"] = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return p


# KEP-2837 / resource helpers PodRequests: pod-level requests replace the container sum for cpu/memory
def test_pod_level_requests_replace_container_sum_for_noderesourcesfit():
    _, st = first(node("n", cpu="8"), _pod_level(requests={"cpu": "16"}, cpu="1"))
    assert st[0].plugin == "NodeResourcesFit" and st[0].reasons == ("Insufficient cpu",)


def test_pod_level_limits_default_pod_level_requests():
    p = _pod_level(limits={"cpu": "4", "memory": "8Gi"}, cpu="1", memory="1Gi")
    st = cluster(node("n"), p)
    req = pod_requests(st.pod("default", "p"))
    assert req["cpu"] == 4000 and req["memory"] == 8 * 2**30


def test_pod_level_resources_leave_extended_resources_to_containers_and_add_overhead():
    p = _pod_level(requests={"cpu": "2"}, cpu="1", gpus=2, overhead={"cpu": "250m"})
    req = pod_requests(cluster(node("n"), p).pod("default", "p"))
    assert req["cpu"] == 2250 and req["nvidia.com/gpu"] == 2


def test_pod_level_requests_smaller_than_containers_fit():
    _, st = first(node("n", cpu="8"), _pod_level(requests={"cpu": "4"}, cpu="6", init=None))
    assert st[0].ok


# podtopologyspread/filtering_test.go (TestSingleConstraint): hard zone constraints, maxSkew 1
ZONE = "zone"
SPREAD_REASON = "node(s) didn't match pod topology spread constraints"


def _spread(max_skew=1, key=ZONE, min_domains=None, affinity_policy=None):
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"foo": ""}}}
    if min_domains:
        c["minDomains"] = min_domains
    if affinity_policy:
        c["nodeAffinityPolicy"] = affinity_policy
    return [c]


def _zones(*layout):
    """layout: (node, zone) pairs -> nodes"""
    return [node(n, labels={ZONE: z} if z else {}) for n, z in layout]


def _matching(name, node_name, ns="default", terminating=False):
    p = pod(name, node_name=node_name, labels={"foo": ""}, ns=ns)
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2026-11-30T11:00:00Z"
    return p


NODES = _zones(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))


@pytest.mark.parametrize("case,existing,fits", [
    ("no existing pods", [], [True] * 4),
    ("pods spread across zones as 3/3, all nodes fit",
     [_matching("p-a1", "node-a"), _matching("p-a2", "node-a"), _matching("p-b1", "node-b"),
      _matching("p-x1", "node-x"), _matching("p-y1", "node-y"), _matching("p-y2", "node-y")], [True] * 4),
    ("pods spread across zones as 1/2: only zone1 fits",
     [_matching("p-a1", "node-a"), _matching("p-x1", "node-x"), _matching("p-y1", "node-y")],
     [True, True, False, False]),
    ("existing pods in a different namespace do not count",
     [_matching("p-x1", "node-x", ns="other"), _matching("p-y1", "node-y", ns="other")], [True] * 4),
    ("terminating pods do not count",
     [_matching("p-x1", "node-x", terminating=True)], [True] * 4),
])
def test_pod_topology_spread_single_constraint(case, existing, fits):
    _, st = first(*NODES, *existing, pod("p", labels={"foo": ""}, spread=_spread()))
    assert [s.ok for s in st] == fits, case
    assert all(s.reasons == (SPREAD_REASON,) for s in st if not s.ok)


def test_pod_topology_spread_node_without_the_key_is_unresolvable():
    _, st = first(*_zones(("node-a", "zone1"), ("node-n", None)), pod("p", labels={"foo": ""}, spread=_spread()))
    assert st[0].ok and not st[1].ok
    assert st[1].reasons == (SPREAD_REASON + " (missing required label)",) and st[1].code.name == "UNRESOLVABLE"


def test_pod_topology_spread_min_domains_not_met_treats_global_minimum_as_zero():
    existing = [_matching("p-a1", "node-a"), _matching("p-x1", "node-x")]
    _, st = first(*NODES, *existing, pod("p", labels={"foo": ""}, spread=_spread(min_domains=3)))
    assert [s.ok for s in st] == [False] * 4  # 1 + 1 - 0 > 1 everywhere
    _, st = first(*NODES, *existing, pod("p", labels={"foo": ""}, spread=_spread(min_domains=2)))
    assert [s.ok for s in st] == [True] * 4


def test_pod_topology_spread_node_affinity_policy_honor_ignores_other_nodes_domains():
    """nodeAffinityPolicy Honor (default): zone2 nodes fail the pod's nodeSelector, so zone2's
    zero count is not the global minimum; with Ignore it is."""
    nodes = [node("node-a", labels={ZONE: "zone1", "pool": "a"}), node("node-x", labels={ZONE: "zone2"})]
    existing = [_matching("p-a1", "node-a")]
    honor = pod("p", labels={"foo": ""}, spread=_spread(), node_selector={"pool": "a"})
    _, st = first(*nodes, *existing, honor)
    assert st[0].ok  # 1 + 1 - 1 <= 1
    ignore = pod("p", labels={"foo": ""}, spread=_spread(affinity_policy="Ignore"), node_selector={"pool": "a"})
    _, st = first(*nodes, *existing, ignore)
    assert not st[0].ok and st[0].plugin == "PodTopologySpread"  # 1 + 1 - 0 > 1
