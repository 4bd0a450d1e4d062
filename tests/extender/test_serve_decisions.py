"""`kubegpu serve --ledger`: the decision log at /api/decisions and on the Decisions page."""

from __future__ import annotations

import msgspec
from clusters import gpu_rules_cluster
from loopback import make_extender
from starlette.testclient import TestClient

from kubegpu.web.app import create_app
from kubegpu.web.store import ModelStore


def test_api_and_page_show_a_pods_decisions_and_follow_the_file(tmp_path):
    state = gpu_rules_cluster()
    path = tmp_path / "decisions.ndjson"
    ext = make_extender(state, ledger=str(path))
    names = [n.name for n in state.nodes]
    for name in ("eight-0", "one-gpu-0"):
        ext.prioritize(msgspec.json.encode({"Pod": state.pod("ml", name), "NodeNames": names}))
    store = ModelStore()
    store.install(state)
    client = TestClient(create_app(store, ledger=str(path)))
    body = client.get("/api/decisions", params={"pod": "ml/eight-0"}).json()
    assert [(d["pod"]["name"], d["chosen"]) for d in body] == [("eight-0", "a100-2")]
    assert len(client.get("/api/decisions").json()) == 2
    page = client.get("/decisions", params={"pod": "ml/eight-0"})
    assert page.status_code == 200 and "a100-2" in page.text and "one-gpu-0" not in page.text
    # a new record appears without a restart (the file is re-read when it changed)
    ext.filter(msgspec.json.encode({"Pod": state.pod("ml", "eight-0"), "NodeNames": names}))
    assert len(client.get("/api/decisions", params={"pod": "eight-0"}).json()) == 2
    assert 'href="/decisions?pod=ml/eight-0"' in client.get("/why/ml/eight-0").text
    assert client.get("/api/decisions", params={"node": "x"}).status_code == 400


def test_without_ledger_there_are_no_decision_routes(tmp_path):
    store = ModelStore()
    store.install(gpu_rules_cluster())
    client = TestClient(create_app(store))
    assert client.get("/api/decisions").status_code == 404
    assert "/decisions?pod=" not in client.get("/why/ml/eight-0").text
