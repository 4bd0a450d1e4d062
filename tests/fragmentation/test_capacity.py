"""fits_by_size / stranded_by_size and the frag report on small, hand-checked clusters."""

import pytest

from kubegpu.fragmentation.capacity import fits_by_size, stranded_by_size
from kubegpu.fragmentation.report import frag_report
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape
from kubegpu.placement.state import PlacementState

GIB = 1 << 30


def demo_like() -> PlacementState:
    """10 nodes of 8 GPUs with exactly one free GPU each (the demo's 87.5 % allocation), + a cordoned node."""
    used = [[1000] * 7 + [0]] * 10 + [[0] * 8]
    return PlacementState(names=[f"g{i}" for i in range(11)], cpu_alloc=[96_000] * 11, mem_alloc=[512 * GIB] * 11,
                          cpu_used=[48_000] * 11, dev_total=[[1000] * 8] * 11, dev_used=used,
                          gpu_model=[0] * 11, gpu_models=["A100"], schedulable=[True] * 10 + [False],
                          pool=["a100"] * 11)


def test_one_free_gpu_per_node_fits_only_one_gpu_pods():
    s = demo_like()
    assert fits_by_size(s) == {1: 10, 2: 0, 4: 0, 8: 0}
    # 10 single free GPUs + the cordoned node's 8: a 1-GPU pod uses 10 of 18 free
    assert stranded_by_size(s) == {1: 8.0, 2: 18.0, 4: 18.0, 8: 18.0}


def test_cpu_cap_per_size():
    s = demo_like()
    assert fits_by_size(s, cpu={1: 50_000}) == {1: 0, 2: 0, 4: 0, 8: 0}


def test_partial_devices_are_not_whole_free_devices():
    s = PlacementState(names=["a"], cpu_alloc=[64_000], mem_alloc=[GIB], dev_total=[[1000] * 4],
                       dev_used=[[500, 0, 0, 1]])
    assert fits_by_size(s) == {1: 2, 2: 1, 4: 0, 8: 0}
    assert stranded_by_size(s)[2] == pytest.approx(1.499)   # 3.499 free - one 2-GPU pod


def test_frag_report_contract():
    mix = ShapeMix([TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, weight=3),
                    TaskShape(cpu_milli=4000, num_gpu=4, gpu_milli=1000, weight=1)])
    r = frag_report(demo_like(), mix)
    assert r.gpus.total == 88 and r.gpus.allocated == 70 and r.gpus.free == 18
    assert r.allocation_ratio == pytest.approx(70 / 88, abs=1e-4)
    assert r.fits_by_size == {"1": 10, "2": 0, "4": 0, "8": 0}
    # each of the 10 one-free-GPU nodes: the 4-GPU shape (p=1/4) cannot fit -> 250 milli each;
    # the cordoned empty node still fits both shapes by resources (the measure ignores cordons)
    assert r.fragmentation.amount_milli_gpu == 2500
    assert r.fragmentation.rate == pytest.approx(2500 / 18000, abs=1e-4)
    assert [p.pool for p in r.pools] == ["a100"]


def test_a_node_at_its_pod_limit_counts_no_k_gpu_pod():
    # upstream NodeResourcesFit: a node without a free pod slot fails with "Too many pods"
    s = PlacementState(names=["full", "two-slots"], cpu_alloc=[64_000] * 2, mem_alloc=[GIB] * 2,
                       dev_total=[[1000] * 8] * 2, pods_alloc=[110, 3], pods_used=[110, 1])
    assert fits_by_size(s) == {1: 2, 2: 2, 4: 2, 8: 1}
