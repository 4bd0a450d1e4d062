"""Invariants of the sharing replay on generated pools (hypothesis): every candidate is placed when there is
room, on no fewer GPUs than ceil(candidates / replicas) and no more than today; the figures agree."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.money.cluster import cluster_prices
from kubegpu.money.prices import parse_prices
from kubegpu.sharing.candidates import audit_thresholds
from kubegpu.sharing.report import share_report
from kubegpu.sources.documents import Documents, load_cluster

from .cluster import node, pod

PRICES = parse_prices("prices: [{pool: inf, perGpuHour: 2}]", where="test")


def cluster(layout: list[tuple[int, int]]):
    """One node per (inference pods, GPUs of one training pod); 8 GPUs each."""
    docs = Documents(source="test")
    for i, (small, big) in enumerate(layout):
        docs.add(node(f"n{i}"), "test")
        for k in range(small):
            docs.add(pod(f"inf-{i}-{k}", gpus=1, owner=("ReplicaSet", "web-5f"), node_name=f"n{i}"), "test")
        if big:
            docs.add(pod(f"train-{i}", gpus=big, owner=("Job", f"train-{i}"), node_name=f"n{i}", ns="ml"), "test")
    return load_cluster(docs)


layouts = st.lists(st.integers(0, 8).flatmap(lambda small: st.tuples(st.just(small), st.integers(0, 8 - small))),
                   min_size=1, max_size=4)


@settings(max_examples=30, deadline=None)
@given(layout=layouts, replicas=st.sampled_from([2, 4, 7]))
def test_replay_invariants(layout, replicas):
    state = cluster(layout)
    report = share_report(state, cluster_prices(state, PRICES), pool="inf", replicas=replicas,
                          limits=audit_thresholds())
    candidates = sum(small for small, _ in layout)
    assert len(report.candidates) == candidates
    p = report.prediction
    if not candidates:
        assert p is None and report.config is None
        return
    assert p.candidates_placed + len(p.candidates_not_placed) == candidates
    if not p.candidates_not_placed:
        assert math.ceil(candidates / replicas) <= p.candidate_gpus.after <= candidates
    assert p.candidate_gpus.before == candidates
    assert p.gpus_freed == p.whole_gpus_free.after - p.whole_gpus_free.before
    total = 8 * len(layout)
    assert 0 <= p.whole_gpus_free.after <= total - 8 * len(p.shared_nodes)
    assert p.saves_gpu_hours_per_day == max(p.gpus_freed, 0) * 24
    assert p.saves_per_day.amount == p.saves_gpu_hours_per_day * 2
    assert report.config.valid
