"""The doctor's defrag preview: room for the largest pending GPU pod, never applied."""

import msgspec
from builders import cluster, fragmented, pod

from kubegpu.defrag.preview import defrag_preview


def test_preview_plans_for_the_largest_pending_gpu_pod():
    st = cluster(fragmented(4, 8, 1) + [pod("small", None, 1, kind="Job", controller="small"),
                                        pod("big", None, 4, kind="Job", controller="big")])
    preview = defrag_preview(st)
    assert preview.applied is False and preview.feasible
    assert preview.target == "ml/big" and preview.gpus == 4
    assert len(preview.moves) == 3 and preview.cost_gpu_hours > 0
    assert preview.message.startswith("not applied")
    assert preview.command == "kubegpu defrag --for ml/big"
    data = msgspec.to_builtins(preview)
    assert {"pod", "from", "to", "gpu_hours"} == set(data["moves"][0])


def test_preview_without_pending_gpu_pods():
    preview = defrag_preview(cluster(fragmented(2, 8, 1)))
    assert not preview.feasible and preview.target is None and "no pending GPU pod" in preview.message


def test_preview_plans_as_defrag_does_without_a_standing_per_pod():
    # the preview shows moves and fragmentation only: the same plan as `kubegpu defrag --for`, no standings asked
    from kubegpu.defrag.plan import Goal
    from kubegpu.defrag.planner import plan_defrag

    st = cluster(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")])
    full = plan_defrag(st, Goal(kind="pod", pod="ml/big"))
    bare = plan_defrag(st, Goal(kind="pod", pod="ml/big"), standings=False)
    assert full.pods and bare.pods == []
    assert [(m.pod, m.from_, m.to) for m in bare.moves] == [(m.pod, m.from_, m.to) for m in full.moves]
    assert (bare.before, bare.after) == (full.before, full.after) and bare.feasible == full.feasible
    preview = defrag_preview(st)
    assert [(m.pod, m.from_, m.to) for m in preview.moves] == [(m.pod, m.from_, m.to) for m in full.moves]
