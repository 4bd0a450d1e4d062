"""Each policy makes the choice its definition (paper / authors' simulator / kube-scheduler) says."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.errors import UsageError
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape
from kubegpu.placement.registry import PAPER_POLICIES, POLICY_NAMES, make_policy
from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Task

GIB = 1 << 30
MIX = ShapeMix([TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, weight=5),
                TaskShape(cpu_milli=2000, num_gpu=1, gpu_milli=500, weight=3),
                TaskShape(cpu_milli=8000, num_gpu=2, gpu_milli=1000, weight=1),
                TaskShape(cpu_milli=1000, weight=1)])


def nodes(used: list[list[int]], cpu_used: list[int] | None = None) -> PlacementState:
    n = len(used)
    width = max(len(u) for u in used)
    return PlacementState(names=[f"n{i}" for i in range(n)], cpu_alloc=[64_000] * n, mem_alloc=[256 * GIB] * n,
                          cpu_used=cpu_used, dev_total=[[1000] * len(u) + [0] * (width - len(u)) for u in used],
                          dev_used=[u + [0] * (width - len(u)) for u in used], gpu_model=[0] * n, gpu_models=["G"])


def choose(name: str, state: PlacementState, task: Task, seed: int = 0):
    return make_policy(name, mix=MIX, seed=seed).choose(state, task, state.fit_mask(task))


def test_registry_lists_every_cli_name():
    assert POLICY_NAMES == ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd",
                            "least-allocated", "most-allocated", "kubegpu")
    assert set(PAPER_POLICIES) <= set(POLICY_NAMES)
    with pytest.raises(UsageError):
        make_policy("first-fit")
    with pytest.raises(UsageError):
        make_policy("fgd")  # needs a mix


def test_bestfit_takes_the_fullest_node_and_tightest_device():
    s = nodes([[0, 0, 0, 0], [1000, 1000, 700, 0], [1000, 0, 0, 0]])
    where = choose("bestfit", s, Task(cpu_milli=1000, num_gpu=1, gpu_milli=200))
    assert where.node == 1 and where.devices == (2,)


def test_gpu_packing_prefers_partial_devices_then_used_nodes_then_idle():
    s = nodes([[0, 0, 0, 0], [1000, 0, 0, 0], [600, 0, 0, 0]])
    assert choose("gpu-packing", s, Task(cpu_milli=1, num_gpu=1, gpu_milli=300)).node == 2
    assert choose("gpu-packing", s, Task(cpu_milli=1, num_gpu=1, gpu_milli=1000)).node in (1, 2)
    s2 = nodes([[0, 0, 0, 0], [1000, 0, 0, 0]])
    assert choose("gpu-packing", s2, Task(cpu_milli=1, num_gpu=2, gpu_milli=1000)).node == 1


def test_gpu_clustering_keeps_request_classes_together():
    s = nodes([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    share, whole = Task(cpu_milli=1, num_gpu=1, gpu_milli=300), Task(cpu_milli=1, num_gpu=1, gpu_milli=1000)
    policy = make_policy("gpu-clustering")
    s.place(whole, policy.choose(s, whole, s.fit_mask(whole)))         # idle nodes tie -> n0
    s.place(share, policy.choose(s, share, s.fit_mask(share)))         # n0 hosts another class -> idle n1
    assert s.affinity_counts[0].tolist()[1] == 1 and s.affinity_counts[1].tolist()[0] == 1
    assert policy.choose(s, share, s.fit_mask(share)).node == 1
    assert policy.choose(s, whole, s.fit_mask(whole)).node == 0


def test_dotprod_avoids_aligned_nodes():
    # n0 has lots of free GPU, n1 little: the GPU-heavy task goes where the dot product is smallest
    s = nodes([[0, 0, 0, 0], [1000, 1000, 1000, 0]])
    assert choose("dotprod", s, Task(cpu_milli=1000, num_gpu=1, gpu_milli=1000)).node == 1


def test_least_and_most_allocated_spread_and_pack():
    s = nodes([[0, 0], [1000, 0]], cpu_used=[0, 32_000])
    task = Task(cpu_milli=1000, mem_bytes=GIB, num_gpu=1, gpu_milli=1000)
    assert choose("least-allocated", s, task).node == 0
    assert choose("most-allocated", s, task).node == 1


def test_random_is_reproducible_per_seed_and_uses_feasible_nodes():
    s = nodes([[0, 0]] * 6 + [[1000, 1000]])
    task = Task(cpu_milli=1, num_gpu=1, gpu_milli=400)
    picks = [choose("random", s, task, seed=7).node for _ in range(3)]
    assert len(set(picks)) == 1
    assert {choose("random", s, task, seed=k).node for k in range(30)} <= set(range(6))
    assert len({choose("random", s, task, seed=k).node for k in range(30)}) > 1


def test_fgd_prefers_the_node_whose_fragmentation_grows_least():
    # n1 has one free device: half of it still fits the 0.5 shape, whereas on the idle n0 the task
    # would break a whole GPU (fragment for the 1- and 2-GPU shapes). n0 wins ties, so this is Δ.
    s = nodes([[0, 0, 0, 0], [0, 1000, 1000, 1000]])
    for name in ("fgd", "kubegpu"):
        assert choose(name, s, Task(cpu_milli=4000, num_gpu=1, gpu_milli=500)).node == 1


def test_policies_return_none_without_feasible_node():
    s = nodes([[1000, 1000]])
    task = Task(cpu_milli=1, num_gpu=1, gpu_milli=10)
    for name in POLICY_NAMES:
        assert make_policy(name, mix=MIX, seed=1).choose(s, task, s.fit_mask(task)) is None


task_strategy = st.builds(
    lambda cpu, mem, kind, milli: Task(cpu_milli=cpu, mem_bytes=mem * GIB,
                                       num_gpu={0: 0, 1: 1, 2: 1, 3: 2, 4: 4}[kind],
                                       gpu_milli={0: 0, 1: milli, 2: 1000, 3: 1000, 4: 1000}[kind]),
    st.integers(0, 40_000), st.integers(0, 200), st.integers(0, 4), st.integers(1, 999))


@settings(max_examples=25, deadline=None)
@given(tasks=st.lists(task_strategy, min_size=1, max_size=40), policy=st.sampled_from(POLICY_NAMES),
       seed=st.integers(0, 1000))
def test_a_placement_never_over_allocates(tasks, policy, seed):
    s = PlacementState(names=["a", "b", "c"], cpu_alloc=[64_000, 32_000, 96_000],
                       mem_alloc=[256 * GIB, 128 * GIB, 384 * GIB],
                       dev_total=[[1000] * 8, [1000, 1000, 0, 0, 0, 0, 0, 0], [1000] * 4 + [0] * 4],
                       gpu_model=[0, 1, 0], gpu_models=["A", "B"])
    chooser = make_policy(policy, mix=MIX, seed=seed)
    for task in tasks:
        feasible = s.fit_mask(task)
        where = chooser.choose(s, task, feasible)
        assert (where is None) == (not feasible.any())
        if where is not None:
            assert feasible[where.node]
            s.place(task, where)   # raises on over-allocation
        assert (s.dev_free >= 0).all() and (s.dev_free <= s.dev_total).all()
        assert (s.cpu_free >= 0).all() and (s.mem_free >= 0).all()


def test_kubegpu_breaks_fgd_ties_away_from_memory_starved_nodes():
    mix = ShapeMix([TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, mem_bytes=48 * GIB)])
    # two idle 8-GPU nodes: the same FGD score; n0 comes first but has only 200 GiB of memory
    s = PlacementState(names=["n0", "n1"], cpu_alloc=[96_000, 96_000], mem_alloc=[200 * GIB, 400 * GIB],
                       dev_total=[[1000] * 8] * 2, gpu_model=[0, 0], gpu_models=["G"])
    task = Task(cpu_milli=4000, mem_bytes=64 * GIB, num_gpu=1, gpu_milli=1000)
    assert make_policy("fgd", mix=mix).choose(s, task, s.fit_mask(task)).node == 0
    assert make_policy("kubegpu", mix=mix).choose(s, task, s.fit_mask(task)).node == 1
    # with no memory in the workload it is exactly FGD
    blind = ShapeMix([TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000)])
    assert make_policy("kubegpu", mix=blind).choose(s, task, s.fit_mask(task)).node == 0


def test_kubegpu_does_not_hold_pinned_gpu_models_back_from_unpinned_pods():
    # Keeping unpinned pods off the models pinned shapes need over-reserved when little demand is
    # pinned (2 % of GPU pods pinned to T4: 12 % unallocated against FGD's 4.7 %): among near-ties
    # the node order decides, as in FGD, whatever models the mix pins.
    free = TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, mem_bytes=48 * GIB, weight=49)
    pinned = TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, models=frozenset({"T4"}), weight=1)
    mix = ShapeMix([free, pinned])
    # a T4 node first in order and a G2 node: both idle, the same FGD score, the same memory
    s = PlacementState(names=["t4", "g2"], cpu_alloc=[96_000] * 2, mem_alloc=[400 * GIB] * 2,
                       dev_total=[[1000] * 2] * 2, gpu_model=[0, 1], gpu_models=["T4", "G2"])
    task = Task(cpu_milli=4000, mem_bytes=32 * GIB, num_gpu=1, gpu_milli=1000)
    assert make_policy("fgd", mix=mix).choose(s, task, s.fit_mask(task)).node == 0
    assert make_policy("kubegpu", mix=mix).choose(s, task, s.fit_mask(task)).node == 0
    t4 = Task(cpu_milli=4000, mem_bytes=32 * GIB, num_gpu=1, gpu_milli=1000, models=frozenset({"T4"}))
    assert make_policy("kubegpu", mix=mix).choose(s, t4, s.fit_mask(t4)).node == 0


def test_kubegpu_balances_memory_among_nodes_of_a_pinned_model():
    free = TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, mem_bytes=48 * GIB, weight=3)
    pinned = TaskShape(cpu_milli=4000, num_gpu=1, gpu_milli=1000, models=frozenset({"G2"}), weight=1)
    # only G2 nodes: no other model to step to, so memory balance decides among them
    s = PlacementState(names=["n0", "n1"], cpu_alloc=[96_000] * 2, mem_alloc=[80 * GIB, 400 * GIB],
                       dev_total=[[1000] * 2] * 2, gpu_model=[0, 0], gpu_models=["G2"])
    task = Task(cpu_milli=4000, mem_bytes=64 * GIB, num_gpu=1, gpu_milli=1000)
    assert make_policy("kubegpu", mix=ShapeMix([free, pinned])).choose(s, task, s.fit_mask(task)).node == 1
