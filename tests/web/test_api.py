"""`/api/X` is exactly `kubegpu X -o json`; the edge refuses what it should (4xx, never a traceback)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kubegpu.cli.main import cli

PENDING_POD = "ml-training/ppo-actor-0-bp6l5"


def cli_json(*args: str):
    result = CliRunner().invoke(cli, [*args, "--demo", "-o", "json"], catch_exceptions=False)
    return result.output


@pytest.mark.parametrize("route, args", [
    ("/api/status", ["status"]),
    ("/api/frag", ["frag"]),
    ("/api/audit", ["audit"]),
    ("/api/why", ["why", "--all"]),
    (f"/api/why?pod={PENDING_POD}", ["why", PENDING_POD]),
    ("/api/why?pod=ppo-actor-0-bp6l5&namespace=ml-training", ["why", "ppo-actor-0-bp6l5", "-n", "ml-training"]),
])
def test_api_is_the_cli_json_byte_for_byte(client, route, args):
    resp = client.get(route)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.text == cli_json(*args)


def _without_timings(plan: dict) -> dict:
    solver = plan.get("solver") or {}
    for key in [k for k in solver if k.endswith("_seconds")]:
        solver.pop(key)
    return plan


@pytest.mark.parametrize("query, args", [("size=4", ["--size", "4"]), (f"for={PENDING_POD}", ["--for", PENDING_POD])])
def test_defrag_plan_is_the_cli_plan(client, query, args):
    resp = client.get(f"/api/defrag?{query}")
    assert resp.status_code == 200
    api = _without_timings(resp.json())
    result = CliRunner().invoke(cli, ["defrag", *args, "--demo", "-o", "json"], catch_exceptions=False)
    assert api == _without_timings(json.loads(result.output))
    assert api["applied"] is False


def test_views_are_computed_once_not_per_request(client, demo_store, monkeypatch):
    import kubegpu.web.views as views_module

    calls = []
    real = views_module.json_bytes
    monkeypatch.setattr(views_module, "json_bytes", lambda data: calls.append(1) or real(data))
    demo_store.views._cache.pop(("json", "frag"), None)
    for _ in range(5):
        assert client.get("/api/frag").status_code == 200
    assert len(calls) == 1


@pytest.mark.parametrize("route, code", [
    ("/api/frag?verbose=1", 400),               # unknown query parameter
    ("/api/status?namespace=x", 400),
    ("/metrics?debug=1", 400),
    ("/api/why?pod=a&pod=b", 400),               # repeated
    ("/api/why?pod=a/b/c", 400),
    ("/api/why?pod=nobody/nothing", 404),
    ("/api/why?namespace=ml-training", 400),
    ("/api/defrag", 400),                        # no goal
    ("/api/defrag?size=4&for=a/b", 400),
    ("/api/defrag?size=four", 400),
    ("/api/defrag?size=0", 400),
    ("/api/defrag?for=nobody/nothing", 404),
    ("/api/nothing", 404),
    ("/static/../pages.py", 404),
    ("/static/%2e%2e/pages.py", 404),
    ("/static/%2e%2e%2fpages.py", 404),
    ("/static/..%2f..%2fcli%2fserve.py", 404),
    ("/why/ns/nobody", 404),
])
def test_bad_requests_get_4xx_without_traceback(client, route, code):
    resp = client.get(route)
    assert resp.status_code == code, resp.text
    assert "Traceback" not in resp.text and "File \"" not in resp.text


def test_defrag_for_a_running_pod_is_a_conflict(client, demo_store):
    running = next(p for p in demo_store.views.state.pods if p.spec.node_name)
    resp = client.get(f"/api/defrag?for={running.key}")
    assert resp.status_code == 409
    assert "not pending" in resp.json()["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_nothing_mutates(client, method):
    resp = client.request(method, "/api/frag")
    assert resp.status_code == 405
    assert "read-only" in resp.json()["error"]


def test_oversized_body_is_refused(client):
    resp = client.request("GET", "/api/frag", content=b"x" * 100_000)
    assert resp.status_code == 413


def test_probes_and_security_headers(client):
    assert client.get("/healthz").text == "ok\n"
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    csp = client.get("/").headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_readyz_is_not_ready_before_data():
    from starlette.testclient import TestClient

    from kubegpu.web.app import create_app
    from kubegpu.web.store import ModelStore

    store = ModelStore(live=True)
    store.record_error(OSError("connection refused"))
    c = TestClient(create_app(store, metrics_ttl=0))
    assert c.get("/readyz").status_code == 503
    assert c.get("/api/frag").status_code == 503
    assert c.get("/metrics").status_code == 200
    assert "kubegpu_refresh_errors_total 1.0" in c.get("/metrics").text


def test_serve_with_namespace_is_every_command_with_that_namespace():
    from starlette.testclient import TestClient

    from kubegpu.cli.options import SourceOptions, load_prices, load_state
    from kubegpu.web.app import create_app
    from kubegpu.web.store import ModelStore

    source = SourceOptions(demo="pitfalls", snapshots=(), kubeconfig=None, context=None, namespace="ml-research",
                           all_namespaces=False, k8s_version=None)
    store = ModelStore(namespace="ml-research", prices=load_prices(source))
    store.install(load_state(source))
    client = TestClient(create_app(store))
    body = client.get("/api/why").text
    assert body == cli_json("why", "--all", "-n", "ml-research")
    assert {r["pod"].split("/")[0] for r in json.loads(body)} == {"ml-research"}
    # every other view is its command with -n too: status and frag scoped, audit narrowed, defrag's movers
    for route, args in [("/api/status", ["status"]), ("/api/frag", ["frag"]), ("/api/audit", ["audit"])]:
        assert client.get(route).text == cli_json(*args, "-n", "ml-research"), route
    assert json.loads(client.get("/api/frag").text)["demand"]["namespace"] == "ml-research"
    plan = _without_timings(client.get("/api/defrag?size=2").json())
    cli_plan = CliRunner().invoke(cli, ["defrag", "--size", "2", "-n", "ml-research", "--demo", "-o", "json"])
    assert plan == _without_timings(json.loads(cli_plan.output))
    assert {s["pod"].split("/")[0] for s in plan["pods"]} <= {"ml-research"}
