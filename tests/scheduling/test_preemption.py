"""DefaultPreemption dry run: victims, PDBs, eligibility and the 'preemption:' message part."""

from sched_builders import cluster, node, obj, pod

from kubegpu.explain.report import event_message
from kubegpu.scheduling.preemption import dry_run, pdb_violations
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion
from kubegpu.scheduling.cycle import filter_pod


def run(*docs, target="p", version="1.36.3"):
    st = cluster(*docs)
    snap = SchedulingSnapshot.from_cluster(st)
    o = filter_pod(snap, st.pod("default", target), version=KubeVersion.parse(version))
    r = dry_run(snap, o)
    return o, r, event_message(o, r)


def test_only_strictly_lower_priority_pods_are_victims():
    o, r, msg = run(node("a", gpus=4), pod("same", node_name="a", gpus=4, priority=10), pod("p", gpus=4, priority=10))
    assert r.chosen is None
    assert msg == ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
                   "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def test_reprieve_keeps_pods_that_can_stay():
    o, r, msg = run(node("a", gpus=4), pod("v1", node_name="a", gpus=2, priority=1, start="2026-11-30T08:00:00Z"),
                    pod("v2", node_name="a", gpus=2, priority=1, start="2026-11-30T09:00:00Z"),
                    pod("p", gpus=2, priority=100))
    assert r.chosen.node == "a" and len(r.chosen.victims) == 1
    assert r.chosen.victims[0].info.key == "default/v2"   # the earlier-started pod is more important
    assert msg == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."  # preemption found a node: no suffix


def test_pdb_violating_victims_are_reprieved_first():
    pdb = obj("PodDisruptionBudget", "guard", "default", api="policy/v1",
              spec={"selector": {"matchLabels": {"app": "guarded"}}}, status={"disruptionsAllowed": 0})
    o, r, _ = run(node("a", gpus=4), pdb,
                  pod("g", node_name="a", gpus=2, priority=1, labels={"app": "guarded"}, start="2026-11-30T09:00:00Z"),
                  pod("f", node_name="a", gpus=2, priority=1, start="2026-11-30T08:00:00Z"),
                  pod("p", gpus=2, priority=100))
    assert [v.info.key for v in r.chosen.victims] == ["default/f"]


def test_node_choice_prefers_no_pdb_violation_then_lower_victim_priority():
    pdb = obj("PodDisruptionBudget", "guard", "default", api="policy/v1",
              spec={"selector": {"matchLabels": {"app": "guarded"}}}, status={"disruptionsAllowed": 0})
    o, r, _ = run(node("a", gpus=2), node("b", gpus=2), node("c", gpus=2), pdb,
                  pod("x", node_name="a", gpus=2, priority=5, labels={"app": "guarded"}),
                  pod("y", node_name="b", gpus=2, priority=50), pod("z", node_name="c", gpus=2, priority=20),
                  pod("p", gpus=2, priority=100))
    assert r.chosen.node == "c"


def test_preemption_policy_never():
    o, r, msg = run(node("a", gpus=1), pod("v", node_name="a", gpus=1, priority=1),
                    pod("p", gpus=1, priority=100, preemption_policy="Never"), version="1.30.0")
    assert msg.endswith(". preemption: not eligible due to preemptionPolicy=Never.")


def test_unresolvable_nodes_are_not_helpful_and_filters_after_removal_are_reported():
    o, r, msg = run(node("cpu"), node("a", gpus=2), pod("v", node_name="a", gpus=1, priority=1),
                    pod("p", gpus=4, priority=100), version="1.33.0")
    # 1.33: request > allocatable is still Unschedulable, so both nodes are dry-run
    assert msg == ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: "
                   "1 Insufficient nvidia.com/gpu, 1 No preemption victims found for incoming pod.")
    o, r, msg = run(node("cpu"), node("a", gpus=2), pod("v", node_name="a", gpus=1, priority=1),
                    pod("p", gpus=4, priority=100), version="1.35.0")
    assert msg.endswith("preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def test_prefilter_rejection_before_dra_prefilter_gives_not_found_from_1_34():
    sc = obj("StorageClass", "fast", provisioner="x", volumeBindingMode="Immediate")
    pvc = obj("PersistentVolumeClaim", "data", "default", spec={"storageClassName": "fast", "accessModes": ["RWO"]})
    vol = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    *_, msg = run(node("a"), sc, pvc, pod("p", volumes=vol))
    assert msg == "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    *_, msg = run(node("a"), sc, pvc, pod("p", volumes=vol), version="1.31.0")
    assert msg == ("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 "
                   "nodes are available: 1 Preemption is not helpful for scheduling.")
    *_, msg = run(node("a"), sc, pvc, pod("p", volumes=vol), version="1.27.0")
    assert msg.endswith("1 No preemption victims found for incoming pod..")


def test_pdb_budget_is_spent_in_order():
    st = cluster(obj("PodDisruptionBudget", "b", "default", api="policy/v1",
                     spec={"selector": {"matchLabels": {"a": "1"}}}, status={"disruptionsAllowed": 1}),
                 pod("x", node_name="n", labels={"a": "1"}), pod("y", node_name="n", labels={"a": "1"}), node("n"))
    snap = SchedulingSnapshot.from_cluster(st)
    infos = snap.infos_on(0)
    assert pdb_violations(infos, st.of_kind("PodDisruptionBudget")) == [False, True]


ZONE = "topology.kubernetes.io/zone"
ANTI_X = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": ZONE}]}}


def test_preemption_removes_only_the_candidate_nodes_victims_upstream_select_victims_on_node():
    """upstream SelectVictimsOnNode works on one node's clone: a lower-priority app=x pod on
    node a1 still blocks zone a when the candidate is a2, so only a1 is a candidate."""
    o, r, msg = run(node("a1", gpus=4, labels={ZONE: "a"}), node("a2", gpus=4, labels={ZONE: "a"}),
                    pod("x1", node_name="a1", gpus=4, priority=1, labels={"app": "x"}),
                    pod("fill", node_name="a2", gpus=4, priority=1),
                    pod("p", gpus=4, priority=100, affinity=ANTI_X))
    assert [c.node for c in r.candidates] == ["a1"]
    assert r.chosen.node == "a1" and [v.info.key for v in r.chosen.victims] == ["default/x1"]


def test_preemption_message_when_only_another_nodes_pod_blocks_the_spread():
    """Removing a2's filler frees room but the app=x pod on a1 (not a victim there) keeps the
    anti-affinity failing on a2: upstream reports that node's filter reason in 'preemption:'."""
    o, r, msg = run(node("a1", gpus=4, labels={ZONE: "a"}), node("a2", gpus=4, labels={ZONE: "a"}),
                    pod("x1", node_name="a1", gpus=1, priority=1000, labels={"app": "x"}),
                    pod("fill", node_name="a2", gpus=4, priority=1),
                    pod("p", gpus=4, priority=100, affinity=ANTI_X))
    assert r.chosen is None
    assert msg.endswith("preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
                        "1 node(s) didn't match pod anti-affinity rules.")
