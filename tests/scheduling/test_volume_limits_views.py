"""NodeVolumeLimits remembers what each node attaches; a what-if view must still see its own pods.

The counts are kept per cluster state and reused while a node's pods are unchanged. A snapshot
copy with a pod removed (defrag, preemption) and a view with pods hidden (the preemption dry run's
"lower-priority pods removed") must get their own counts, not the remembered ones.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.scheduling.cycle import make_context
from kubegpu.scheduling.filters import nodevolumelimits as nvl
from kubegpu.scheduling.filters.nodevolumelimits import NodeVolumeLimitsFilter
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import NEWEST

from .upstream_volumes.runner import csinode, node, pod, pv, pvc, pvc_volume, volume_attachment

DRIVER = "ebs.csi.aws.com"


def _cluster():
    docs = [node("n0"), node("n1"), csinode("n0", {DRIVER: 2}), csinode("n1", {DRIVER: 2})]
    for k in range(3):
        docs.append(pv(f"vol-{k}", sc="gp3", source={"csi": {"driver": DRIVER, "volumeHandle": f"h{k}"}}))
        docs.append(pvc(f"data-{k}", sc="gp3", volume=f"vol-{k}", bound=True))
    for k in range(2):  # n0 attaches two volumes: its limit
        docs.append(pod(f"user-{k}", volumes=[pvc_volume(f"data-{k}")], node_name="n0"))
    docs.append(pod("user-n1", volumes=[pvc_volume("data-0")], node_name="n1"))  # shares a volume with n0
    state = ClusterState([decode_object(d) for d in docs])
    new = decode_object(pod("new", volumes=[pvc_volume("data-2")]))
    return state, new


def _failing(snapshot, new, view=None) -> list[str]:
    ctx = make_context(snapshot, new, NEWEST, None)
    plugin = NodeVolumeLimitsFilter()
    assert plugin.pre_filter(ctx) is None
    out = plugin.filter(ctx, view if view is not None else snapshot.view(ctx.info), np.arange(len(snapshot.names)))
    return [name for i, name in enumerate(snapshot.names) if out.status(i, plugin.name).code != 0]


def test_a_full_node_fails_and_a_copy_without_one_of_its_pods_passes():
    state, new = _cluster()
    snapshot = SchedulingSnapshot.from_cluster(state)
    assert _failing(snapshot, new) == ["n0"]
    lighter = snapshot.copy()
    lighter.remove("default/user-0")
    assert _failing(lighter, new) == []
    assert _failing(snapshot, new) == ["n0"]  # the original is unchanged


def test_a_view_with_pods_hidden_counts_without_them():
    state, new = _cluster()
    snapshot = SchedulingSnapshot.from_cluster(state)
    assert _failing(snapshot, new) == ["n0"]
    hidden = np.zeros(len(snapshot.alive), dtype=bool)
    hidden[snapshot.slot["default/user-1"]] = True
    ctx = make_context(snapshot, new, NEWEST, None)
    assert _failing(snapshot, new, snapshot.view(ctx.info).without(hidden)) == []
    assert _failing(snapshot, new) == ["n0"]


volumes_of = hs.lists(hs.integers(0, 5), max_size=3, unique=True)


@settings(max_examples=150, deadline=None)
@given(hs.lists(hs.one_of(hs.none(), hs.integers(0, 4)), min_size=1, max_size=4),
       hs.lists(hs.tuples(hs.integers(0, 3), volumes_of), max_size=6),
       hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 5)), max_size=3),
       volumes_of.filter(bool), hs.lists(hs.booleans(), max_size=6))
@example([2], [(0, [0])], [(0, 0)], [1], [])  # a volume both a pod and a VolumeAttachment hold counts once
def test_node_columns_agree_with_upstream_counting_one_node_at_a_time(limits, bound, attachments, wanted, hide):
    """Per node: the distinct volumes of its pods and VolumeAttachments, plus the new pod's volumes
    not already attached by a pod, against the CSINode's count (None: no CSINode)."""
    docs = []
    for i, count in enumerate(limits):
        docs.append(node(f"n{i}"))
        if count is not None:
            docs.append(csinode(f"n{i}", {DRIVER: count}))
    for k in range(6):
        docs.append(pv(f"vol-{k}", sc="gp3", source={"csi": {"driver": DRIVER, "volumeHandle": f"h{k}"}}))
        docs.append(pvc(f"data-{k}", sc="gp3", volume=f"vol-{k}", bound=True))
    for j, (i, vols) in enumerate(bound):
        if i < len(limits):
            docs.append(pod(f"user-{j}", volumes=[pvc_volume(f"data-{k}") for k in vols], node_name=f"n{i}"))
    for j, (i, k) in enumerate(attachments):
        if i < len(limits):
            docs.append(volume_attachment(f"va-{j}", f"n{i}", DRIVER, f"vol-{k}"))
    state = ClusterState([decode_object(d) for d in docs])
    new = decode_object(pod("new", volumes=[pvc_volume(f"data-{k}") for k in wanted]))
    snapshot = SchedulingSnapshot.from_cluster(state)
    ctx = make_context(snapshot, new, NEWEST, None)
    view = snapshot.view(ctx.info)
    expected = [_over_on_one_node(view, i, new) for i in range(len(snapshot.names))]
    assert _failing(snapshot, new) == [n for n, bad in zip(snapshot.names, expected) if bad]
    hidden = np.zeros(len(snapshot.alive), dtype=bool)  # a what-if view: some pods removed
    for j, gone in enumerate(hide):
        if gone and f"default/user-{j}" in snapshot.slot:
            hidden[snapshot.slot[f"default/user-{j}"]] = True
    what_if = view.without(hidden)
    expected = [_over_on_one_node(what_if, i, new) for i in range(len(snapshot.names))]
    assert _failing(snapshot, new, what_if) == [n for n, bad in zip(snapshot.names, expected) if bad]


def _over_on_one_node(view, i: int, new_pod) -> bool:
    """upstream csi.go Filter on one NodeInfo: the node's pods' volumes are attached, its
    VolumeAttachments count unless a pod holds the same volume, the new pod's volumes that a pod
    there holds are not new; fail when a limited driver's attached + new exceeds its count."""
    state = view.snapshot.state
    name = view.snapshot.names[i]
    csinode = state.get("CSINode", None, name)
    limits = nvl.driver_limits(csinode)
    if not limits:
        return False
    new = nvl.attachable(state, new_pod, csinode, True)
    attached: dict[str, str] = {}
    for p in view.pods_on(i):
        attached.update(nvl.attachable(state, p, csinode, False))
    counts: dict[str, int] = {}
    for unique, driver in attached.items():
        new.pop(unique, None)
        counts[driver] = counts.get(driver, 0) + 1
    vas = [va for va in state.of_kind("VolumeAttachment") if va.spec.node_name == name]
    for unique, driver in nvl.attached_by_attachments(state, vas, csinode).items():
        if unique not in attached:
            counts[driver] = counts.get(driver, 0) + 1
    wanted: dict[str, int] = {}
    for driver in new.values():
        wanted[driver] = wanted.get(driver, 0) + 1
    return any(d in limits and counts.get(d, 0) + c > limits[d] for d, c in wanted.items())
