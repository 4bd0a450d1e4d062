"""The Grafana dashboard (deploy/grafana/kubegpu-dashboard.json, and the chart's copy): checked against
Grafana's published dashboard type (npm @grafana/schema, with the TypeScript compiler), and every panel's
query run against a real Prometheus scraping `kubegpu serve --demo`."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.web.conftest import SRC, free_port, wait_http

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "kubegpu-dashboard.json"
CHART_COPY = REPO / "deploy" / "helm" / "kubegpu" / "files" / "kubegpu-dashboard.json"
PROMETHEUS = shutil.which("prometheus")
NPM = shutil.which("npm")
# Panels whose series come from other programs: no data against `kubegpu serve` alone, by design.
ABSENT_WITHOUT_THEIR_EXPORTER = {
    "Scheduler extender": "kubegpu_extender_* come from `kubegpu extender`",
    "Rebalancer": "kubegpu_rebalance_* come from `kubegpu rebalance`",
    "GPU busy (DCGM) per pool": "DCGM_FI_DEV_GPU_UTIL comes from dcgm-exporter",
}
VARIABLES = {"$cluster": ".*", "$pool": ".*", "$namespace": ".*"}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels() -> list[dict]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def test_the_chart_ships_the_same_dashboard():
    assert CHART_COPY.read_text() == DASHBOARD.read_text()


def test_named_fields():
    """Checked without Grafana's types: the fields Grafana needs to import it and our own conventions."""
    d = dashboard()
    assert d["uid"] and d["title"] and isinstance(d["schemaVersion"], int)
    names = [v["name"] for v in d["templating"]["list"]]
    assert names == ["datasource", "cluster", "pool", "namespace"]
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in panels():
        assert p["title"] and p["gridPos"]["w"] <= 24 and p["datasource"]["uid"] == "${datasource}"
        for t in p["targets"]:
            assert t["expr"] and t["refId"] and re.search(r"cluster=~\"\$cluster\"", t["expr"]), p["title"]


@pytest.fixture(scope="module")
def grafana_types(tmp_path_factory):
    """@grafana/schema and typescript, installed with npm into a temporary folder."""
    if NPM is None:
        pytest.skip("npm not installed")
    where = tmp_path_factory.mktemp("grafana-schema")
    proc = subprocess.run([NPM, "install", "--silent", "--no-audit", "--no-fund", "@grafana/schema", "typescript"],
                          cwd=where, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"npm install @grafana/schema failed (offline?): {proc.stderr.strip()[:200]}")
    return where


def tsc_check(where: Path, text: str) -> subprocess.CompletedProcess:
    """Type-check the dashboard as an object literal of Grafana's `Dashboard` type (excess fields are errors)."""
    src = where / "check.ts"
    src.write_text("import type { Dashboard } from '@grafana/schema';\nexport const d: Dashboard = " + text + ";\n")
    return subprocess.run([str(where / "node_modules" / ".bin" / "tsc"), "--noEmit", "--strict", "--skipLibCheck",
                           "--moduleResolution", "bundler", "--module", "esnext", "--target", "es2020", str(src)],
                          cwd=where, capture_output=True, text=True, timeout=300)


def test_dashboard_is_a_grafana_dashboard(grafana_types):
    proc = tsc_check(grafana_types, DASHBOARD.read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the check can fail: a misspelt panel field is refused
    broken = DASHBOARD.read_text().replace('"gridPos"', '"gridPosition"', 1)
    assert tsc_check(grafana_types, broken).returncode != 0


def _serve_snapshot_with_model_cache(tmp_path: Path, port: int) -> subprocess.Popen:
    """`kubegpu serve` of the demo plus deploy/models' example ModelCache (one node Verified)."""
    from kubegpu.sources.demo import demo_objects

    cache = yaml.safe_load((REPO / "deploy" / "models" / "modelcache-example.yaml").read_text())
    objs = demo_objects()
    node = next(o["metadata"]["name"] for o in objs if o["kind"] == "Node"
                and o["metadata"].get("labels", {}).get("nvidia.com/gpu.product")
                == cache["spec"]["nodeSelector"]["nvidia.com/gpu.product"])
    version = cache["spec"]["version"]
    cache["status"] = {"nodes": {node: {"state": "Verified", "version": version, "current": version}}}
    snap = tmp_path / "with-cache.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*objs, cache]}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p))
    return subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "serve", "--snapshot", str(snap), "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _query(api: str, expr: str) -> list:
    with urllib.request.urlopen(f"{api}/query?query={urllib.parse.quote(expr)}", timeout=5) as resp:
        return json.loads(resp.read())["data"]["result"]


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus not installed (apt-get install prometheus)")
def test_every_panel_query_returns_data_from_real_prometheus(served_demo, tmp_path):
    cache_port, port = free_port(), free_port()
    server = _serve_snapshot_with_model_cache(tmp_path, cache_port)
    targets = [served_demo.removeprefix("http://"), f"127.0.0.1:{cache_port}"]
    config = {"global": {"scrape_interval": "1s"},
              "scrape_configs": [{"job_name": "kubegpu", "static_configs": [{"targets": targets}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{port}/api/v1"
    results: dict[str, list] = {}
    try:
        wait_http(f"http://127.0.0.1:{cache_port}/readyz", time.monotonic() + 60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                if len(_query(api, "up == 1")) == 2 and _query(api, "kubegpu_model_cache_nodes"):
                    break
            except OSError:
                continue
        for p in panels():
            for t in p["targets"]:
                expr = t["expr"]
                for var, value in VARIABLES.items():
                    expr = expr.replace(var, value)
                results[f"{p['title']} [{t['refId']}]"] = _query(api, expr)
        pools = _query(api, 'group by (pool) (kubegpu_pool_gpus{cluster=~".*"})')
    finally:
        prom.terminate()
        server.terminate()
        prom.wait(timeout=10)
        server.wait(timeout=10)
    empty = {k for k, v in results.items() if not v}
    expected_empty = {k for k in results if k.rsplit(" [", 1)[0] in ABSENT_WITHOUT_THEIR_EXPORTER}
    assert empty == expected_empty, f"panels without data: {sorted(empty - expected_empty)}"
    assert {r["metric"]["pool"] for r in pools} == {"inference", "training"}   # the pool variable's values
    # the demo is priced at the article's figure (CNY), the snapshot at built-in list prices (USD)
    money = results["Stranded GPUs cost per day [A]"]
    assert {r["metric"]["currency"] for r in money} == {"CNY", "USD"}
    assert all(float(r["value"][1]) > 0 for r in money)
