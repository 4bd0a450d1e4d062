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
