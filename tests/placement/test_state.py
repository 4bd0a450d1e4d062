"""PlacementState: the fit mask and place/remove bookkeeping."""

import numpy as np
import pytest

from kubegpu.placement.state import PlacementState, affinity_class, default_devices
from kubegpu.placement.task import Placement, Task

GIB = 1 << 30


def cluster() -> PlacementState:
    # n0: 8x A100 with one device half used; n1: 2x T4; n2: CPU only; n3: cordoned 8x A100
    return PlacementState(
        names=["n0", "n1", "n2", "n3"], cpu_alloc=[96_000, 32_000, 64_000, 96_000],
        mem_alloc=[512 * GIB, 128 * GIB, 256 * GIB, 512 * GIB],
        dev_total=[[1000] * 8, [1000, 1000] + [0] * 6, [0] * 8, [1000] * 8],
        dev_used=[[500] + [0] * 7, [0] * 8, [0] * 8, [0] * 8],
        gpu_model=[0, 1, -1, 0], gpu_models=["A100", "T4"], schedulable=[True, True, True, False])


def test_fit_mask_checks_cpu_memory_gpu_model_and_cordon():
    s = cluster()
    assert s.fit_mask(Task(cpu_milli=1000)).tolist() == [True, True, True, False]
    assert s.fit_mask(Task(cpu_milli=1000, num_gpu=8, gpu_milli=1000)).tolist() == [False] * 4
    assert s.fit_mask(Task(cpu_milli=1000, num_gpu=7, gpu_milli=1000)).tolist() == [True, False, False, False]
    assert s.fit_mask(Task(cpu_milli=1000, num_gpu=1, gpu_milli=500,
                           models=frozenset({"T4"}))).tolist() == [False, True, False, False]
    assert s.fit_mask(Task(cpu_milli=40_000, mem_bytes=200 * GIB)).tolist() == [True, False, True, False]


def test_place_and_remove_round_trip():
    s = cluster()
    task = Task(cpu_milli=8000, mem_bytes=32 * GIB, num_gpu=1, gpu_milli=400)
    where = Placement(0, default_devices(s.dev_free[0], task))
    assert where.devices == (0,)          # best fit: the half-used device
    s.place(task, where)
    assert s.dev_free[0, 0] == 100 and s.cpu_free[0] == 88_000 and s.version[0] == 1
    assert s.affinity_counts[0, affinity_class(task)] == 1
    s.remove(task, where)
    assert s.dev_free[0, 0] == 500 and s.cpu_free[0] == 96_000 and s.version[0] == 2


def test_place_refuses_over_allocation():
    s = cluster()
    with pytest.raises(ValueError):
        s.place(Task(cpu_milli=1000, num_gpu=1, gpu_milli=600), Placement(0, (0,)))   # 500m free on dev 0
    with pytest.raises(ValueError):
        s.place(Task(cpu_milli=100_000), Placement(2))
    with pytest.raises(ValueError):
        s.place(Task(cpu_milli=1, num_gpu=2, gpu_milli=1000), Placement(1, (1, 1)))
    with pytest.raises(ValueError):
        s.place(Task(cpu_milli=1), Placement(3))                                        # cordoned


def test_copy_is_independent():
    s = cluster()
    c = s.copy()
    c.place(Task(cpu_milli=1000, num_gpu=1, gpu_milli=1000), Placement(1, (0,)))
    assert s.dev_free[1, 0] == 1000 and c.dev_free[1, 0] == 0 and c.uid != s.uid


def test_task_rejects_inconsistent_gpu_demand():
    with pytest.raises(ValueError):
        Task(cpu_milli=1, num_gpu=1, gpu_milli=0)
    with pytest.raises(ValueError):
        Task(cpu_milli=1, num_gpu=1, gpu_milli=1200)


class FakeTable:
    names = ["a", "b"]
    cpu_alloc = np.array([8000, 8000]); cpu_used = np.array([1000, 0])
    mem_alloc = np.array([GIB, GIB]); mem_used = np.array([0, 0])
    pods_alloc = np.array([110, 110]); pods_used = np.array([1, 0])
    dev_total = np.array([[1000, 1000], [1000, 0]]); dev_used = np.array([[1000, 250], [0, 0]])
    gpu_model = np.array([0, 0]); gpu_models = ["L4"]
    cordoned = np.array([False, True]); not_ready = np.array([True, False]); pool = ["gpu", "gpu"]


def test_from_node_table_reads_the_columns():
    s = PlacementState.from_node_table(FakeTable(), placed=[(0, Task(cpu_milli=1000, num_gpu=1, gpu_milli=1000))])
    assert s.dev_free.tolist() == [[0, 750], [1000, 0]]
    assert s.gpu_count.tolist() == [2, 1] and s.cpu_free.tolist() == [7000, 8000]
    assert s.affinity_counts[0, 1] == 1 and s.pods_free.tolist() == [109, 110]
    assert s.schedulable.tolist() == [False, False]  # NotReady, cordoned: scheduling.nodeready
