"""Gangs as one unit, and the invariant that a pod `why` says fits really fits."""

import numpy as np
from sched_builders import cluster, node, obj, pod
from hypothesis import given, settings
from hypothesis import strategies as hs

from kubegpu.scheduling.gang import find_gangs, gang_marker, place_gang
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.cycle import filter_pod


def test_gang_markers_of_each_system():
    st = cluster(pod("a", labels={"scheduling.x-k8s.io/pod-group": "g"}),
                 pod("b", annotations={"scheduling.k8s.io/group-name": "v"}),
                 pod("c", labels={"volcano.sh/job-name": "j"}),
                 pod("d", labels={"leaderworkerset.sigs.k8s.io/name": "l",
                                  "leaderworkerset.sigs.k8s.io/group-index": "1"}))
    assert [gang_marker(p) for p in st.pods] == [("coscheduling", "g"), ("volcano", "v"), ("volcano-job", "j"),
                                                ("leaderworkerset", "l-1")]


def test_gang_min_member_from_podgroup_and_all_or_nothing_placement():
    g = {"scheduling.x-k8s.io/pod-group": "g"}
    st = cluster(node("a", gpus=4), pod("u", node_name="a", gpus=2),
                 obj("PodGroup", "g", "default", api="scheduling.x-k8s.io/v1alpha1", spec={"minMember": 2}),
                 pod("g-0", gpus=2, labels=g), pod("g-1", gpus=2, labels=g))
    gang = find_gangs(st)["default/g"]
    assert gang.min_member == 2 and len(gang.pending) == 2
    placement = place_gang(SchedulingSnapshot.from_cluster(st), gang)
    assert len(placement.placed) == 1 and not placement.schedulable


def test_volcano_job_gang_size_from_its_podgroup_named_job_dash_uid():
    """volcano names a Job's PodGroup "<job>-<uid>"; a PodGroup of another namespace or job does not count."""
    j = {"volcano.sh/job-name": "train"}
    st = cluster(obj("PodGroup", "train-1b2c3d4e-0000-4000-8000-000000000001", "other",
                     api="scheduling.volcano.sh/v1beta1", spec={"minMember": 7}),
                 obj("PodGroup", "trainer-9f-0000-4000-8000-000000000002", "default",
                     api="scheduling.volcano.sh/v1beta1", spec={"minMember": 5}),
                 obj("PodGroup", "train-1b2c3d4e-0000-4000-8000-000000000003", "default",
                     api="scheduling.volcano.sh/v1beta1", spec={"minMember": 3}),
                 pod("train-w-0", gpus=1, labels=j), pod("train-w-1", gpus=1, labels=j))
    assert find_gangs(st)["default/train"].min_member == 3


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 8), hs.integers(1, 16)), min_size=1, max_size=12),
       hs.integers(1, 8), hs.integers(1, 16), hs.integers(2, 5))
def test_a_pod_that_fits_really_fits(bound, want_gpu, want_cpu, pod_limit):
    """The core's verdict per node equals arithmetic done here on the objects as written
    (8 GPUs, 16 CPUs, `pod_limit` pods per node; what the bound pods ask), never on its own arrays."""
    nodes = [node(f"n{i}", cpu="16", gpus=8, pods=str(pod_limit)) for i in range(4)]
    pods = [pod(f"b{k}", node_name=f"n{i}", gpus=g, cpu=str(c)) for k, (i, g, c) in enumerate(bound)]
    st = cluster(*nodes, *pods, pod("p", gpus=want_gpu, cpu=str(want_cpu)))
    o = filter_pod(SchedulingSnapshot.from_cluster(st), st.pod("default", "p"))
    for i in range(4):
        here = [(g, c) for n, g, c in bound if n == i]
        fits = (sum(g for g, _ in here) + want_gpu <= 8 and sum(c for _, c in here) + want_cpu <= 16
                and len(here) + 1 <= pod_limit)  # upstream fitsRequest: request <= allocatable - requested
        assert bool(o.fits[i]) == fits, (i, here, want_gpu, want_cpu, pod_limit)


def test_snapshot_copy_is_independent_and_remove_restores():
    st = cluster(node("a", gpus=4), pod("u", node_name="a", gpus=2))
    snap = SchedulingSnapshot.from_cluster(st)
    work = snap.copy()
    work.remove("default/u")
    assert work.requested[0].sum() < snap.requested[0].sum() and snap.pods_on(0)[0].name == "u"
    work.assume(st.pod("default", "u"), "a")
    assert (work.requested == snap.requested).all()


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 8), hs.integers(1, 16)), max_size=10),
       hs.lists(hs.booleans(), max_size=10), hs.booleans())
def test_a_view_without_every_pod_equals_hiding_every_alive_slot(bound, pre_hidden, nominated):
    """never_fits' empty-cluster view (only nominated pods stay) == `without` of every alive slot."""
    nodes = [node(f"n{i}", cpu="16", gpus=8) for i in range(4)]
    pods = [pod(f"b{k}", node_name=f"n{i}", gpus=g, cpu=str(c)) for k, (i, g, c) in enumerate(bound)]
    extra = [pod("nom", gpus=2, cpu="1", nominated="n1", priority=10)] if nominated else []
    st = cluster(*nodes, *pods, *extra, pod("p", gpus=1, cpu="1"))
    snap = SchedulingSnapshot.from_cluster(st)
    view = snap.view(snap.pod_info(st.pod("default", "p")))
    hide = np.zeros(len(snap.alive), dtype=bool)
    for k, gone in enumerate(pre_hidden[: len(pods)]):
        hide[snap.slot[f"default/b{k}"]] = gone
    view = view.without(hide)
    everything = np.zeros(len(snap.alive), dtype=bool)
    everything[: snap.slot_count] = snap.alive[: snap.slot_count]
    a, b = view.without(everything), view.without_every_pod()
    assert (a.requested == b.requested).all() and (a.pod_count == b.pod_count).all()
    assert (a.excluded == b.excluded).all() and a.extra == b.extra


def test_snapshot_built_once_per_state_but_each_caller_gets_its_own_copy():
    """doctor's pending, defrag and audit sections share one build (ClusterState.derived); a what-if
    (assume/remove) on one caller's snapshot must not show in the next caller's."""
    st = cluster(node("a", gpus=4), node("b", gpus=4), pod("run", node_name="a", gpus=2), pod("wait", gpus=2))
    first = SchedulingSnapshot.from_cluster(st)
    first.assume(st.pod("default", "wait"), "b")
    first.remove("default/run")
    second = SchedulingSnapshot.from_cluster(st)
    assert second is not first
    assert [p.key for p in second.pods_on("a")] == ["default/run"] and second.pods_on("b") == []
    assert second.node_of("default/wait") is None
    assert st.derived["scheduling.snapshot"] is not second  # the shared build is never handed out


def test_gangs_found_once_per_state():
    g = {"scheduling.x-k8s.io/pod-group": "g"}
    st = cluster(node("a", gpus=4), pod("g-0", gpus=2, labels=g), pod("g-1", gpus=2, labels=g))
    assert find_gangs(st) is find_gangs(st) and len(find_gangs(st)["default/g"].members) == 2
