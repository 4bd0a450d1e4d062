"""`why`'s move remedy is the plan `kubegpu defrag --for` makes (one planner, one goal), and plans
keep pods inside their node pool unless nothing else works (then they say so)."""

import pytest

from kubegpu.defrag.plan import Goal
from kubegpu.defrag.planner import plan_defrag
from kubegpu.explain import explain_pod
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.sources.demo import demo_objects
from kubegpu.sources.documents import Documents, load_cluster
from kubegpu.scheduling.cycle import filter_pod


@pytest.fixture(scope="module")
def demo():
    docs = Documents(source="demo:pitfalls")
    for obj in demo_objects("pitfalls"):
        docs.add(obj, "demo:pitfalls")
    return load_cluster(docs)


def _pending(state, prefix):
    return next(p for p in state.unscheduled_pods if p.name.startswith(prefix))


@pytest.mark.parametrize("prefix", ["ppo-actor-0", "sft-mixtral"])
def test_why_move_remedy_is_the_defrag_for_plan(demo, prefix):
    pod = _pending(demo, prefix)
    report = explain_pod(SchedulingSnapshot.from_cluster(demo), pod)
    move = next(r for r in report.remedies if r.kind == "move-pods")
    plan = plan_defrag(demo, Goal(kind="pod", pod=pod.key))
    assert [(m["pod"], m["from"], m["to"]) for m in move.details["moves"]] == \
        [(m.pod, m.from_, m.to) for m in plan.moves]
    assert move.details["gpu_hours_lost"] == plan.total_cost_gpu_hours


@pytest.mark.parametrize("prefix", ["ppo-actor-0", "sft-mixtral"])
def test_plans_stay_inside_the_pool_when_they_can(demo, prefix):
    snap = SchedulingSnapshot.from_cluster(demo)
    plan = plan_defrag(demo, Goal(kind="pod", pod=_pending(demo, prefix).key))
    assert plan.feasible and not plan.crosses_pools
    pool = dict(zip(snap.names, snap.pools))
    assert all(pool[m.from_] == pool[m.to] for m in plan.moves)


def test_no_move_plan_is_searched_when_the_allowed_nodes_lack_the_room_in_total(demo):
    """Moves conserve free room: a pod asking more GPUs than the allowed nodes have free in total
    gets no move remedy, and the defrag planner agrees that no plan exists."""
    from kubegpu.explain.remedies import room_anywhere

    snap = SchedulingSnapshot.from_cluster(demo)
    pod = _pending(demo, "sft-mixtral")
    assert room_anywhere(snap, filter_pod(snap, pod))
    free = int((snap.alloc - snap.requested)[:, snap.column["nvidia.com/gpu"]].sum())
    import msgspec

    from kubegpu.explain.variants import with_resource

    big = with_resource(pod, "nvidia.com/gpu", free + 1)
    big = msgspec.structs.replace(big, metadata=msgspec.structs.replace(big.metadata, name="too-big"))
    assert not room_anywhere(snap, filter_pod(snap, big))
