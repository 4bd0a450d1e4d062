"""The safety rules: which pods a plan may move, and the reason given for every one that stays."""

import pytest
from builders import cluster, gpu_node, pod

from kubegpu.defrag.evictability import EvictionPolicy, classify, static_reasons


def _reasons(p: dict, *extra: dict, policy: EvictionPolicy = EvictionPolicy()) -> list[str]:
    st = cluster([gpu_node("n1"), p, *extra])
    return static_reasons(st, st.pod(p["metadata"]["namespace"], p["metadata"]["name"]), policy)


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet", "Job", "PyTorchJob", "MPIJob", "JobSet"])
def test_pods_whose_controller_recreates_them_are_movable(kind):
    assert _reasons(pod("a", "n1", kind=kind)) == []


def test_bare_daemonset_and_unknown_owner_pods_stay():
    assert _reasons(pod("bare", "n1", kind=None)) == ["bare pod: no controller would recreate it"]
    assert _reasons(pod("ds", "n1", kind="DaemonSet"))[0].startswith("DaemonSet pod")
    assert "not a controller known to recreate" in _reasons(pod("x", "n1", kind="SomeOperatorThing"))[0]


def test_mirror_pods_stay():
    p = pod("static", "n1", kind=None, annotations={"kubernetes.io/config.mirror": "abc"})
    assert _reasons(p) == ["mirror (static) pod: managed by the kubelet of its node"]


def test_protective_annotations_are_honoured():
    assert 'safe-to-evict: "false"' in _reasons(
        pod("a", "n1", annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}))[0]
    assert "do-not-disrupt" in _reasons(pod("b", "n1", annotations={"karpenter.sh/do-not-disrupt": "true"}))[0]
    assert "do-not-disrupt" in _reasons(pod("c", "n1", annotations={"karpenter.sh/do-not-disrupt": "30m"}))[0]
    assert _reasons(pod("d", "n1", annotations={"karpenter.sh/do-not-disrupt": "false"})) == []


def test_local_data_needs_permission_but_memory_scratch_does_not():
    disk = [{"name": "ckpt", "emptyDir": {}}]
    shm = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert "emptyDir volume(s) ckpt" in _reasons(pod("a", "n1", volumes=disk))[0]
    assert _reasons(pod("a", "n1", volumes=disk), policy=EvictionPolicy(allow_local_storage=True)) == []
    assert _reasons(pod("b", "n1", volumes=shm)) == []
    accepted = {"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "ckpt"}
    assert _reasons(pod("c", "n1", volumes=disk, annotations=accepted)) == []
    host = [{"name": "h", "hostPath": {"path": "/data"}}]
    assert "hostPath" in _reasons(pod("d", "n1", volumes=host))[0]


def test_system_critical_priority_stays():
    assert "system-critical" in _reasons(pod("a", "n1", priority=2_000_000_000))[0]


def test_a_pod_matched_by_two_pdbs_cannot_be_evicted():
    from builders import pdb

    reasons = _reasons(pod("a", "n1", controller="web"), pdb("p1", {"app": "web"}, min_available=0),
                       pdb("p2", {"app": "web"}, min_available=0))
    assert reasons == ["matched by 2 PodDisruptionBudgets (p1, p2); the Eviction API refuses such pods"]


def test_gang_moves_whole_or_not_at_all_and_priority_is_respected():
    objs = [gpu_node("n1"), pod("w0", "n1", kind="Job", controller="train"),
            pod("w1", "n1", kind="Job", controller="train", volumes=[{"name": "d", "emptyDir": {}}]),
            pod("vip", "n1", priority=500)]
    st = cluster(objs)
    out = classify(st, st.pods, gangs={"ml/w0": "ml/train", "ml/w1": "ml/train"}, beneficiary_priority=100)
    assert not out["ml/w1"].movable
    assert not out["ml/w0"].movable
    assert out["ml/w0"].reasons[0].startswith("member of gang ml/train: ml/w1 cannot move")
    assert out["ml/vip"].reasons == ("priority 500 is higher than the pod the plan makes room for (100)",)


def test_a_namespace_scope_keeps_every_other_namespace_in_place_and_round_trips():
    policy = EvictionPolicy(namespaces=frozenset({"team-a"}))
    assert _reasons(pod("a", "n1", ns="team-a"), policy=policy) == []
    assert _reasons(pod("b", "n1", ns="team-b"), policy=policy) == ["namespace team-b is outside -n team-a"]
    assert EvictionPolicy.from_builtins(policy.to_builtins()) == policy
    assert EvictionPolicy.from_builtins(EvictionPolicy().to_builtins()) == EvictionPolicy()
