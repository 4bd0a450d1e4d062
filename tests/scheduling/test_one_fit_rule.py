"""One fit rule: the placement state (frag, simulate, defrag capacity) and the audit ask the scheduling
core's question and get its answer, on clusters written as v1 objects."""

from hypothesis import given, settings
from hypothesis import strategies as hs
from sched_builders import cluster, node, pod

from kubegpu.audit.context import AuditContext
from kubegpu.fragmentation.capacity import pods_that_fit
from kubegpu.fragmentation.cluster import cluster_placement, pod_task
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.cycle import filter_pod

_bound = hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 8), hs.integers(0, 16), hs.integers(0, 64)),
                  max_size=10)


@settings(max_examples=60, deadline=None)
@given(_bound, hs.integers(1, 8), hs.integers(0, 16), hs.integers(0, 64), hs.lists(hs.booleans(), min_size=4,
                                                                                      max_size=4), hs.integers(1, 6))
def test_placement_fit_mask_is_the_scheduling_cores_verdict(bound, gpus, cpu, mem_gi, cordoned, pod_limit):
    """upstream NodeResourcesFit + NodeUnschedulable for a whole-GPU pod == PlacementState.fit_mask."""
    nodes = [node(f"n{i}", cpu="16", memory="64Gi", gpus=8, pods=str(pod_limit), unschedulable=cordoned[i])
             for i in range(4)]
    pods = [pod(f"b{k}", node_name=f"n{i}", gpus=g, cpu=str(c), memory=f"{m}Gi")
            for k, (i, g, c, m) in enumerate(bound)]
    st = cluster(*nodes, *pods, pod("p", gpus=gpus, cpu=str(cpu), memory=f"{mem_gi}Gi"))
    wanted = st.pod("default", "p")
    core = filter_pod(SchedulingSnapshot.from_cluster(st), wanted).fits
    state = cluster_placement(st)
    assert state.fit_mask(pod_task(st, wanted)).tolist() == [bool(f) for f in core]
    assert [state.fits_on(pod_task(st, wanted), i) for i in range(4)] == [bool(f) for f in core]


@settings(max_examples=40, deadline=None)
@given(_bound, hs.lists(hs.booleans(), min_size=4, max_size=4))
def test_audit_free_gpus_and_frag_capacity_count_the_same_devices(bound, cordoned):
    nodes = [node(f"n{i}", cpu="64", memory="512Gi", gpus=8, unschedulable=cordoned[i]) for i in range(4)]
    pods = [pod(f"b{k}", node_name=f"n{i}", gpus=g, cpu="0", memory="0")
            for k, (i, g, _, _) in enumerate(bound)]
    st = cluster(*nodes, *pods)
    audit_free = AuditContext(st).free_whole_gpus.tolist()
    assert pods_that_fit(cluster_placement(st), 1).tolist() == audit_free
    used = [0] * 4
    for i, g, _, _ in bound:
        used[i] += g
    assert audit_free == [0 if cordoned[i] else max(8 - used[i], 0) for i in range(4)]
