"""The live source: the watch delivers the bind of an assumed pod, and the overlay lets go of it."""

from __future__ import annotations

import copy
import json
import time
from functools import partial

import msgspec
import pytest
from clusters import gpu_rules_docs

from apiserver import watch
from kubegpu.extender.ledger import Ledger
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.service import Extender
from kubegpu.extender.state import ExtenderStore
from kubegpu.web.watch import LiveCache, LiveRefresher


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def live(apiserver, tmp_path):
    docs = gpu_rules_docs()
    for doc in docs:
        apiserver.add(doc)
    store = ExtenderStore(policy="fgd", live=True, stale_after=30.0)
    refresher = LiveRefresher(store, partial(LiveCache, str(apiserver.kubeconfig(tmp_path / "kubeconfig")), None),
                              relist_every=3600, debounce=0.1, max_backoff=1.0)
    refresher.start()
    wait_for(lambda: store.model is not None)
    book = Ledger(None)
    yield apiserver, store, Extender(store, book, ExtenderMetrics(store, book), max_work_lost=8.0), docs
    refresher.close()


def test_a_bind_seen_by_the_watch_confirms_the_assumed_pod(live):
    server, store, ext, docs = live
    pod = next(d for d in docs if d["metadata"]["name"] == "eight-0")
    names = [d["metadata"]["name"] for d in docs if d["kind"] == "Node"]
    reply = json.loads(ext.prioritize(msgspec.json.encode({"Pod": pod, "NodeNames": names})))
    assert [h["Host"] for h in reply if h["Score"] == 10] == ["a100-2"]
    assert "ml/eight-0" in store.assumed
    generation = store.generation
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = "a100-2"
    bound["status"] = {"phase": "Running", "startTime": "2026-11-30T10:00:00Z"}
    watch.put(server, bound)
    wait_for(lambda: not store.assumed)
    assert store.generation > generation and len(store.confirmed_after) == 1
    # the bound pod now counts from the cluster data: a100-2 has no room for another 8 GPUs
    other = next(d for d in docs if d["metadata"]["name"] == "big-gang-0")
    again = json.loads(ext.prioritize(msgspec.json.encode({"Pod": other, "NodeNames": ["a100-2"]})))
    assert again == [{"Host": "a100-2", "Score": 0}]
