"""One NodeTable per ClusterState: the scheduling snapshot, the placement state and the defrag
problem read its arrays (not copies built again), and a table of some rows keeps their order."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from sched_builders import cluster, node, pod

from kubegpu.defrag.problem import build_problem
from kubegpu.fragmentation.cluster import cluster_placement
from kubegpu.model.nodetable import PER_NODE, NodeTable
from kubegpu.scheduling.nodeready import not_ready_untainted, table_not_ready_untainted
from kubegpu.scheduling.snapshot import SchedulingSnapshot

FPGA = "example.com/fpga"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def mixed_cluster():
    """Four nodes (GPU and CPU, tainted, cordoned, an extended resource), pods on three of them."""
    return cluster(
        node("gpu-a", gpus=8, taints=[TAINT], labels={"pool": "train"}),
        node("cpu-b", cpu="64", memory="128Gi", extra={FPGA: "2"}),
        node("gpu-c", gpus=4, unschedulable=True, labels={"pool": "infer"}),
        node("gpu-d", gpus=8, labels={"pool": "train"}),
        pod("t0", node_name="gpu-a", cpu="8", memory="32Gi", gpus=4),
        pod("f0", node_name="cpu-b", cpu="3", memory="5Gi", extra={FPGA: "1"}),
        pod("t1", node_name="gpu-d", cpu="2", memory="1Gi", gpus=1),
        pod("t2", node_name="gpu-a", cpu="1", memory="2Gi", gpus=2),
        pod("w0", cpu="4", gpus=8),  # pending
    )


def test_the_state_has_one_table_and_every_view_reads_its_arrays():
    st = mixed_cluster()
    table = NodeTable.from_cluster(st)
    assert NodeTable.from_cluster(st) is table
    snap = SchedulingSnapshot.from_cluster(st)
    assert snap.table is table and snap.names is table.names and snap.index is table.rows_of
    assert snap.alloc is table.alloc and snap.allowed_pods is table.pods_alloc
    assert snap.unschedulable is table.cordoned and snap.labels is table.labels
    assert snap.taint_group is table.taint_groups[1]
    m = len(table.bound_pods)
    assert snap.pod_vec[:m].tolist() == table.bound_vec.tolist()  # the table's rows, in the snapshot's own slots
    assert not np.shares_memory(snap.requested, table.requested)  # its own sums: assume/remove change them
    placement = cluster_placement(st)
    assert placement.names == table.names
    for mine, theirs in ((placement.cpu_alloc, table.alloc), (placement.mem_alloc, table.alloc),
                         (placement.pods_alloc, table.pods_alloc), (placement.dev_total, table.dev_total),
                         (placement.gpu_model, table.gpu_model)):
        assert np.shares_memory(mine, theirs)
    problem = build_problem(st)
    assert problem.snapshot.table is table and problem.names == table.names


def test_table_columns_are_the_cluster_facts_and_read_only():
    st = mixed_cluster()
    table = NodeTable.from_cluster(st)
    cpu, fpga = table.column["cpu"], table.column[FPGA]
    assert table.names == ["gpu-a", "cpu-b", "gpu-c", "gpu-d"]
    assert table.requested[:, cpu].tolist() == [9000, 3000, 0, 2000]
    assert table.mem_used.tolist() == [34 * 2**30, 5 * 2**30, 0, 2**30]
    assert table.alloc[:, fpga].tolist() == [0, 2, 0, 0] and table.requested[:, fpga].tolist() == [0, 1, 0, 0]
    assert table.pods_used.tolist() == [2, 1, 0, 1]
    assert (table.dev_used.sum(axis=1) // 1000).tolist() == [6, 0, 0, 1]
    assert table.cordoned.tolist() == [False, False, True, False]
    assert [p.name for p in table.bound_pods] == ["t0", "f0", "t1", "t2"]
    for name in ("alloc", "requested", "bound_vec", "dev_total", "cordoned"):
        with pytest.raises(ValueError):
            getattr(table, name)[0] = 1
    snap = SchedulingSnapshot.from_cluster(st)
    snap.remove("default/t0")
    assert table.requested[0, cpu] == 9000  # a what-if never writes through to the table


def test_take_keeps_row_order_and_carries_the_rows_pods():
    st = mixed_cluster()
    table = NodeTable.from_cluster(st)
    sub = table.take([3, 0, 3])
    assert sub.names == ["gpu-d", "gpu-a", "gpu-d"]
    assert sub.dev_used.tolist() == table.dev_used[[3, 0, 3]].tolist()
    assert [p.name for p in sub.bound_pods] == ["t1", "t0", "t2", "t1"]
    assert sub.bound_node.tolist() == [0, 1, 1, 2]
    state = cluster_placement(st)
    assert state.rows([3, 0, 3]).names == sub.names
    assert state.rows([3, 0, 3]).dev_free.tolist() == (sub.dev_total - sub.dev_used).tolist()


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.integers(0, 3), max_size=8))
def test_take_is_every_column_at_those_rows(rows):
    table = NodeTable.from_cluster(mixed_cluster())
    sub = table.take(rows)
    for name in PER_NODE:
        mine, theirs = getattr(sub, name), getattr(table, name)
        if isinstance(theirs, np.ndarray):
            assert mine.tolist() == theirs[rows].tolist() if rows else mine.shape[0] == 0
        else:
            assert mine == [theirs[i] for i in rows]
    summed = np.zeros_like(sub.requested)
    np.add.at(summed, sub.bound_node, sub.bound_vec)
    assert summed.tolist() == sub.requested.tolist()  # each row's pods, and only those
    assert all(sub.names[r] == p.spec.node_name for p, r in zip(sub.bound_pods, sub.bound_node.tolist()))


def _node(name, *, ready=True, taint=None):
    n = node(name, taints=[taint] if taint else None)
    n["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return n


def test_not_ready_untainted_column_is_the_per_node_rule():
    not_ready_taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    st = cluster(_node("ok"), _node("bare", ready=False), _node("tainted", ready=False, taint=not_ready_taint),
                 _node("same-taint-ready", taint=not_ready_taint),
                 _node("unreachable", ready=False, taint={"key": "node.kubernetes.io/unreachable",
                                                          "effect": "NoExecute"}),
                 _node("prefer", ready=False, taint={"key": "node.kubernetes.io/not-ready",
                                                     "effect": "PreferNoSchedule"}))
    column = table_not_ready_untainted(NodeTable.from_cluster(st))
    assert column.tolist() == [not_ready_untainted(n) for n in st.nodes] == [False, True, False, False, False, True]


def test_a_state_whose_table_packed_its_devices_is_freed_by_reference_counting():
    """The packing recipe refers to the state; once run it is dropped, so state -> table -> state is no
    cycle left to the cyclic GC (which at 50,000 pods costs seconds per collection)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        st = mixed_cluster()
        table = NodeTable.from_cluster(st)
        used = table.dev_used
        alive = weakref.ref(st)
        del st, table
        assert alive() is None
        assert not used.flags.writeable
    finally:
        if was_enabled:
            gc.enable()
