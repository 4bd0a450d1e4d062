"""The FGD measure, pinned to the paper's worked example and the authors' definitions."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.fragmentation.measure import cluster_fragmentation, fragment_matrix, node_fragmentation
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape, mix_from_tasks
from kubegpu.placement.policies.fgd import FGD
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Task

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "alibaba-gpu-v2023"
PAPER_MIX = ShapeMix([TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=g) for g in (300, 500, 700)])


def one_node(free_a: int, free_b: int) -> PlacementState:
    return PlacementState(names=["n"], cpu_alloc=[64_000], mem_alloc=[1 << 40], dev_total=[[1000, 1000]],
                          dev_used=[[1000 - free_a, 1000 - free_b]], gpu_model=[0], gpu_models=["A"])


def frag_of(state: PlacementState, mix: ShapeMix = PAPER_MIX) -> float:
    access = mix.access(state.gpu_model, state.gpu_models)
    return float(node_fragmentation(state.cpu_free, state.dev_free, access, mix)[0])


def test_paper_worked_example_start_state():
    # <A=0.5, B=1.0>: only the 0.7 task sees GPU-A as fragment -> F = 0.5/3 GPU
    assert frag_of(one_node(500, 1000)) == pytest.approx(500 / 3)


@pytest.mark.parametrize("free_a, free_b, expected", [
    (200, 1000, 200.0),                 # 0.3 on GPU-A: <0.2, 1.0>, 0.2 is fragment for all three
    (500, 700, 500 / 3),                # 0.3 on GPU-B: unchanged
    (0, 700, 0.0),                      # 0.5 on GPU-A
    (500, 200, (200 + 200 + 700) / 3),  # 0.5 on GPU-B
])
def test_paper_worked_example_after_placement(free_a, free_b, expected):
    assert frag_of(one_node(free_a, free_b)) == pytest.approx(expected)


@pytest.mark.parametrize("gpu_milli, device", [(300, 1), (500, 0), (700, 1)])
def test_fgd_picks_the_device_the_paper_picks(gpu_milli, device):
    state = one_node(500, 1000)
    task = Task(cpu_milli=0, num_gpu=1, gpu_milli=gpu_milli)
    where = FGD(PAPER_MIX).choose(state, task, state.fit_mask(task))
    assert where.devices == (device,)


def test_cpu_only_shapes_see_every_idle_gpu_as_fragment():
    mix = ShapeMix([TaskShape(cpu_milli=1000)])
    assert frag_of(one_node(300, 1000), mix) == pytest.approx(1300)


def test_lack_of_cpu_makes_all_idle_gpu_fragment():
    mix = ShapeMix([TaskShape(cpu_milli=100_000, num_gpu=1, gpu_milli=500)])
    assert frag_of(one_node(600, 1000), mix) == pytest.approx(1600)


def test_gpu_model_mismatch_makes_all_idle_gpu_fragment():
    pinned = ShapeMix([TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=100, models=frozenset({"B"}))])
    allowed = ShapeMix([TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=100, models=frozenset({"A", "B"}))])
    assert frag_of(one_node(600, 1000), pinned) == pytest.approx(1600)
    assert frag_of(one_node(600, 1000), allowed) == pytest.approx(0)


def test_whole_gpu_shapes_count_every_partial_device():
    mix = ShapeMix([TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=1000)])
    assert frag_of(one_node(999, 1000), mix) == pytest.approx(999)
    two = ShapeMix([TaskShape(cpu_milli=0, num_gpu=2, gpu_milli=1000)])
    assert frag_of(one_node(999, 1000), two) == pytest.approx(1999)


def test_memory_aware_measure_counts_lack_of_memory():
    mix = ShapeMix([TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=500, mem_bytes=2 << 40)])
    state = one_node(1000, 1000)
    access = mix.access(state.gpu_model, state.gpu_models)
    blind = node_fragmentation(state.cpu_free, state.dev_free, access, mix)
    aware = node_fragmentation(state.cpu_free, state.dev_free, access, mix, state.mem_free)
    assert blind[0] == 0 and aware[0] == 2000


def test_empty_openb_cluster_is_about_14_percent_fragmented():
    """fgd-paper-facts §2.1: the empty 6,212-GPU cluster measures ≈ 13.9 % (CPU-only shapes)."""
    if not SHARED.exists():
        pytest.skip("shared Alibaba trace not available beside the project")
    from kubegpu.simulate.trace import load_nodes, load_pods, trace_state

    state = trace_state(load_nodes(SHARED / "openb_node_list_gpu_node.csv"))
    mix = mix_from_tasks(load_pods(SHARED / "openb_pod_list_default.csv"))
    access = mix.access(state.gpu_model, state.gpu_models)
    frag = cluster_fragmentation(node_fragmentation(state.cpu_free, state.dev_free, access, mix), state.dev_free)
    assert len(mix) == 35
    assert 100 * frag.rate == pytest.approx(13.94, abs=0.05)


devices = st.lists(st.integers(0, 1000), min_size=1, max_size=8)
shapes = st.lists(st.tuples(st.integers(0, 64_000), st.sampled_from([0, 1, 2, 4]), st.integers(1, 1000),
                            st.floats(0.01, 10)), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 96_000), devices), min_size=1, max_size=6), shape_list=shapes)
def test_fragment_never_exceeds_idle_and_rate_is_a_fraction(nodes, shape_list):
    width = max(len(d) for _, d in nodes)
    dev = np.array([d + [0] * (width - len(d)) for _, d in nodes], dtype=np.int32)
    cpu = np.array([c for c, _ in nodes], dtype=np.int64)
    mix = ShapeMix([TaskShape(cpu_milli=c, num_gpu=k, gpu_milli=g if k else 0, weight=w)
                    for c, k, g, w in shape_list])
    access = np.ones((len(nodes), len(mix)), dtype=bool)
    per_shape = fragment_matrix(cpu, dev, access, mix)
    assert (per_shape <= dev.sum(axis=1)[:, None] + 1e-9).all() and (per_shape >= 0).all()
    frag = cluster_fragmentation(node_fragmentation(cpu, dev, access, mix), dev)
    assert frag.amount_milli_gpu <= frag.idle_milli_gpu + 1e-6
    assert 0.0 <= frag.rate <= 1.0 + 1e-12
