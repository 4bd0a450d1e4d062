"""The FailedScheduling text: upstream's exact strings for FitError and DefaultPreemption.

Sources (kubernetes/kubernetes):
- pkg/scheduler/framework/types_test.go TestFitError_Error: "0/N nodes are available: ..." from a
  diagnosis (PreFilter message, per-node reasons, PostFilter message). 8 of 8 cases ported.
- pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go TestPostFilter:
  the "preemption: 0/N nodes are available: ..." status. 6 of 13 cases ported, run through
  kubegpu's filters and preemption dry run on the same nodes and pods.
Skipped (with reasons):
- TestPostFilter "preemption should respect filteredNodesStatuses", "... absent NodeToStatusReader
  entry ...", "... 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU
  resource": they hand PostFilter made-up filter statuses that no filter would return for those
  nodes; kubegpu computes the statuses itself.
- "preemption result filtered out by extenders": scheduler extenders are not modelled.
- "only one node but failed with TestPlugin", "one failed with TestPlugin and the other pass":
  a fake plugin that errors in RemovePod (Go plumbing).
- both cases twice more upstream (async API calls on/off): the same inputs, counted once here.
The PostFilter cases run at 1.33: upstream's table marks a request above allocatable as
Unschedulable, which is 1.33's NodeResourcesFit (1.34 made it UnschedulableAndUnresolvable).
"""

import pytest
from sched_builders import cluster, node, obj, pod

from kubegpu.scheduling.message import fit_error_message
from kubegpu.scheduling.preemption import dry_run
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion
from kubegpu.scheduling.cycle import filter_pod

from .harness import V

PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
POST = "Error running PostFilter plugin FailedPostFilter"
F1, F2 = "Node(s) failed Filter plugin FalseFilter-1", "Node(s) failed Filter plugin FalseFilter-2"

FIT_ERRORS = [
    ("nodes failed Prefilter plugin", 3, None, PRE, None,
     "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter."),
    ("nodes failed Prefilter plugin and the preemption also failed", 3, None, PRE, POST,
     "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. Error running PostFilter plugin "
     "FailedPostFilter"),
    ("nodes failed one Filter plugin with an empty PostFilterMsg", 3, {F1: 3}, None, None,
     "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."),
    ("nodes failed one Filter plugin with a non-empty PostFilterMsg", 3, {F1: 3}, None, POST,
     "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter plugin "
     "FailedPostFilter"),
    ("nodes failed two Filter plugins with an empty PostFilterMsg", 3, {F1: 2, F2: 1}, None, None,
     "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin "
     "FalseFilter-1."),
    ("nodes failed two Filter plugins with a non-empty PostFilterMsg", 3, {F1: 2, F2: 1}, None, POST,
     "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin "
     "FalseFilter-1. Error running PostFilter plugin FailedPostFilter"),
    ("failed to Permit on node", 1, {"Node failed Permit plugin Permit-1": 1}, None, None,
     "0/1 nodes are available: 1 Node failed Permit plugin Permit-1."),
    ("failed to Reserve on node", 1, {"Node failed Reserve plugin Reserve-1": 1}, None, None,
     "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1."),
]


# types_test.go TestFitError_Error
@pytest.mark.parametrize("n,counts,prefilter,postfilter,want", [c[1:] for c in FIT_ERRORS],
                         ids=[c[0] for c in FIT_ERRORS])
def test_fit_error_error(n, counts, prefilter, postfilter, want):
    got = fit_error_message(n, reason_counts=counts, prefilter_message=prefilter, postfilter_message=postfilter,
                            version=V)
    assert got == want


LOW, MID, HIGH, VERY_HIGH = 0, 100, 1000, 10000
V133 = KubeVersion(1, 33, 0)
PDB_KEY = "test.kubernetes.io/is-violating-pdb"


def one_pod_node(name):  # st.MakeNode().Capacity(onePodRes): pods 1, nothing else
    return node(name, cpu="0", memory="0", pods="1")


def small_node(name):  # Capacity(nodeRes): cpu 200m, memory 400, pods 32 (st.MakeNode's default)
    return node(name, cpu="200m", memory="400", pods="32")


def upod(name, *, node_name=None, priority=None, large=False, labels=None):
    return pod(name, node_name=node_name, priority=priority, labels=labels,
               cpu="300m" if large else "0", memory="300" if large else "0")


def pdb(name, value, allowed):
    return obj("PodDisruptionBudget", name, "default", api="policy/v1",
               spec={"selector": {"matchLabels": {PDB_KEY: value}}, "minAvailable": "100%" if not allowed else 0},
               status={"disruptionsAllowed": allowed})


POST_FILTER = [
    ("pod with higher priority can be made schedulable",
     [one_pod_node("node1")], [upod("p1", node_name="node1")], upod("p", priority=HIGH), "node1", None),
    ("pod with tied priority is still unschedulable",
     [one_pod_node("node1")], [upod("p1", node_name="node1")], upod("p"), None,
     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    ("pod can be made schedulable on one node",
     [one_pod_node("node1"), one_pod_node("node2")],
     [upod("p1", node_name="node1", priority=HIGH), upod("p2", node_name="node2", priority=LOW)],
     upod("p", priority=MID), "node2", None),
    ("pod can be made schedulable on minHighestPriority node",
     [one_pod_node("node1"), one_pod_node("node2"), pdb("violating-pdb", "violating", 0),
      pdb("non-violating-pdb", "non-violating", 2**31 - 1)],
     [upod("p1", node_name="node1", priority=HIGH, labels={PDB_KEY: "non-violating"}),
      upod("p2", node_name="node1", priority=LOW, labels={PDB_KEY: "violating"}),
      upod("p3", node_name="node2", priority=MID, labels={PDB_KEY: "violating"})],
     upod("p", priority=VERY_HIGH), "node2", None),
    ("no candidate nodes found, no enough resource after removing low priority pods",
     [small_node("node1"), small_node("node2")], [upod("p1", node_name="node1"), upod("p2", node_name="node2")],
     upod("p", priority=HIGH, large=True), None, "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
    ("no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
     [one_pod_node("node1"), small_node("node2"), one_pod_node("node3")],
     [upod("p1", node_name="node1", priority=HIGH), upod("p2", node_name="node2"),
      upod("p3", node_name="node3", priority=HIGH)],
     upod("p", priority=HIGH, large=True), None,
     "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod."),
]


# default_preemption_test.go TestPostFilter
@pytest.mark.parametrize("objs,pods,incoming,nominated,want", [c[1:] for c in POST_FILTER],
                         ids=[c[0] for c in POST_FILTER])
def test_post_filter(objs, pods, incoming, nominated, want):
    st = cluster(*objs, *pods, incoming)
    snap = SchedulingSnapshot.from_cluster(st)
    outcome = filter_pod(snap, st.pod("default", "p"), version=V133)
    assert not outcome.schedulable
    result = dry_run(snap, outcome)
    assert (result.chosen.node if result.chosen else None) == nominated
    assert result.message == want
