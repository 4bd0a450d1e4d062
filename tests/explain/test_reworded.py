"""Remedies shared between pods of one shape are worded for each pod from fields, not by replacing text."""

from sched_builders import cluster, node, pod

from kubegpu.explain import explain_all

TOL = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def test_a_key_that_prefixes_another_key_or_is_a_node_name_is_not_rewritten():
    # review one-semantics §2.2: the first pod's key "ml/a" is a prefix of the moved pod "ml/a-runner"
    # and also the name of a node (a dump may hold one); the second pod's wording must keep both
    state = cluster(node("ml/a", gpus=8), node("n2", gpus=8),
                    pod("a-runner", ns="ml", node_name="ml/a", gpus=4, tolerations=TOL, owner=("Job", "r")),
                    pod("x", ns="ml", node_name="n2", gpus=4, tolerations=TOL, owner=("Job", "x")),
                    pod("a", ns="ml", gpus=8, tolerations=TOL), pod("b", ns="ml", gpus=8, tolerations=TOL))
    reports = {r.pod: r for r in explain_all(state)}
    first = next(r for r in reports["ml/a"].remedies if r.kind == "move-pods")
    second = next(r for r in reports["ml/b"].remedies if r.kind == "move-pods")
    assert first.for_pod == "ml/a" and second.for_pod == "ml/b"
    assert second.details["moves"] == first.details["moves"]  # one plan, worded for each pod
    assert [t["pod"] for t in second.details["targets"]] == ["ml/b"]
    assert second.summary.endswith("kubegpu defrag --for ml/b)")
    for m in second.details["moves"]:
        assert f"{m['pod']} {m['from']} -> {m['to']}" in second.summary  # moved pods and nodes as they are
    assert second.summary.replace("--for ml/b", "--for ml/a") == first.summary
