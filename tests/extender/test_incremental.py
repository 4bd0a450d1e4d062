"""Watched pod events reach the scores at once, on the assumed-bindings overlay, before any rebuild."""

from __future__ import annotations

import copy
import json
import time
from functools import partial

import msgspec
import pytest
from clusters import gpu_pod, gpu_rules_docs
from loopback import make_extender
from test_live import wait_for

from apiserver import watch
from kubegpu.extender.ledger import Ledger
from kubegpu.extender.live import ExtenderLiveCache, observe_pod_event
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.service import Extender
from kubegpu.extender.state import ExtenderStore
from kubegpu.web.watch import LiveRefresher
from sched_builders import cluster

NODES = ["a100-0", "a100-1", "a100-2", "t4-ts-0", "a10-share-0", "cpu-0"]
EIGHT = gpu_pod("eight-0", gpus=8)


def event(kind: str, doc: dict) -> bytes:
    return msgspec.json.encode({"type": kind, "object": doc})


def bound(doc: dict, node: str, *, uid: str = "uid-elsewhere-7") -> dict:
    out = copy.deepcopy(doc)
    out["metadata"]["uid"] = uid
    out["spec"]["nodeName"] = node
    out["status"] = {"phase": "Running", "startTime": "2026-11-30T10:00:00Z"}
    return out


def passed(ext: Extender, pod: dict) -> list[str]:
    return json.loads(ext.filter(msgspec.json.encode({"Pod": pod, "NodeNames": NODES})))["NodeNames"]


def top(ext: Extender, pod: dict) -> list[str]:
    reply = json.loads(ext.prioritize(msgspec.json.encode({"Pod": pod, "NodeNames": NODES})))
    return [h["Host"] for h in reply if h["Score"] == 10]


@pytest.fixture
def ext():
    return make_extender(cluster(*gpu_rules_docs(), version="v1.33.0"), assume=False)


def test_a_bind_by_another_scheduler_fills_its_node_before_any_rebuild(ext):
    generation = ext.store.generation
    assert "a100-2" in passed(ext, EIGHT)
    other = bound(gpu_pod("other-eight-0", gpus=8), "a100-2")
    assert observe_pod_event(ext.store, event("ADDED", other))
    assert ext.store.generation == generation
    assert "a100-2" not in passed(ext, EIGHT) and top(ext, EIGHT) == []
    # the same event again changes nothing; a status update of the bound pod neither
    assert not observe_pod_event(ext.store, event("MODIFIED", other))
    body, _ = ext.metrics.render("")
    assert b"kubegpu_extender_watched_pod_events_total 1.0" in body


def test_a_watched_pod_that_ends_gives_its_gpus_back(ext):
    other = bound(gpu_pod("other-eight-0", gpus=8), "a100-2")
    observe_pod_event(ext.store, event("ADDED", other))
    done = copy.deepcopy(other)
    done["status"]["phase"] = "Succeeded"
    assert observe_pod_event(ext.store, event("MODIFIED", done))
    assert "a100-2" in passed(ext, EIGHT) and top(ext, EIGHT) == ["a100-2"]
    observe_pod_event(ext.store, event("ADDED", other))
    assert observe_pod_event(ext.store, event("DELETED", other))
    assert "a100-2" in passed(ext, EIGHT)


def test_a_bind_elsewhere_moves_an_assumed_pod(ext):
    ext.assume = True
    assert top(ext, EIGHT) == ["a100-2"]                 # assumed on a100-2
    assert "ml/eight-0" in ext.store.assumed
    small = bound(EIGHT, "a100-1", uid="uid-eight")      # its scheduler put it elsewhere (6 free there: no fit)
    small["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "2"},
                                                   "limits": {"nvidia.com/gpu": "2"}}
    assert observe_pod_event(ext.store, event("MODIFIED", small))
    held = ext.store.assumed["ml/eight-0"]
    assert held.node == "a100-1" and held.observed
    ext.assume = False
    assert "a100-2" in passed(ext, EIGHT)                # the assumed GPUs on a100-2 are free again


def test_pods_the_generation_counts_and_unreadable_events_change_nothing(ext):
    busy = next(d for d in gpu_rules_docs() if d["metadata"]["name"] == "busy-a")
    state_pod = ext.store.model.cluster.pod("ml", "busy-a")
    assert not observe_pod_event(ext.store, event("MODIFIED", bound(busy, "a100-0", uid=state_pod.metadata.uid)))
    assert not observe_pod_event(ext.store, b"{not json")
    assert not observe_pod_event(ext.store, event("BOOKMARK", {"metadata": {"resourceVersion": "9"}}))
    assert not observe_pod_event(ext.store, event("ADDED", bound(EIGHT, "no-such-node")))
    assert not ext.store.assumed


def test_through_the_real_watch_a_bind_counts_long_before_the_debounced_rebuild(apiserver, tmp_path):
    for doc in gpu_rules_docs():
        apiserver.add(doc)
    store = ExtenderStore(policy="fgd", live=True, stale_after=60.0)
    kubeconfig = str(apiserver.kubeconfig(tmp_path / "kubeconfig"))
    refresher = LiveRefresher(store, partial(ExtenderLiveCache, kubeconfig, None, store=store),
                              relist_every=3600, debounce=0.1, max_backoff=1.0)
    refresher.start()
    try:
        wait_for(lambda: store.model is not None)
        refresher.debounce = 60.0        # from now on a rebuild waits a minute after an event
        time.sleep(0.5)                  # (the build loop picks the new value on its next wait)
        book = Ledger(None)
        ext = Extender(store, book, ExtenderMetrics(store, book), max_work_lost=8.0, assume=False)
        generation = store.generation
        assert "a100-2" in passed(ext, EIGHT)
        t = time.monotonic()
        watch.put(apiserver, bound(gpu_pod("other-eight-0", gpus=8), "a100-2"))
        wait_for(lambda: "a100-2" not in passed(ext, EIGHT), timeout=20)
        assert time.monotonic() - t < 20 and store.generation == generation   # the 60 s debounce has not built
    finally:
        refresher.close()
