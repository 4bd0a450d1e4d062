"""`kubegpu shadow`: binds made by another scheduler, judged against the policy's choice."""

from __future__ import annotations

import copy
import json
from functools import partial
from pathlib import Path

import msgspec
from jsonschema import Draft202012Validator

import pytest
from clusters import gpu_rules_docs
from prometheus_client import generate_latest
from test_live import wait_for

from apiserver import watch
from kubegpu.model.text import counted
from kubegpu.extender.ledger import Ledger
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.shadow import ShadowStore, ShadowTotals
from kubegpu.web.watch import LiveCache, LiveRefresher


@pytest.fixture
def shadow(apiserver, tmp_path):
    docs = gpu_rules_docs()
    for doc in docs:
        apiserver.add(doc)
    book = Ledger(None)
    store = ShadowStore(ledger=book, policy="fgd", live=True, stale_after=30.0)
    metrics = ExtenderMetrics(store, book)
    store.totals = ShadowTotals(metrics.registry)
    refresher = LiveRefresher(store, partial(LiveCache, str(apiserver.kubeconfig(tmp_path / "kubeconfig")), None),
                              relist_every=3600, debounce=0.1, max_backoff=1.0)
    refresher.start()
    wait_for(lambda: store.model is not None)
    yield apiserver, store, metrics, {d["metadata"]["name"]: d for d in docs}
    refresher.close()


def bind(server, doc, node):
    bound = copy.deepcopy(doc)
    bound["spec"]["nodeName"] = node
    bound["status"] = {"phase": "Running", "startTime": "2026-11-30T10:00:00Z"}
    watch.put(server, bound)


def test_each_bind_is_recorded_next_to_the_policys_node(shadow):
    server, store, metrics, docs = shadow
    bind(server, docs["one-gpu-0"], "a100-2")       # the scheduler spreads: breaks the only whole 8-GPU node
    wait_for(lambda: store.judged == 1)
    rec = store.ledger.ring[-1]
    assert rec.mode == "shadow" and rec.chosen == "a100-2" and rec.outcome == "differed"
    assert rec.policy_choice in ("a100-0", "a100-1")
    mine, policy = rec.scores
    assert mine.node == "a100-2" and policy.node == rec.policy_choice
    assert policy.stranded_gpus_after <= mine.stranded_gpus_after
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs/schemas/decision.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(json.loads(msgspec.json.encode(rec))))
    bind(server, docs["share-30-0"], "t4-ts-0")
    wait_for(lambda: store.judged == 2)
    text = generate_latest(metrics.registry).decode()
    binds = [line for line in text.splitlines() if line.startswith("kubegpu_shadow_binds_total")]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in binds) == 2.0, binds
    assert any(line.startswith('kubegpu_shadow_binds_total{agreed="false"}') for line in binds)
    assert 'kubegpu_shadow_stranded_gpus_total{by="scheduler"}' in text


def test_pods_bound_before_the_first_generation_are_not_judged(shadow):
    _, store, _, _ = shadow
    assert store.judged == 0 and len(store.ledger.ring) == 0


def test_the_decisions_page_sums_what_shadow_recorded(shadow, tmp_path):
    from starlette.testclient import TestClient

    from kubegpu.extender.ledger import Ledger, shadow_totals
    from kubegpu.web.app import create_app
    from kubegpu.web.store import ModelStore

    server, store, _, docs = shadow
    path = tmp_path / "shadow.ndjson"
    store.ledger = Ledger(str(path))
    bind(server, docs["one-gpu-0"], "a100-2")
    wait_for(lambda: store.judged == 1)
    store.ledger.close()
    totals = shadow_totals(list(store.ledger.ring))
    assert totals.binds == 1 and totals.agreed == 0
    assert totals.policy_stranded_gpus <= totals.scheduler_stranded_gpus
    web = ModelStore()
    web.install(store.model.cluster)
    page = TestClient(create_app(web, ledger=str(path))).get("/decisions").text
    assert f"left {counted(totals.scheduler_stranded_gpus, 'GPU')} stranded" in page
