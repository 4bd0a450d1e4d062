"""The why report: pool lines, distances in words, gangs, remedies in order of change size."""

import pytest
from sched_builders import cluster, node, obj, pod

from kubegpu.explain import explain_all
from kubegpu.explain.summary import pending_summary

TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
GANG = {"scheduling.x-k8s.io/pod-group": "g"}


@pytest.fixture(scope="module")
def reports():
    docs = [node(f"gpu-{i}", gpus=8, taints=TAINT, labels={"pool": "a100"}) for i in range(4)]
    docs += [node(f"cpu-{i}", labels={"pool": "cpu"}) for i in range(3)]
    docs += [obj("PriorityClass", "high", api="scheduling.k8s.io/v1", value=1000000)]
    docs += [pod("t0", node_name="gpu-0", gpus=6, tolerations=TOL, priority=1000, owner=("Job", "t0"),
                 annotations={"kubegpu.io/last-checkpoint": "2026-11-30T11:00:00Z"}),
             pod("t1a", node_name="gpu-1", gpus=4, tolerations=TOL, priority=1000, owner=("Job", "t1")),
             pod("t1b", node_name="gpu-1", gpus=1, tolerations=TOL, priority=1000, owner=("Job", "t1b")),
             pod("t1c", node_name="gpu-1", gpus=1, tolerations=TOL, priority=1000, owner=("Job", "t1c")),
             pod("t2", node_name="gpu-2", gpus=5, tolerations=TOL, priority=1000, owner=("Job", "t2")),
             pod("t3", node_name="gpu-3", gpus=8, tolerations=TOL, priority=1000, owner=("Job", "t3")),
             pod("want4", gpus=4, tolerations=TOL, priority=1000),
             pod("notol", gpus=1),
             pod("h100", gpus=1, tolerations=TOL, node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
             pod("infer", gpus=4, tolerations=TOL, priority=1000000, priority_class="high"),
             obj("PodGroup", "g", "default", api="scheduling.x-k8s.io/v1alpha1", spec={"minMember": 2}),
             pod("g-0", gpus=3, tolerations=TOL, labels=GANG, priority=1000),
             pod("g-1", gpus=3, tolerations=TOL, labels=GANG, priority=1000)]
    st = cluster(*docs)
    st.captured_at = "2026-11-30T12:00:00Z"
    return {r.pod.split("/")[1]: r for r in explain_all(st)}, st


def test_json_contract_fields(reports):
    r = reports[0]["want4"]
    assert not r.schedulable and r.message.startswith("0/7 nodes are available: ")
    assert r.nodes is None  # why --all: per-node detail is grouped unless --nodes
    assert {"fits", "plugin", "reasons", "count", "nodes"} <= set(r.node_groups[0].__struct_fields__)


def test_node_groups_partition_the_nodes_by_outcome(reports):
    r = reports[0]["want4"]
    names = [n for g in r.node_groups for n in g.nodes]
    assert sorted(names) == sorted([f"gpu-{i}" for i in range(4)] + [f"cpu-{i}" for i in range(3)])
    assert all(g.count == len(g.nodes) for g in r.node_groups)
    cpu = next(g for g in r.node_groups if "cpu-0" in g.nodes)
    assert cpu.plugin == "TaintToleration" or cpu.plugin == "NodeResourcesFit"
    assert set(cpu.nodes) == {"cpu-0", "cpu-1", "cpu-2"}  # same outcome, one group


def test_why_pod_keeps_every_node_and_all_nodes_flag_brings_it_back(reports):
    from kubegpu.explain import explain_all, explain_pod
    from kubegpu.scheduling.snapshot import SchedulingSnapshot

    st = reports[1]
    pod = st.pod("default", "want4")
    single = explain_pod(SchedulingSnapshot.from_cluster(st), pod)
    assert [n.name for n in single.nodes] == [n.name for n in st.nodes]
    assert all(n.plugin == "NodeResourcesFit" for n in single.nodes)
    full = {r.pod: r for r in explain_all(st, with_nodes=True)}["default/want4"]
    assert [(n.name, n.plugin, n.reasons) for n in full.nodes] == [(n.name, n.plugin, n.reasons) for n in single.nodes]


def test_nodes_grouped_by_pool_with_distance_in_words(reports):
    r = reports[0]["want4"]
    a100 = next(p for p in r.pools if p.pool == "a100")
    assert a100.nodes == 4 and a100.fit == 0
    assert "needs 4 nvidia.com/gpu; node gpu-2 has 3 free of 8, held by t2" in a100.closest
    assert len(r.pools) == 2  # seven nodes read as two lines


def test_missing_toleration_never_fits_verdict_first_then_add_toleration(reports):
    r = reports[0]["notol"]
    assert [m.kind for m in r.remedies[:2]] == ["never", "add-toleration"]
    assert r.remedies[1].details["toleration"]["key"] == "nvidia.com/gpu"


def test_model_pinned_pod_never_fits_here(reports):
    r = reports[0]["h100"]
    assert r.remedies[0].kind == "never"
    never = next(m for m in r.remedies if m.kind == "never")
    assert "NVIDIA-H100-80GB-HBM3" in never.summary


def test_high_priority_pod_first_remedy_is_preemption_with_lost_gpu_hours(reports):
    r = reports[0]["infer"]
    top = r.remedies[0]
    assert top.kind == "preempt" and top.details["node"] == "gpu-0"
    victim = top.details["victims"][0]
    # one cost model with defrag: (1 h since the checkpoint + 300 s default restart) x 6 GPUs
    assert victim["pod"] == "default/t0" and victim["gpu_hours_lost"] == 6.5


def test_four_gpu_pod_first_remedy_moves_pods_to_free_a_node(reports):
    r = reports[0]["want4"]
    assert r.remedies[0].kind == "move-pods"
    moves = r.remedies[0].details["moves"]
    assert moves and all(m["from"] != m["to"] for m in moves)


def test_gang_is_explained_as_one_unit(reports):
    r = reports[0]["g-0"]
    assert r.gang.summary.startswith("gang of 2 x 3 GPUs")
    assert "cannot start as a unit" in r.gang.summary
    assert r.remedies[0].kind == "move-pods" and len(r.remedies[0].details["targets"]) == 2


def test_pending_summary_for_doctor(reports):
    rows = pending_summary(reports[1])
    assert {row.pod for row in rows} >= {"default/want4", "default/notol", "default/infer"}
    assert all(row.reason.startswith("0/7 nodes are available") for row in rows)


def test_a_mig_gang_is_labelled_by_its_gpu_demand():
    # MIG mixed strategy: one 3g.40gb slice is 3/7 of a GPU (GpuDemand), not "N pods"
    mig = {"nvidia.com/mig-3g.40gb": "2"}
    docs = [node("mig-0", labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "1"},
                 extra=mig)]
    docs += [pod(f"m-{i}", extra={"nvidia.com/mig-3g.40gb": "1"}, labels=GANG,
                 annotations={"scheduling.k8s.io/group-name": "g"}) for i in range(3)]
    docs += [obj("PodGroup", "g", ns="default", api="scheduling.x-k8s.io/v1alpha1", spec={"minMember": 3})]
    report = explain_all(cluster(*docs))[0]
    assert report.gang.summary.startswith("gang of 3 x 0.428 GPUs")
