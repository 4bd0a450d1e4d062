"""`why --all` plans a move remedy for every pending workload that has one (no cap), sharing
the search between pods of one shape."""

from sched_builders import cluster, node, pod

from kubegpu.explain import explain_all

TOL = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def test_every_pending_shape_gets_its_move_remedy():
    docs = [node(f"g{i}", gpus=8, cpu="64") for i in range(8)]
    # each node: three 2-GPU pods of a Job (movable), 2 GPUs free: a 4-GPU pod needs one move
    docs += [pod(f"r{i}-{k}", node_name=f"g{i}", gpus=2, tolerations=TOL, owner=("Job", f"r{i}-{k}"))
             for i in range(8) for k in range(3)]
    # nine distinct shapes (cpu differs), three replicas of the first: ten pending pods
    docs += [pod(f"want-{c}", ns="ml", gpus=4, cpu=str(c), tolerations=TOL) for c in range(1, 10)]
    docs += [pod(f"want-1-copy{k}", ns="ml", gpus=4, cpu="1", tolerations=TOL) for k in range(2)]
    reports = explain_all(cluster(*docs))
    assert len(reports) == 11
    missing = [r.pod for r in reports if not any(m.kind == "move-pods" for m in r.remedies)]
    assert not missing
    for r in reports:
        move = next(m for m in r.remedies if m.kind == "move-pods")
        assert len(move.details["moves"]) == 1 and r.pod in move.summary
