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

import httpx
import pytest
import yaml

from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from kubegpu.rebalance.ledger import Ledger
from kubegpu.sources.demo import demo_objects
from tests.web.conftest import SRC, free_port, wait_http

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "kubegpu-dashboard.json"
CHART_COPY = REPO / "deploy" / "helm" / "kubegpu" / "files" / "kubegpu-dashboard.json"
PROMETHEUS = shutil.which("prometheus")
NPM = shutil.which("npm")
# dcgm-exporter's own recorded exposition (no pod labels, no node label: Prometheus adds `node` per target).
DCGM_SCRAPE = REPO.parent / "shared" / "fixtures" / "metrics" / "dcgm_exporter_scrape_no_pod_labels.prom"
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


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p))


def _write_rebalance_ledger(directory: Path) -> None:
    """Two rounds in the rebalancer's own ledger format, written by its Ledger writer."""
    t0 = datetime.now(timezone.utc) - timedelta(minutes=10)
    ledger = Ledger(directory)
    ledger.append(at=t0, run="r1", status="moved", moves=2, gpu_hours=1.5,
                  outcomes={"moved": 1, "elsewhere": 1}, stranded={"before": 6.0, "after": 2.0})
    ledger.append(at=t0 + timedelta(minutes=5), run="r2", status="blocked", moves=0, gpu_hours=0.0,
                  skipped={"cooldown": 1}, stranded={"before": 3.0})


def _serve_snapshot_with_model_cache(tmp_path: Path, port: int) -> subprocess.Popen:
    """`kubegpu serve` of the demo plus deploy/models' example ModelCache (one node Verified), and the
    rebalancer's ledger through --rebalance-journal."""
    cache = yaml.safe_load((REPO / "deploy" / "models" / "modelcache-example.yaml").read_text())
    objs = demo_objects()
    node = next(o["metadata"]["name"] for o in objs if o["kind"] == "Node"
                and o["metadata"].get("labels", {}).get("nvidia.com/gpu.product")
                == cache["spec"]["nodeSelector"]["nvidia.com/gpu.product"])
    version = cache["spec"]["version"]
    cache["status"] = {"nodes": {node: {"state": "Verified", "version": version, "current": version}}}
    snap = tmp_path / "with-cache.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*objs, cache]}))
    journal = tmp_path / "rebalance"
    journal.mkdir()
    _write_rebalance_ledger(journal)
    return subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "serve", "--snapshot", str(snap), "--port",
                             str(port), "--rebalance-journal", str(journal)], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _extender(port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "extender", "--demo", "--port", str(port)],
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _drive_extender(url: str) -> None:
    """A few kube-scheduler calls (a pending demo GPU pod against the demo's nodes, names only) so the
    extender's counters and histograms have samples."""
    objs = demo_objects()
    nodes = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    pods = [o for o in objs if o["kind"] == "Pod" and o.get("status", {}).get("phase") == "Pending"][:3]
    for pod in pods:
        body = {"Pod": pod, "NodeNames": nodes}
        assert httpx.post(f"{url}/filter", json=body, timeout=30).status_code == 200
        assert httpx.post(f"{url}/prioritize", json=body, timeout=30).status_code == 200


def _serve_file(path: Path) -> ThreadingHTTPServer:
    """A static /metrics on 127.0.0.1 serving a recorded exposition, as an exporter would."""
    body = path.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    return server


def _query(api: str, expr: str) -> list:
    with urllib.request.urlopen(f"{api}/query?query={urllib.parse.quote(expr)}", timeout=5) as resp:
        return json.loads(resp.read())["data"]["result"]


def _scrape_config(demo: str, snapshot: str, extender: str, dcgm: str, dcgm_node: str) -> dict:
    """Two clusters' kubegpu serve (the dashboard's `cluster` label, one per target), the extender, and
    dcgm-exporter with the `node` label a Kubernetes user gets from `__meta_kubernetes_pod_node_name`
    (here static: one exporter on one node of the demo cluster)."""
    return {"global": {"scrape_interval": "1s"},
            "scrape_configs": [
                {"job_name": "kubegpu", "static_configs": [{"targets": [demo], "labels": {"cluster": "demo"}},
                                                           {"targets": [snapshot], "labels": {"cluster": "cache"}}]},
                {"job_name": "kubegpu-extender", "static_configs": [{"targets": [extender],
                                                                     "labels": {"cluster": "demo"}}]},
                {"job_name": "dcgm-exporter", "static_configs": [{"targets": [dcgm],
                                                                  "labels": {"cluster": "demo", "node": dcgm_node}}]},
            ]}


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus not installed (apt-get install prometheus)")
@pytest.mark.skipif(not DCGM_SCRAPE.is_file(), reason="../shared/fixtures (dcgm-exporter recording) absent")
def test_every_panel_query_returns_data_from_real_prometheus(served_demo, tmp_path):
    cache_port, ext_port, port = free_port(), free_port(), free_port()
    server = _serve_snapshot_with_model_cache(tmp_path, cache_port)
    extender = _extender(ext_port)
    dcgm = _serve_file(DCGM_SCRAPE)
    gpu_node = next(o["metadata"]["name"] for o in demo_objects() if o["kind"] == "Node"
                    and "nvidia.com/gpu" in o.get("status", {}).get("capacity", {}))
    config = _scrape_config(served_demo.removeprefix("http://"), f"127.0.0.1:{cache_port}", f"127.0.0.1:{ext_port}",
                            f"127.0.0.1:{dcgm.server_address[1]}", gpu_node)
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom = None
    results: dict[str, list] = {}
    try:
        wait_http(f"http://127.0.0.1:{cache_port}/readyz", time.monotonic() + 60)
        wait_http(f"http://127.0.0.1:{ext_port}/readyz", time.monotonic() + 60)
        _drive_extender(f"http://127.0.0.1:{ext_port}")
        prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        api = f"http://127.0.0.1:{port}/api/v1"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                if len(_query(api, "up == 1")) == 4 and _query(api, "kubegpu_model_cache_nodes"):
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
        for proc in (prom, server, extender):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)
        dcgm.shutdown()
    empty = sorted(k for k, v in results.items() if not v)
    assert not empty, f"panels without data: {empty}"
    assert {r["metric"]["pool"] for r in pools} == {"inference", "training"}   # the pool variable's values
    # the demo is priced at the article's figure (CNY), the snapshot at built-in list prices (USD)
    money = results["Stranded GPUs cost per day [A]"]
    assert {r["metric"]["currency"] for r in money} == {"CNY", "USD"}
    assert all(float(r["value"][1]) > 0 for r in money)
    # the DCGM panel is the recorded GPU busy joined to the node's pool through the `node` target label
    util = [float(line.rsplit(" ", 1)[1]) for line in DCGM_SCRAPE.read_text().splitlines()
            if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    busy = results["GPU busy (DCGM) per pool [A]"]
    assert len(busy) == 1 and busy[0]["metric"]["pool"]
    assert float(busy[0]["value"][1]) == pytest.approx(sum(util) / len(util))
