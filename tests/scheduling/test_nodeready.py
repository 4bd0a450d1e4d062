"""One rule for "this node takes new pods": status, frag, the GPU map and audit agree on cordoned and
NotReady nodes; why (faithful to kube-scheduler, which reads only taints) notes the difference."""

import numpy as np
import pytest
from sched_builders import cluster, node, pod

from kubegpu.audit.context import AuditContext
from kubegpu.explain.report import explain_pod
from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_placement
from kubegpu.fragmentation.gpumap import gpu_map
from kubegpu.scheduling.nodeready import NOT_READY_UNTAINTED_NOTE
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.status.report import cluster_status


def _not_ready(name):
    n = node(name, gpus=8)
    n["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    return n


@pytest.mark.parametrize("broken", [_not_ready("b"), node("b", gpus=8, unschedulable=True)])
def test_frag_and_audit_count_the_same_usable_gpus(broken):
    st = cluster(node("a", gpus=8), broken)
    report = cluster_frag_report(st)
    assert report.fits_by_size["8"] == 1  # only node a takes an 8-GPU pod
    ctx = AuditContext(st)
    free = dict(zip([n.name for n in st.nodes], ctx.free_whole_gpus.tolist()))
    assert free == {"a": 8, "b": 0}


def _names_taking_pods(st):
    """Per view, the nodes it says take new pods: status, frag's placement state, the GPU map."""
    status = {r.name for r in cluster_status(st).nodes if r.schedulable}
    placement = cluster_placement(st)
    frag = {placement.names[i] for i in np.flatnonzero(placement.schedulable)}
    gpumap = {n.name for n in gpu_map(st, cluster_frag_report(st)).nodes if n.schedulable}
    return status, frag, gpumap


def test_notready_node_without_the_taint_is_one_answer_in_status_frag_map_and_a_note_in_why():
    st = cluster(node("a", gpus=8), _not_ready("b"), node("c", gpus=8, unschedulable=True), pod("p", gpus=8))
    status, frag, gpumap = _names_taking_pods(st)
    assert status == frag == gpumap == {"a"}
    row = {r.name: r for r in cluster_status(st).nodes}
    assert (row["b"].ready, row["b"].cordoned, row["b"].schedulable) == (False, False, False)
    assert (row["c"].ready, row["c"].cordoned, row["c"].schedulable) == (True, True, False)
    # kube-scheduler reads only taints: the core says the pod fits on b, and why says so with a note
    snap = SchedulingSnapshot.from_cluster(st)
    report = explain_pod(snap, st.pod("default", "p"))
    verdict = {v.name: v for v in report.nodes}
    assert verdict["b"].fits and verdict["b"].notes == [NOT_READY_UNTAINTED_NOTE]
    assert verdict["a"].notes == [] and not verdict["c"].fits
    assert len(report.notes) == 1 and "(b)" in report.notes[0]


def test_notready_node_with_the_condition_taint_has_no_note():
    n = _not_ready("b")
    n["spec"]["taints"] = [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]
    st = cluster(node("a", gpus=8), n, pod("p", gpus=8))
    report = explain_pod(SchedulingSnapshot.from_cluster(st), st.pod("default", "p"))
    verdict = {v.name: v for v in report.nodes}
    assert not verdict["b"].fits and verdict["b"].notes == [] and report.notes == []
