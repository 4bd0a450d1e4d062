"""Invariants of the extender on random GPU clusters (whole, time-sliced and shared GPUs, gangs)."""

from __future__ import annotations

import json
import random

import msgspec
import numpy as np
from clusters import gpu_pod, shared_node
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from loopback import make_extender
from sched_builders import cluster, node

from kubegpu.scheduling.cycle import run_filters
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import version_of

PROPS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_cluster(seed: int):
    """6-14 nodes of four kinds, random bound pods, pending pods of random shapes, one gang."""
    rng = random.Random(seed)
    docs, nodes = [], []
    for i in range(rng.randint(6, 14)):
        kind = rng.choice(["a100", "h100x4", "t4-ts", "a10-share", "cpu"])
        name = f"{kind}-{i}"
        if kind == "a100":
            docs.append(node(name, gpus=8))
        elif kind == "h100x4":
            docs.append(node(name, gpus=4, product="NVIDIA-H100-80GB-HBM3"))
        elif kind == "t4-ts":
            docs.append(shared_node(name, replicas=4, physical=2))
        elif kind == "a10-share":
            docs.append(shared_node(name, replicas=10, physical=2, product="NVIDIA-A10"))
        else:
            docs.append(node(name))
        nodes.append((name, kind))
    k = 0
    for name, kind in nodes:
        for _ in range(rng.randint(0, 3)):
            k += 1
            if kind in ("a100", "h100x4"):
                docs.append(gpu_pod(f"run-{k}", gpus=rng.choice([1, 2, 4]), node_name=name))
            elif kind == "a10-share":
                docs.append(gpu_pod(f"run-{k}", gpus=1, cores=rng.choice([20, 30, 50]), node_name=name))
            elif kind == "t4-ts":
                docs.append(gpu_pod(f"run-{k}", gpus=1, node_name=name))
    shapes = [dict(gpus=1), dict(gpus=2), dict(gpus=4), dict(gpus=8), dict(gpus=1, cores=40),
              dict(gpus=1, cores=70), dict(gpus=1, selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
              dict(gpus=2, selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"})]
    for j in range(6):
        docs.append(gpu_pod(f"pend-{j}", **rng.choice(shapes)))
    size = rng.randint(2, 6)
    gang_gpus = rng.choice([4, 8])
    for j in range(size):
        docs.append(gpu_pod(f"gang-{j}", gpus=gang_gpus, labels={"scheduling.x-k8s.io/pod-group": "g"}))
    return cluster(*docs, version="v1.33.0"), rng


def filter_json(ext, pod, names):
    return json.loads(ext.filter(msgspec.json.encode({"Pod": pod, "NodeNames": names})))


@PROPS
@given(seed=hs.integers(0, 10**6))
def test_filter_answers_only_given_names_and_never_passes_what_the_core_rejects(seed):
    state, rng = random_cluster(seed)
    ext = make_extender(state)
    snap = SchedulingSnapshot(state)
    all_names = [n.name for n in state.nodes]
    for pod in state.unscheduled_pods:
        names = rng.sample(all_names, rng.randint(1, len(all_names))) + ["not-a-node"]
        r = filter_json(ext, pod, names)
        answered = set(r["NodeNames"]) | set(r["FailedNodes"]) | set(r["FailedAndUnresolvableNodes"])
        assert answered == set(names)                                # every name answered once, none added
        assert not set(r["NodeNames"]) & (set(r["FailedNodes"]) | set(r["FailedAndUnresolvableNodes"]))
        core = run_filters(snap, pod, version_of("v1.33.0"))
        feasible = {snap.names[i] for i in core.feasible}
        assert set(r["NodeNames"]) <= feasible
        facts = ext.store.model.node_gpus
        for name in r["NodeNames"]:
            g = facts[snap.index[name]]
            units = pod.spec.containers[0].resources.limits.get("nvidia.com/gpu", "0")
            if g.sharing == "time-slicing":
                assert int(units) <= 1                              # shares are never sold as whole GPUs
            pin = pod.spec.node_selector.get("nvidia.com/gpu.product")
            if pin:
                assert g.model == pin


@PROPS
@given(seed=hs.integers(0, 10**6))
def test_no_gang_is_partly_admitted(seed):
    state, _ = random_cluster(seed)
    ext = make_extender(state)
    names = [n.name for n in state.nodes]
    members = [p for p in state.unscheduled_pods if p.name.startswith("gang-")]
    passed = [bool(filter_json(ext, p, names)["NodeNames"]) for p in members]
    placement = ext.ledger.ring[-1].gang
    if placement.bound + placement.placeable < placement.min_member:
        assert not any(passed)
    else:
        assert all(passed)


@PROPS
@given(seed=hs.integers(0, 10**6), policy=hs.sampled_from(["fgd", "kubegpu", "bestfit", "least-allocated"]))
def test_prioritize_scores_the_policy_choice_10_and_keeps_the_policy_order(seed, policy):
    from kubegpu.extender.podfacts import PodFacts
    from kubegpu.extender.prioritize import decide_prioritize

    state, _ = random_cluster(seed)
    ext = make_extender(state, policy=policy)
    names = [n.name for n in state.nodes]
    for pod in state.unscheduled_pods:
        answer = decide_prioritize(ext.store, ext.store.model, PodFacts.of(pod), names, assume=False)
        scores, ps = answer.scores, answer.policy_score
        assert ((scores >= 0) & (scores <= 10)).all()
        if answer.chosen is None:
            assert (scores == 0).all()
            continue
        assert scores[answer.chosen] == 10 and (scores == 10).sum() == 1
        cand = np.flatnonzero(~np.isnan(ps))
        others = cand[cand != answer.chosen]
        for a in others:
            for b in others:
                if ps[a] > ps[b]:
                    assert scores[a] >= scores[b]
        # the policy's own choice on the same state is the node scored 10 (among the nodes of the
        # chosen node's GPU kind, on which the pod is one task; kinds compete by policy score)
        live, task, model = ext.store.live, answer.task, ext.store.model
        kind = model.gpu_group[model.index[names[answer.chosen]]]
        feasible = np.zeros(live.n_nodes, dtype=bool)
        same = [model.index[names[j]] for j in cand if model.gpu_group[model.index[names[j]]] == kind]
        feasible[same] = True
        direct = ext.store.policy.choose(live, task, feasible)
        assert names[answer.chosen] == live.names[direct.node]


@PROPS
@given(seed=hs.integers(0, 10**6))
def test_a_ledger_record_replays_to_the_same_choice(seed, tmp_path_factory):
    from kubegpu.extender.ledger import read_ledger

    state, _ = random_cluster(seed)
    path = tmp_path_factory.mktemp("ledger") / "d.ndjson"
    ext = make_extender(state, ledger=str(path), assume=False)
    names = [n.name for n in state.nodes]
    for pod in state.unscheduled_pods:
        ext.prioritize(msgspec.json.encode({"Pod": pod, "NodeNames": names}))
    ext.ledger.close()
    records = [d for d in read_ledger(path) if d.mode == "extender-prioritize"]
    assert len(records) == len(state.unscheduled_pods)
    replay = make_extender(state, assume=False)
    for rec in records:
        pod = state.pod(rec.pod.namespace, rec.pod.name)
        again = json.loads(replay.prioritize(msgspec.json.encode({"Pod": pod, "NodeNames": names})))
        top = [h["Host"] for h in again if h["Score"] == 10]
        assert top == ([rec.chosen] if rec.chosen else [])
        assert rec.generation == replay.store.generation
