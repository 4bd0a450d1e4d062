"""`kubegpu serve --rebalance-journal DIR`: the rebalancer's metrics from its journal directory, read
once per change, a damaged or odd file reported (never a 500), and promtool-clean."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from kubegpu.defrag.journal import Journal
from kubegpu.rebalance.ledger import Ledger
from kubegpu.web.app import create_app

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def values(text: str) -> dict[tuple, float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.startswith("kubegpu_rebalance_"):
                out[(s.name, *sorted(s.labels.items()))] = s.value
    return out


def write_rounds(directory):
    ledger = Ledger(directory)
    ledger.append(at=T0, run="r1", status="moved", moves=2, gpu_hours=1.5,
                  outcomes={"moved": 1, "elsewhere": 1}, stranded={"before": 6.0, "after": 2.0})
    ledger.append(at=T0 + timedelta(minutes=5), run="r2", status="blocked", moves=0, gpu_hours=0.0,
                  skipped={"cooldown": 1}, stranded={"before": 3.0})
    ledger.append(at=T0 + timedelta(minutes=10), run="r3", status="failed", moves=0, gpu_hours=0.25,
                  outcomes={"failed": 1, "not-run": 2}, skipped={"max-moves": 2}, stranded={"before": 3.0, "after": 3.0})


def journal(directory, name: str, events: list[tuple[str, dict]]) -> None:
    j = Journal(directory / name)
    for event, fields in events:
        j.record(event, **fields)


@pytest.fixture
def app_for(demo_store):
    def make(directory):
        return TestClient(create_app(demo_store, metrics_ttl=0, rebalance_journal=str(directory)),
                          raise_server_exceptions=False)
    return make


def test_ledger_totals_are_exported_with_the_rebalancers_names(app_for, tmp_path):
    write_rounds(tmp_path)
    text = app_for(tmp_path).get("/metrics").text
    v = values(text)
    assert v[("kubegpu_rebalance_moves_total", ("outcome", "moved"))] == 1
    assert v[("kubegpu_rebalance_moves_total", ("outcome", "elsewhere"))] == 1
    assert v[("kubegpu_rebalance_moves_total", ("outcome", "failed"))] == 1
    assert v[("kubegpu_rebalance_moves_total", ("outcome", "not-run"))] == 2
    assert v[("kubegpu_rebalance_gpu_seconds_lost_total",)] == pytest.approx(1.75 * 3600)
    # the last round's stranded GPUs, before and after
    assert v[("kubegpu_rebalance_stranded_gpus", ("when", "before"))] == 3.0
    assert v[("kubegpu_rebalance_stranded_gpus", ("when", "after"))] == 3.0
    assert v[("kubegpu_rebalance_rounds_total", ("status", "blocked"))] == 1
    assert v[("kubegpu_rebalance_rounds_total", ("status", "moved"))] == 1
    assert v[("kubegpu_rebalance_skipped_by_budget_total", ("reason", "cooldown"))] == 1
    assert v[("kubegpu_rebalance_skipped_by_budget_total", ("reason", "max-moves"))] == 2
    assert v[("kubegpu_rebalance_reservations_held",)] == 0
    assert v[("kubegpu_rebalance_journal_errors",)] == 0


def test_reservations_held_count_only_plans_in_progress(app_for, tmp_path):
    held = [("reserve-request", {"name": "kubegpu-hold-a", "node": "n1", "pod": "ml/a"}),
            ("reserved", {"name": "kubegpu-hold-a", "node": "n1"}),
            ("reserve-request", {"name": "kubegpu-hold-b", "node": "n2", "pod": "ml/b"}),
            ("reserve-request", {"name": "kubegpu-hold-c", "node": "n2", "pod": "ml/c"}),
            ("reserve-failed", {"name": "kubegpu-hold-c", "reason": "not placed"})]
    journal(tmp_path, "rebalance-20261201T120000Z-ab12-1.jsonl", held)                # died mid-plan: 2 held
    journal(tmp_path, "rebalance-20261201T110000Z-cd34-1.jsonl",
            held + [("finished", {"status": "finished", "message": "done"})])        # finished: none
    client = app_for(tmp_path)
    assert values(client.get("/metrics").text)[("kubegpu_rebalance_reservations_held",)] == 2
    journal(tmp_path, "rebalance-20261201T120000Z-ab12-1.jsonl",
            [("release-request", {"name": "kubegpu-hold-a"}), ("released", {"name": "kubegpu-hold-a"})])
    assert values(client.get("/metrics").text)[("kubegpu_rebalance_reservations_held",)] == 1


def test_a_damaged_ledger_is_reported_not_a_500(app_for, tmp_path):
    write_rounds(tmp_path)
    with open(tmp_path / "budget-ledger.jsonl", "a") as fh:
        fh.write("{not json\n")
    journal(tmp_path, "rebalance-x-1.jsonl", [])
    (tmp_path / "rebalance-x-1.jsonl").write_bytes(b"\xff\xfe\n")
    client = app_for(tmp_path)
    r = client.get("/metrics")
    assert r.status_code == 200
    assert values(r.text)[("kubegpu_rebalance_journal_errors",)] == 2
    page = client.get("/")
    assert page.status_code == 200
    assert "budget-ledger.jsonl" in page.text and "line 4 is not JSON" in page.text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_in_the_directory_is_never_opened(app_for, tmp_path):
    os.mkfifo(tmp_path / "budget-ledger.jsonl")
    os.mkfifo(tmp_path / "rebalance-fifo-1.jsonl")
    r = app_for(tmp_path).get("/metrics")   # opening either FIFO would hang here
    assert r.status_code == 200
    assert values(r.text)[("kubegpu_rebalance_journal_errors",)] == 2


def test_the_directory_is_read_once_per_change_not_per_scrape(tmp_path, monkeypatch):
    from kubegpu.web import rebalance

    write_rounds(tmp_path)
    calls = []
    real = rebalance.summarise_ledger
    monkeypatch.setattr(rebalance, "summarise_ledger", lambda recs, out: (calls.append(1), real(recs, out)))
    j = rebalance.RebalanceJournal(tmp_path)
    first = j.refresh()
    assert j.refresh() is first and len(calls) == 1
    Ledger(tmp_path).append(at=T0 + timedelta(minutes=15), run="r4", status="nothing-to-do", moves=0, gpu_hours=0.0)
    assert j.refresh().rounds["nothing-to-do"] == 1 and len(calls) == 2


def test_overview_shows_the_rebalancer_line(app_for, tmp_path):
    write_rounds(tmp_path)
    text = app_for(tmp_path).get("/").text
    assert 'id="rebalance-line"' in text
    assert "3 rounds" in text and "2 pods moved, 1 failed" in text and "1.75 GPU-hours" in text


def test_without_the_option_nothing_rebalance_is_exported(client):
    assert "kubegpu_rebalance_" not in client.get("/metrics").text
    assert 'id="rebalance-line"' not in client.get("/").text


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)")
def test_promtool_check_metrics_accepts_the_rebalance_families(app_for, tmp_path):
    write_rounds(tmp_path)
    text = app_for(tmp_path).get("/metrics").text
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "" and proc.stderr.strip() == "", "promtool lint findings"


def _serve_deployment(override: dict) -> dict:
    from pathlib import Path

    from tests.web.helm_render import manifests

    chart = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "kubegpu"
    return next(d for d in manifests(chart, override) if d["kind"] == "Deployment"
                and not d["metadata"]["name"].endswith(("-rebalance", "-scheduler")))


def test_chart_serve_mounts_the_journal_claim_read_only_only_when_asked():
    claim = {"rebalance": {"enabled": True, "journalClaim": "rb-journal"}}
    pod = _serve_deployment(claim)["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "--rebalance-journal=/var/lib/kubegpu-rebalance" in container["args"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "rebalance-journal")
    assert mount == {"name": "rebalance-journal", "mountPath": "/var/lib/kubegpu-rebalance", "readOnly": True}
    volume = next(v for v in pod["volumes"] if v["name"] == "rebalance-journal")
    assert volume["persistentVolumeClaim"] == {"claimName": "rb-journal", "readOnly": True}
    for override in ({"rebalance": {"enabled": True}}, {"rebalance": {"journalClaim": "rb-journal"}},
                     {"rebalance": {"enabled": True, "journalClaim": "rb-journal", "serveReadsJournal": False}}):
        pod = _serve_deployment(override)["spec"]["template"]["spec"]
        assert not any(a.startswith("--rebalance-journal") for a in pod["containers"][0]["args"]), override
        assert all(v["name"] != "rebalance-journal" for v in pod["volumes"]), override


def test_the_real_cli_serves_the_journal_and_follows_new_rounds(tmp_path):
    import time
    import urllib.request

    from tests.web.conftest import serving

    write_rounds(tmp_path)
    with serving("--demo", "--rebalance-journal", str(tmp_path)) as base:
        scrape = lambda: values(urllib.request.urlopen(base + "/metrics", timeout=10).read().decode())  # noqa: E731
        assert scrape()[("kubegpu_rebalance_rounds_total", ("status", "moved"))] == 1
        Ledger(tmp_path).append(at=T0 + timedelta(minutes=15), run="r4", status="moved", moves=1, gpu_hours=0.5,
                                outcomes={"moved": 1}, stranded={"before": 2.0, "after": 1.0})
        time.sleep(1.1)   # serve re-encodes the live part of /metrics at most once a second
        after = scrape()
        assert after[("kubegpu_rebalance_rounds_total", ("status", "moved"))] == 2
        assert after[("kubegpu_rebalance_moves_total", ("outcome", "moved"))] == 2
        assert after[("kubegpu_rebalance_stranded_gpus", ("when", "after"))] == 1.0


def test_the_real_cli_refuses_a_missing_journal_directory(tmp_path):
    import sys

    from tests.web.conftest import SRC

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "serve", "--demo", "--rebalance-journal",
                        str(tmp_path / "missing")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--rebalance-journal" in r.stderr and "Traceback" not in r.stderr
