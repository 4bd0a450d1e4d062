"""Pages: rendered server-side, every cluster-provided string escaped, links between them."""

from __future__ import annotations

import copy
import json
import re

import pytest

EVIL = "<script>alert(1)</script>"
# kube-scheduler-facing engines split "ns/name" keys on "/", so the pending pod's markup has no slash
# (a real pod name has neither "<" nor "/": the API server would refuse both)
EVIL_PENDING = "<img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def evil_client(tmp_path_factory):
    """The demo cluster with a running GPU pod and a pending GPU pod renamed to a script tag, and a
    node label and event message carrying markup (a snapshot file, as a user would point serve at)."""
    from starlette.testclient import TestClient

    from kubegpu.cli.options import SourceOptions, load_state
    from kubegpu.sources.demo import demo_objects
    from kubegpu.web.app import create_app
    from kubegpu.web.store import ModelStore

    objs = copy.deepcopy(list(demo_objects("pitfalls")))
    pods = [o for o in objs if o.get("kind") == "Pod"]
    gpu = [p for p in pods if "nvidia.com/gpu" in json.dumps(p["spec"].get("containers", []))]
    running = next(p for p in gpu if p["spec"].get("nodeName"))
    pending = next(p for p in gpu if not p["spec"].get("nodeName"))
    running["metadata"]["name"] = EVIL
    pending["metadata"]["name"] = EVIL_PENDING
    node = next(o for o in objs if o.get("kind") == "Node" and o["metadata"]["name"] == running["spec"]["nodeName"])
    node["metadata"].setdefault("labels", {})["nvidia.com/gpu.product"] = "<b>A100</b>\"'&"
    path = tmp_path_factory.mktemp("evil") / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    source = SourceOptions(demo=None, snapshots=(str(path),), kubeconfig=None, context=None, namespace=None,
                           all_namespaces=False, k8s_version=None)
    store = ModelStore()
    store.install(load_state(source))
    return TestClient(create_app(store)), running["metadata"]["namespace"], pending["metadata"]["namespace"]


@pytest.mark.parametrize("page, shown", [
    ("/", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("/?namespace={ns}", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("/pending", "&lt;img src=x onerror=alert(2)&gt;"),
    ("/defrag", None),
    ("/audit", None),
])
def test_cluster_strings_render_as_text(evil_client, page, shown):
    client, ns, _ = evil_client
    resp = client.get(page.format(ns=ns))
    assert resp.status_code == 200
    html = resp.text
    assert "<script>alert" not in html and "<b>A100" not in html and "<img src=x" not in html
    assert shown is None or shown in html


def test_why_page_of_the_evil_pod_escapes_it(evil_client):
    from urllib.parse import quote

    client, _, pending_ns = evil_client
    resp = client.get(f"/why/{pending_ns}/{quote(EVIL_PENDING, safe='')}")
    assert resp.status_code == 200
    assert "&lt;img src=x onerror=alert(2)&gt;" in resp.text
    assert "<img src=x" not in resp.text
    # the only scripts are our own file
    assert re.findall(r"<script[^>]*>", resp.text) == ['<script src="/static/app.js" defer>']


def test_overview_map_links_every_pod_to_its_why_page(client):
    html = client.get("/").text
    cells = re.findall(r'data-device="', html)
    assert len(cells) == 80                      # one per physical GPU of the demo
    links = set(re.findall(r'href="/why/([^"]+)"', html))
    assert links and all(client.get(f"/why/{link}").status_code == 200 for link in sorted(links)[:5])


def test_pending_page_shows_the_scheduler_message_of_every_pending_pod(client):
    why = client.get("/api/why").json()
    html = client.get("/pending").text
    from markupsafe import escape

    for report in why:
        assert escape(report["pod"]) in html
        if not report["schedulable"]:
            assert escape(report["message"]) in html


def test_map_aggregates_by_pool_above_the_node_limit(client, monkeypatch):
    import kubegpu.web.pages as pages

    monkeypatch.setattr(pages, "MAP_NODE_LIMIT", 5)
    html = client.get("/").text
    assert 'class="pools"' in html and "data-device=" not in html
    drill = client.get("/?pool=inference").text
    assert len(re.findall(r'data-device="', drill)) == 32


def test_simulate_page_reads_results_folder(tmp_path):
    from starlette.testclient import TestClient

    from kubegpu.web.app import create_app
    from kubegpu.web.store import ModelStore

    from tests.web.conftest import SIMULATE_RUN

    (tmp_path / "run.json").write_text(json.dumps(SIMULATE_RUN))
    (tmp_path / "sweep.json").write_text(json.dumps([{"params": {"autoscaler.scale-down-delay-after-add": "30m"},
                                                      "seed": 1, "result": {**SIMULATE_RUN, "seed": 1}}]))
    (tmp_path / "other.json").write_text('{"not": "a run"}')
    (tmp_path / "broken.json").write_text("{")
    html = TestClient(create_app(ModelStore(), results_dir=str(tmp_path))).get("/simulate").text
    assert html.count("seed-flapping") == 2 and "1234.5 USD" in html and "99.5" in html
    assert "autoscaler.scale-down-delay-after-add=30m" in html
    assert "other.json" in html and "broken.json" in html
