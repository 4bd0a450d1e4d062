"""Physical GPUs from device-plugin / GFD labels (NVIDIA k8s-device-plugin internal/lm/resource.go)."""

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.model.nodetable import NodeTable


def node(name, allocatable, labels=None):
    return decode_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                          "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", **allocatable}}})


def gpu_pod(name, node_name, requests):
    return decode_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
                          "spec": {"nodeName": node_name, "containers": [
                              {"name": "c", "resources": {"requests": {"cpu": "1", **requests},
                                                          "limits": requests}}]},
                          "status": {"phase": "Running"}})


def test_whole_gpus():
    s = ClusterState([node("a", {"nvidia.com/gpu": "8"}, {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
                      gpu_pod("p", "a", {"nvidia.com/gpu": "3"})])
    t = NodeTable.from_cluster(s)
    assert t.gpu_count.tolist() == [8]
    assert t.dev_used[0].tolist() == [1000, 1000, 1000, 0, 0, 0, 0, 0]
    assert t.gpu_models == ["NVIDIA-A100-SXM4-80GB"]


def test_time_slicing_reports_physical_gpus():
    # 4 GPUs x 10 replicas advertise 40 units; a pod with 5 units holds half a GPU
    labels = {"nvidia.com/gpu.count": "4", "nvidia.com/gpu.replicas": "10",
              "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.product": "Tesla-T4-SHARED"}
    s = ClusterState([node("a", {"nvidia.com/gpu": "40"}, labels), gpu_pod("p", "a", {"nvidia.com/gpu": "5"})])
    info = s.node_gpus["a"]
    assert (info.physical, info.replicas, info.sharing, info.model) == (4, 10, "time-slicing", "Tesla-T4")
    t = NodeTable.from_cluster(s)
    assert t.dev_used.sum() == 500 and t.dev_total.sum() == 4000


def test_renamed_shared_resource():
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "4",
              "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    s = ClusterState([node("a", {"nvidia.com/gpu.shared": "8"}, labels)])
    assert s.node_gpus["a"].physical == 2 and s.node_gpus["a"].resource == "nvidia.com/gpu.shared"


def test_mig_mixed_folds_slices_into_gpus():
    s = ClusterState([node("a", {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"},
                           {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"})])
    info = s.node_gpus["a"]
    assert info.sharing == "mig-mixed" and info.physical == 2  # 7 + 6 slices of 7 per GPU


def test_mig_single_strategy():
    labels = {"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}
    s = ClusterState([node("a", {"nvidia.com/gpu": "14"}, labels)])
    info = s.node_gpus["a"]
    assert (info.physical, info.sharing, info.model) == (2, "mig-single", "NVIDIA-A100-SXM4-40GB")


def test_hami_gpucores_share():
    s = ClusterState([node("a", {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu.memory": "24576"}),
                      gpu_pod("p", "a", {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "30"}),
                      gpu_pod("q", "a", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "12288"})])
    t = NodeTable.from_cluster(s)
    assert sorted(t.dev_used[0].tolist()) == [0, 800]  # both shares best-fit onto one device
    assert s.gpu_demand(s.pod("ml", "q")).gpu_milli == 500


def test_terminal_pods_hold_nothing():
    done = gpu_pod("done", "a", {"nvidia.com/gpu": "8"})
    done.status.phase = "Succeeded"
    s = ClusterState([node("a", {"nvidia.com/gpu": "8"}), done])
    assert NodeTable.from_cluster(s).dev_used.sum() == 0


def test_cpu_node_has_no_gpu_columns():
    s = ClusterState([node("a", {}), node("b", {"nvidia.com/gpu": "2"})])
    t = NodeTable.from_cluster(s)
    assert t.gpu_model.tolist() == [-1, 0] and t.dev_total.shape == (2, 2)


def test_gpu_model_from_cloud_labels_without_gfd():
    # GKE names the accelerator on the node; no GPU Feature Discovery labels
    s = ClusterState([node("gke-a", {"nvidia.com/gpu": "8"}, {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}),
                      node("eks-b", {"nvidia.com/gpu": "4"}, {"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"})])
    t = NodeTable.from_cluster(s)
    assert t.gpu_models == ["nvidia-tesla-a100", "nvidia-tesla-t4"]
    pinned = gpu_pod("p", None, {"nvidia.com/gpu": "1"})
    pinned.spec.node_selector = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    assert s.gpu_demand(pinned).models == frozenset({"nvidia-tesla-a100"})
