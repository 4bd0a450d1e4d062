"""The planner: fewest safe moves per goal, checked against the scheduling core and the frag report."""

import random

import numpy as np
import pytest
from builders import cluster, fragmented, gpu_node, pdb, pod, podgroup

from kubegpu.defrag import Goal, after_state, plan_defrag
from kubegpu.errors import InputError, UsageError
from kubegpu.scheduling.cycle import filter_pod
from kubegpu.scheduling.snapshot import SchedulingSnapshot


def _fits_after(state, plan, key):
    after = after_state(state, plan)
    ns, _, name = key.partition("/")
    outcome = filter_pod(SchedulingSnapshot.from_cluster(after), after.pod(ns, name))
    return outcome.schedulable, [after.nodes[i].name for i in outcome.feasible]


def test_a_pending_pod_gets_room_with_the_fewest_moves():
    st = cluster(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")])
    plan = plan_defrag(st, Goal(kind="pod", pod="ml/big"))
    assert plan.feasible and plan.verified
    assert len(plan.moves) == 3  # 1 free + 3 freed = 4 on one node; nothing cheaper exists
    assert len({m.from_ for m in plan.moves}) == 1
    assert all(m.to != m.from_ for m in plan.moves)
    ok, nodes = _fits_after(st, plan, "ml/big")
    assert ok and plan.targets[0].node in nodes
    assert plan.cordon == [plan.moves[0].from_]
    assert plan.after["fits_by_size"]["4"] == plan.before["fits_by_size"]["4"] + 1


def test_pods_whose_pdb_is_exhausted_are_never_moved():
    objs = fragmented(3, 8, 1) + [pod("big", None, 2, kind="Job", controller="big")]
    # node gpu-0's pods belong to svc-0: protect it with a budget of zero
    objs.append(pdb("svc-0", {"app": "svc-0"}, min_available=7))
    st = cluster(objs)
    plan = plan_defrag(st, Goal(kind="pod", pod="ml/big"))
    assert plan.feasible
    assert all(not m.pod.startswith("ml/w-0-") for m in plan.moves)
    stay = {s.pod: s for s in plan.pods}
    assert "allows no more disruptions" in stay["ml/w-0-0"].reasons[0]


def test_pdb_budget_is_shared_across_the_plan():
    objs = [gpu_node("a", 4), gpu_node("b", 4), gpu_node("c", 4)]
    objs += [pod(f"x{i}", "a", 1, controller="svc") for i in range(3)]
    objs += [pod(f"y{i}", "b", 1, controller="other") for i in range(3)]
    objs += [pod("c0", "c", 2, controller="filler")]
    objs.append(pdb("svc", {"app": "svc"}, max_unavailable=1))
    objs.append(pod("need4", None, 4, kind="Job", controller="need4"))
    st = cluster(objs)
    plan = plan_defrag(st, Goal(kind="pod", pod="ml/need4"))
    moved_svc = [m for m in plan.moves if m.pod.startswith("ml/x")]
    assert len(moved_svc) <= 1  # the svc budget allows one disruption for the whole plan
    assert plan.feasible and len(plan.moves) == 2  # a chain: y0 b->a, then c0 (2 GPUs) c->b
    assert plan.solver.milp_status == "optimal"


def test_gangs_move_whole_and_pending_gangs_are_planned_together():
    objs = [gpu_node(f"n{i}", 4) for i in range(3)]
    gang = {"scheduling.x-k8s.io/pod-group": "ddp"}
    objs += [pod("ddp-0", "n0", 2, kind="Job", controller="ddp", labels=gang),
             pod("ddp-1", "n1", 2, kind="Job", controller="ddp", labels=gang), podgroup("ddp", 2)]
    objs += [pod("s0", "n0", 1, controller="s0"), pod("s1", "n1", 1, controller="s1"),
             pod("s2", "n2", 1, controller="s2"), pod("s3", "n2", 1, controller="s3")]
    pg = {"scheduling.x-k8s.io/pod-group": "ppo"}
    objs += [pod(f"ppo-{i}", None, 2, kind="Job", controller="ppo", labels=pg) for i in range(2)]
    objs.append(podgroup("ppo", 2))
    st = cluster(objs)
    plan = plan_defrag(st, Goal(kind="pod", pod="ml/ppo"))
    assert plan.goal.gang == "ml/ppo" and plan.feasible
    assert {t.pod for t in plan.targets} == {"ml/ppo-0", "ml/ppo-1"}
    ddp = [m for m in plan.moves if m.pod.startswith("ml/ddp")]
    assert len(ddp) in (0, 2)
    if ddp:
        assert ddp[0].step == ddp[1].step and ddp[0].gang == "ml/ddp"
    after = after_state(st, plan)
    snap = SchedulingSnapshot.from_cluster(after)
    for t in plan.targets:
        p = after.pod("ml", t.pod.split("/")[1])
        assert filter_pod(snap, p).fits[snap.index[t.node]]
        snap.assume(p, t.node)


def test_higher_priority_pods_are_not_moved_for_a_lower_priority_pod():
    objs = [gpu_node("n0", 2), gpu_node("n1", 2)]
    objs += [pod("vip", "n0", 1, priority=1000), pod("low", "n1", 1, priority=0)]
    objs.append(pod("want2", None, 2, kind="Job", controller="want2", priority=10))
    plan = plan_defrag(cluster(objs), Goal(kind="pod", pod="ml/want2"))
    assert [m.pod for m in plan.moves] == ["ml/low"] or not plan.moves
    assert plan.feasible is False or plan.targets[0].node == "n1"


def test_destinations_pass_every_filter_not_only_room():
    """n1 has the tightest room for the pod that moves, but a taint the pods do not tolerate:
    the plan must land on n0 (room and every filter), and the pending pod must fit afterwards."""
    maintenance = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
    n1 = gpu_node("n1", 4)
    n1["spec"]["taints"] = [*n1["spec"]["taints"], maintenance]
    objs = [gpu_node("n0", 4), n1, gpu_node("n2", 4)]
    held = pod("held", "n1", 3)
    held["spec"]["tolerations"].append(maintenance)
    objs += [pod("a", "n0", 2), held, pod("c", "n2", 1)]
    objs.append(pod("want4", None, 4, kind="Job", controller="want4"))
    st = cluster(objs)
    plan = plan_defrag(st, Goal(kind="pod", pod="ml/want4"))
    assert plan.feasible and plan.moves
    assert all(m.to != "n1" for m in plan.moves)
    ok, nodes = _fits_after(st, plan, "ml/want4")
    assert ok and plan.targets[0].node in nodes


def test_size_goal_raises_fits_by_size_and_empty_nodes_empties_them():
    st = cluster(fragmented(6, 8, 3))
    plan = plan_defrag(st, Goal(kind="size", size=4, count=2))
    assert plan.feasible and len(plan.moves) == 2
    assert plan.after["fits_by_size"]["4"] >= plan.before["fits_by_size"]["4"] + 2
    assert len(plan.targets) == 2
    plan = plan_defrag(st, Goal(kind="empty-nodes", count=2))
    assert plan.feasible and len(plan.targets) == 2
    after = after_state(st, plan)
    for t in plan.targets:
        assert not after.pods_by_node.get(t.node)


def test_max_moves_and_max_cost_bound_the_plan():
    st = cluster(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")])
    assert not plan_defrag(st, Goal(kind="pod", pod="ml/big", max_moves=2)).feasible
    assert not plan_defrag(st, Goal(kind="pod", pod="ml/big", max_cost_gpu_hours=0.1)).feasible
    assert plan_defrag(st, Goal(kind="pod", pod="ml/big", max_moves=3)).feasible


def test_bad_goals_are_reported():
    st = cluster(fragmented(2, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")])
    with pytest.raises(InputError):
        plan_defrag(st, Goal(kind="pod", pod="ml/nope"))
    with pytest.raises(UsageError):
        plan_defrag(st, Goal(kind="pod", pod="ml/w-0-0"))


def _random_cluster(seed: int):
    rng = random.Random(seed)
    objs = []
    for i in range(rng.randint(4, 7)):
        objs.append(gpu_node(f"n{i}", 8))
        used = 0
        j = 0
        while True:
            g = rng.choice([1, 1, 1, 2, 2, 4])
            if used + g > 8 - rng.choice([0, 1, 1, 2]):
                break
            objs.append(pod(f"p{i}-{j}", f"n{i}", g, controller=f"c{i}-{j}",
                            started=f"2026-12-01T{rng.randint(0, 11):02d}:00:00Z"))
            used += g
            j += 1
    return cluster(objs)


@pytest.mark.parametrize("seed", range(8))
def test_heuristic_is_close_to_the_exact_optimum_on_small_clusters(seed):
    st = _random_cluster(seed)
    plan = plan_defrag(st, Goal(kind="size", size=4, count=2))
    s = plan.solver
    if s.milp_status == "optimal" and s.heuristic_moves is not None:
        assert s.milp_moves <= s.heuristic_moves
        assert len(plan.moves) == min(s.milp_moves, s.heuristic_moves)
    if plan.feasible:
        assert plan.after["fits_by_size"]["4"] >= plan.before["fits_by_size"]["4"] + 2
        assert plan.verified
    else:
        assert s.milp_status in ("infeasible", None) or s.milp_status.startswith("skipped")


def test_plan_json_shape():
    import msgspec

    st = cluster(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")])
    data = msgspec.to_builtins(plan_defrag(st, Goal(kind="pod", pod="ml/big")))
    assert set(data["moves"][0]) >= {"pod", "from", "to", "step", "cost"}
    assert set(data["before"]) >= {"gpus", "fits_by_size", "stranded_by_size", "fragmentation"}
    assert all({"pod", "node", "movable", "reasons"} <= set(p) for p in data["pods"])
    assert np.isclose(data["total_cost_gpu_hours"], sum(m["cost"]["gpu_hours"] for m in data["moves"]))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 4), hs.sampled_from(["4", "30", "60"])),
                min_size=1, max_size=10), hs.integers(1, 8), hs.sampled_from(["8", "40", "90"]))
def test_planner_room_is_the_scheduling_cores_fit(bound, want, cpu):
    """One fit rule: where the planner's start state says a pending pod fits is exactly where
    the scheduling core's filters say it fits (taints, selectors and room alike)."""
    from kubegpu.defrag.planner import pod_targets
    from kubegpu.defrag.problem import build_problem
    from kubegpu.defrag.workstate import WorkState

    objs = [gpu_node(f"n{i}", 8, cpu="96", taint=i != 3) for i in range(4)]
    objs += [pod(f"b{k}", f"n{i}", g, cpu=c) for k, (i, g, c) in enumerate(bound)]
    objs.append(pod("want", None, want, cpu=cpu, kind="Job", controller="want"))
    st = cluster(objs)
    target = st.pod("ml", "want")
    core = filter_pod(SchedulingSnapshot.from_cluster(st), target)
    problem = build_problem(st)
    (spec,) = pod_targets(problem, [target])
    assert WorkState.start(problem).target_fits(spec).tolist() == core.fits.tolist()


def _shared(res: dict) -> dict:
    """Turn a builder object's nvidia.com/gpu into time-sliced nvidia.com/gpu.shared units."""
    return {("nvidia.com/gpu.shared" if k == "nvidia.com/gpu" else k): v for k, v in res.items()}


def test_target_gpus_of_a_time_sliced_pod_are_its_gpu_demand():
    # NVIDIA time-slicing with renameByDefault: nvidia.com/gpu.shared, 4 replicas per device
    nodes = []
    for name in ("ts-a", "ts-b"):
        n = gpu_node(name, gpus=4, labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "1"})
        n["status"]["allocatable"] = n["status"]["capacity"] = _shared(n["status"]["allocatable"])
        nodes.append(n)
    pods = [pod(f"s{i}", node, gpus=1, cpu="1", memory="1Gi") for i, node in
            enumerate(["ts-a", "ts-a", "ts-a", "ts-b", "ts-b", "ts-b"])]
    pods.append(pod("want2", None, gpus=2, cpu="1", memory="1Gi", kind=None))
    for p in pods:
        for c in p["spec"]["containers"]:
            c["resources"] = {k: _shared(v) for k, v in c["resources"].items()}
    st = cluster([*nodes, *pods])
    plan = plan_defrag(st, Goal(kind="pod", pod="ml/want2"))
    assert plan.feasible and len(plan.moves) == 1
    # two of four replicas are half of one device: one GPU device (it read 0 from nvidia.com/gpu before)
    assert [t.gpus for t in plan.targets] == [1]
