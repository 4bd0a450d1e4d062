"""One rule for "this node takes new pods": frag and audit agree on cordoned and NotReady nodes."""

import pytest
from sched_builders import cluster, node

from kubegpu.audit.context import AuditContext
from kubegpu.fragmentation.cluster import cluster_frag_report


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
