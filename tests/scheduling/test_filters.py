"""Table tests per filter plugin, named after the upstream behaviour they pin."""

import pytest
from sched_builders import cluster, node, obj, pod

from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion
from kubegpu.scheduling.cycle import filter_pod

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def outcome(*docs, target="p", version="1.36.3"):
    st = cluster(*docs)
    snap = SchedulingSnapshot.from_cluster(st)
    return filter_pod(snap, st.pod("default", target), version=KubeVersion.parse(version))


def first(o, i=0):
    return o.first_status(i)


# ---------------------------------------------------------------- TaintToleration
@pytest.mark.parametrize("toleration,fits", [
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}, True),
    ({"key": "nvidia.com/gpu", "value": "present"}, True),                      # operator defaults to Equal
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "other"}, False),
    ({"operator": "Exists"}, True),                                             # empty key + Exists: everything
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
])
def test_taint_toleration_upstream_tolerates_taint(toleration, fits):
    o = outcome(node("n", gpus=8, taints=[TAINT]), pod("p", gpus=1, tolerations=[toleration]))
    assert bool(o.fits[0]) is fits
    if not fits:
        assert first(o).plugin == "TaintToleration" and first(o).code.upstream == "UnschedulableAndUnresolvable"


def test_taint_toleration_ignores_prefer_no_schedule():
    o = outcome(node("n", taints=[{"key": "x", "effect": "PreferNoSchedule"}]), pod("p"))
    assert o.fits[0]


def test_taint_toleration_first_untolerated_taint_in_node_order_is_reported_before_1_34_2():
    taints = [{"key": "a", "value": "1", "effect": "NoExecute"}, {"key": "b", "effect": "NoSchedule"}]
    o = outcome(node("n", taints=taints), pod("p"), version="1.30.0")
    assert first(o).reasons == ("node(s) had untolerated taint {a: 1}",)


# ---------------------------------------------------------------- NodeUnschedulable
def test_node_unschedulable_blocks_cordoned_node_unless_tolerated():
    o = outcome(node("n", unschedulable=True), pod("p"))
    assert first(o).reasons == ("node(s) were unschedulable",) and first(o).plugin == "NodeUnschedulable"
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert outcome(node("n", unschedulable=True), pod("p", tolerations=tol)).fits[0]


# ---------------------------------------------------------------- NodeAffinity
def _req(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


@pytest.mark.parametrize("expr,fits", [
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
    ({"key": "missing", "operator": "NotIn", "values": ["a"]}, True),    # NotIn matches an absent label
    ({"key": "zone", "operator": "Exists"}, True),
    ({"key": "zone", "operator": "DoesNotExist"}, False),
    ({"key": "gen", "operator": "Gt", "values": ["3"]}, True),
    ({"key": "gen", "operator": "Lt", "values": ["3"]}, False),
    ({"key": "zone", "operator": "Gt", "values": ["3"]}, False),         # non-integer label never matches Gt
])
def test_node_affinity_operators(expr, fits):
    o = outcome(node("n", labels={"zone": "a", "gen": "4"}), pod("p", affinity=_req({"matchExpressions": [expr]})))
    assert bool(o.fits[0]) is fits


def test_node_affinity_terms_are_ored_and_empty_term_matches_nothing():
    terms = [{}, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    assert outcome(node("n", labels={"zone": "a"}), pod("p", affinity=_req(*terms))).fits[0]
    assert not outcome(node("n", labels={"zone": "a"}), pod("p", affinity=_req({}))).fits[0]


def test_node_selector_and_affinity_reason_wording():
    o = outcome(node("n"), pod("p", node_selector={"pool": "h100"}))
    assert first(o).reasons == ("node(s) didn't match Pod's node affinity/selector",)


def test_node_affinity_matchfields_prefilter_narrows_nodes():
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}
    o = outcome(node("a", cpu="1"), node("b"), node("c"), pod("p", cpu="2", affinity=_req(term)))
    assert o.reason_counts() == {"node(s) didn't satisfy plugin(s) [NodeAffinity]": 2, "Insufficient cpu": 1}


def test_node_affinity_conflicting_name_terms_reject_in_prefilter():
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                              {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]
    o = outcome(node("a"), pod("p", affinity=_req(*terms)))
    assert o.prefilter.reasons == ("pod affinity terms conflict",)


# ---------------------------------------------------------------- NodePorts
def test_node_ports_conflict_on_wildcard_ip_same_protocol():
    used = pod("u", node_name="n", ports=[{"containerPort": 80, "hostPort": 8080}])
    o = outcome(node("n"), used, pod("p", ports=[{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}]))
    assert first(o).plugin == "NodePorts" and first(o).code.upstream == "Unschedulable"
    o = outcome(node("n"), used, pod("p", ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}]))
    assert o.fits[0]


# ---------------------------------------------------------------- NodeResourcesFit
def test_resources_all_reasons_of_a_node_are_kept():
    o = outcome(node("n", cpu="4", gpus=2), pod("u", node_name="n", cpu="3", gpus=2), pod("p", cpu="2", gpus=1))
    assert set(first(o).reasons) == {"Insufficient cpu", "Insufficient nvidia.com/gpu"}


def test_resources_request_above_allocatable_is_unresolvable_from_1_34():
    docs = (node("n", gpus=2), pod("p", gpus=4))
    assert first(outcome(*docs)).code.upstream == "UnschedulableAndUnresolvable"
    assert first(outcome(*docs, version="1.33.5")).code.upstream == "Unschedulable"


def test_resources_too_many_pods_is_never_unresolvable():
    o = outcome(node("n", pods="1"), pod("u", node_name="n"), pod("p"))
    assert first(o).reasons == ("Too many pods",) and first(o).code.upstream == "Unschedulable"


def test_resources_init_containers_count_as_max_not_sum():
    init = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
    assert outcome(node("n", cpu="3"), pod("p", cpu="1", init=init)).fits[0]          # max(3, 1) = 3
    side = [{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "3"}}}]
    assert not outcome(node("n", cpu="3"), pod("p", cpu="1", init=side)).fits[0]     # sidecar adds: 4


def test_resources_pod_overhead_counts():
    assert not outcome(node("n", cpu="2"), pod("p", cpu="2", overhead={"cpu": "250m"})).fits[0]


def test_resources_extended_resource_no_node_offers():
    o = outcome(node("n"), pod("p", extra={"example.com/fpga": "1"}))
    assert first(o).reasons == ("Insufficient example.com/fpga",)


def test_resources_terminal_pods_free_their_gpus():
    o = outcome(node("n", gpus=1), pod("done", node_name="n", gpus=1, phase="Succeeded"), pod("p", gpus=1))
    assert o.fits[0]


# ---------------------------------------------------------------- volumes
def _pvc(name, sc=None, volume=None, modes=("ReadWriteOnce",)):
    """A claim; one with a volume is bound as the PV controller leaves it (bind-completed), which
    upstream VolumeBinding requires before it treats the claim as bound."""
    spec = {"accessModes": list(modes), "resources": {"requests": {"storage": "10Gi"}}}
    meta = {}
    if sc:
        spec["storageClassName"] = sc
    if volume:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return obj("PersistentVolumeClaim", name, "default", spec=spec, metadata=meta)


VOL = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


def test_volume_missing_pvc_rejects_in_prefilter():
    o = outcome(node("n"), pod("p", volumes=VOL))
    assert o.prefilter.reasons == ('persistentvolumeclaim "data" not found',)


def test_volume_binding_unbound_immediate_claim():
    o = outcome(node("n"), _pvc("data", sc="fast"), obj("StorageClass", "fast", provisioner="x", volumeBindingMode="Immediate"), pod("p", volumes=VOL))
    assert o.prefilter.reasons == ("pod has unbound immediate PersistentVolumeClaims",)
    assert o.prefilter.plugin == "VolumeBinding"


def test_volume_binding_pv_node_affinity():
    pv = obj("PersistentVolume", "pv1", spec={"capacity": {"storage": "10Gi"}, "nodeAffinity": {"required": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                     "values": ["a"]}]}]}}})
    o = outcome(node("a"), node("b"), _pvc("data", volume="pv1"), pv, pod("p", volumes=VOL))
    assert o.fits.tolist() == [True, False]
    assert first(o, 1).reasons == ("node(s) didn't match PersistentVolume's node affinity",)


def test_volume_binding_wait_for_first_consumer_with_allowed_topologies():
    sc = obj("StorageClass", "local", provisioner="csi.x", volumeBindingMode="WaitForFirstConsumer",
             allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["z1"]}]}])
    o = outcome(node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"}), _pvc("data", sc="local"), sc,
                pod("p", volumes=VOL))
    assert o.fits.tolist() == [True, False]
    assert first(o, 1).reasons == ("node(s) didn't find available persistent volumes to bind",)


def test_volume_zone_pv_labels():
    pv = obj("PersistentVolume", "pv1", metadata={"labels": {"topology.kubernetes.io/zone": "z1__z3"}},
             spec={"capacity": {"storage": "10Gi"}})
    o = outcome(node("a", labels={"topology.kubernetes.io/zone": "z3"}),
                node("b", labels={"topology.kubernetes.io/zone": "z2"}), node("c"),
                _pvc("data", volume="pv1"), pv, pod("p", volumes=VOL))
    assert o.fits.tolist() == [True, False, True]  # a node without zone labels passes (upstream)
    assert first(o, 1).reasons == ("node(s) had no available volume zone",)


def test_volume_restrictions_read_write_once_pod_in_use():
    vol = VOL
    o = outcome(node("n"), _pvc("data", volume="pv", modes=("ReadWriteOncePod",)),
                obj("PersistentVolume", "pv", spec={}), pod("u", node_name="n", volumes=vol), pod("p", volumes=vol))
    assert first(o).plugin == "VolumeRestrictions"


# ---------------------------------------------------------------- PodTopologySpread
def test_topology_spread_skew_and_missing_label():
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "w"}}}]
    docs = [node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"}), node("c"),
            pod("w1", node_name="a", labels={"app": "w"}), pod("p", labels={"app": "w"}, spread=spread)]
    o = outcome(*docs)
    assert o.fits.tolist() == [False, True, False]
    assert first(o, 0).reasons == ("node(s) didn't match pod topology spread constraints",)
    assert first(o, 2).reasons == ("node(s) didn't match pod topology spread constraints (missing required label)",)


# ---------------------------------------------------------------- InterPodAffinity
def _anti(app, key="kubernetes.io/hostname"):
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


def test_inter_pod_anti_affinity_of_incoming_and_existing_pods():
    o = outcome(node("a"), node("b"), pod("x", node_name="a", labels={"app": "w"}),
                pod("p", labels={"app": "w"}, affinity=_anti("w")))
    assert o.fits.tolist() == [False, True]
    assert first(o).reasons == ("node(s) didn't match pod anti-affinity rules",)
    o = outcome(node("a"), node("b"), pod("x", node_name="a", affinity=_anti("w")), pod("p", labels={"app": "w"}))
    assert first(o).reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)


def test_inter_pod_affinity_first_pod_of_self_affine_group_may_go_anywhere():
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    assert outcome(node("a"), pod("p", labels={"app": "w"}, affinity=aff)).fits[0]
    o = outcome(node("a"), node("b"), pod("x", node_name="b", labels={"app": "w"}),
                pod("p", labels={"app": "w"}, affinity=aff))
    assert o.fits.tolist() == [False, True]
    assert first(o).code.upstream == "UnschedulableAndUnresolvable"


def test_every_failing_filter_is_kept_not_only_the_first():
    o = outcome(node("n", gpus=1, taints=[TAINT], unschedulable=True), pod("p", gpus=4))
    assert [s.plugin for s in o.all_statuses(0)] == ["NodeUnschedulable", "TaintToleration", "NodeResourcesFit"]
    assert first(o).plugin == "NodeUnschedulable"


def test_nominated_pods_of_higher_priority_hold_their_node():
    o = outcome(node("n", gpus=4), pod("nom", gpus=4, priority=100, nominated="n"), pod("p", gpus=1, priority=10))
    assert first(o).reasons == ("Insufficient nvidia.com/gpu",)
    o = outcome(node("n", gpus=4), pod("nom", gpus=4, priority=1, nominated="n"), pod("p", gpus=1, priority=10))
    assert o.fits[0]
