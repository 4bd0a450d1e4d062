"""The GPU rules, the gang rule, preemption guards and the assumed-bindings overlay (no HTTP)."""

from __future__ import annotations

import json

import msgspec
import pytest
from clusters import gpu_pod, gpu_rules_cluster, gpu_rules_docs
from loopback import make_extender
from sched_builders import cluster, node, obj

from kubegpu.extender.preempt import decide_preempt
from kubegpu.extender.wire import ExtenderPreemptionArgs


@pytest.fixture(scope="module")
def state():
    return gpu_rules_cluster()


def filter_of(ext, state, name, names=None):
    pod = next(p for p in state.pods if p.name == name)
    names = names or [n.name for n in state.nodes]
    return json.loads(ext.filter(msgspec.json.encode({"Pod": pod, "NodeNames": names})))


def test_two_units_on_time_sliced_gpus_are_unresolvable_shares_not_gpus(state):
    r = filter_of(make_extender(state), state, "two-units-0")
    assert "t4-ts-0" in r["FailedAndUnresolvableNodes"] and "t4-ts-0" not in r["NodeNames"]
    assert "2 nvidia.com/gpu are 2 shares, not 2 whole GPUs" in r["FailedAndUnresolvableNodes"]["t4-ts-0"]
    assert set(r["NodeNames"]) == {"a100-0", "a100-1", "a100-2"}


def test_a_share_needs_room_on_one_device_not_in_total(state):
    # a10-share-0 has 800m free in total, but 400m per device: 600m does not fit, 300m does
    ext = make_extender(state)
    r60 = filter_of(ext, state, "share-60-0")
    assert r60["FailedNodes"]["a10-share-0"] == "kubegpu: 1 GPU with 600m free needed, 0 devices have that much"
    r30 = filter_of(ext, state, "share-30-0")
    assert "a10-share-0" in r30["NodeNames"]


def test_a_gang_that_cannot_be_placed_whole_is_refused_everywhere(state):
    ext = make_extender(state)
    for k in range(3):
        r = filter_of(ext, state, f"big-gang-{k}")
        assert r["NodeNames"] == []
        assert r["FailedNodes"]["a100-2"] == "kubegpu: gang ml/big: 1 of the 3 members it needs can be placed now"
    assert ext.ledger.ring[-1].gang.placeable == 1


def test_a_gang_that_fits_passes(state):
    r = filter_of(make_extender(state), state, "small-gang-0")
    assert set(r["NodeNames"]) == {"a100-0", "a100-1", "a100-2"}


def test_unknown_names_fail_and_all_unknown_is_an_error(state):
    ext = make_extender(state)
    r = filter_of(ext, state, "one-gpu-0", ["a100-2", "ghost"])
    assert r["NodeNames"] == ["a100-2"] and "ghost" in r["FailedNodes"]
    r = filter_of(ext, state, "one-gpu-0", [f"ghost-{i}" for i in range(5000)])
    assert r["Error"].startswith("kubegpu: none of the 5000 nodes is in the extender's cache")
    assert r["NodeNames"] is None


def test_the_filter_histogram_is_the_why_message_when_the_core_rejects_every_node(state):
    # the ledger's histogram is kube-scheduler's own FailedScheduling text (without the preemption part)
    from kubegpu.explain.report import explain_pod
    from kubegpu.model.decode import decode_object
    from kubegpu.scheduling.snapshot import SchedulingSnapshot

    doc = gpu_pod("h100-pinned-0", gpus=2, selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    ext = make_extender(state)
    ext.filter(msgspec.json.encode({"Pod": doc, "NodeNames": [n.name for n in state.nodes]}))
    message = ext.ledger.ring[-1].filter.message
    why = explain_pod(SchedulingSnapshot(state), decode_object(doc)).message
    assert message == "0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector."
    assert why.startswith(message + " ")


def test_assumed_binding_takes_the_room_until_ttl(state):
    ext = make_extender(state, assume_ttl=30)
    names = ["a100-2"]
    pod = state.pod("ml", "eight-0")
    body = msgspec.json.encode({"Pod": pod, "NodeNames": names})
    assert json.loads(ext.prioritize(body))[0]["Score"] == 10
    # a second 8-GPU pod now finds a100-2 taken by the assumed binding
    other = msgspec.json.encode({"Pod": state.pod("ml", "big-gang-0"), "NodeNames": names})
    assert json.loads(ext.prioritize(other))[0]["Score"] == 0
    ext.store.expire(now=ext.store.assumed["ml/eight-0"].expires + 1)
    assert not ext.store.assumed
    assert json.loads(ext.prioritize(other))[0]["Score"] == 10


def test_a_new_generation_drops_assumed_pods_it_shows_bound(state):
    ext = make_extender(state)
    pod = state.pod("ml", "eight-0")
    ext.prioritize(msgspec.json.encode({"Pod": pod, "NodeNames": ["a100-2"]}))
    assert "ml/eight-0" in ext.store.assumed
    docs = gpu_rules_docs()
    for d in docs:
        if d["metadata"]["name"] == "eight-0":
            d["spec"]["nodeName"] = "a100-2"
            d["status"] = {"phase": "Running", "startTime": "2026-11-30T10:00:00Z"}
    ext.store.install(cluster(*docs, version="v1.33.0"))
    assert not ext.store.assumed and len(ext.store.confirmed_after) == 1


def preempt_args(victims: dict[str, list[str]]) -> bytes:
    return msgspec.json.encode({"Pod": gpu_pod("urgent-0", gpus=8, priority=1000),
                                "NodeNameToMetaVictims": {n: {"Pods": [{"UID": u} for u in uids],
                                                              "NumPDBViolations": 0}
                                                          for n, uids in victims.items()}})


def preempt_cluster():
    docs = [node("n0", gpus=8), node("n1", gpus=8), node("n2", gpus=8)]
    group = {"scheduling.x-k8s.io/pod-group": "train"}
    docs += [gpu_pod("train-0", gpus=8, node_name="n0", labels=group),
             gpu_pod("train-1", gpus=8, node_name="n1", labels=group),
             # a long-running pod that never checkpointed vs one that checkpointed a minute ago
             gpu_pod("solo-0", gpus=8, node_name="n2", start="2026-11-01T00:00:00Z"),
             gpu_pod("ckpt-0", gpus=4, node_name="n2", start="2026-11-01T00:00:00Z",
                     annotations={"kubegpu.io/last-checkpoint": "2026-11-30T11:59:00Z"})]
    state = cluster(*docs, obj("PodGroup", "train", ns="ml", api="scheduling.x-k8s.io/v1alpha1",
                               spec={"minMember": 2}), version="v1.33.0")
    state.captured_at = "2026-11-30T12:00:00Z"
    return state


def test_preempt_drops_a_node_whose_victims_would_split_a_running_gang():
    state = preempt_cluster()
    ext = make_extender(state)
    args = msgspec.json.decode(preempt_args({"n0": ["uid-ml-train-0"]}), type=ExtenderPreemptionArgs)
    answer = decide_preempt(ext.store.model, args, max_work_lost=1e9)
    assert not answer.kept and "running gang ml/train" in answer.dropped["n0"]


def test_preempt_drops_a_node_whose_victims_lose_too_much_work_and_keeps_the_cheap_one():
    state = preempt_cluster()
    ext = make_extender(state, max_work_lost=8.0)
    reply = json.loads(ext.preempt(preempt_args({"n2": ["uid-ml-solo-0"], "n1x": ["uid-ml-ckpt-0"]})))
    assert set(reply["NodeNameToMetaVictims"]) == {"n1x"}
    assert reply["NodeNameToMetaVictims"]["n1x"] == {"Pods": [{"UID": "uid-ml-ckpt-0"}], "NumPDBViolations": 0}
    assert "GPU-hours of work since their last checkpoint" in ext.ledger.ring[-1].preempt.dropped["n2"]
