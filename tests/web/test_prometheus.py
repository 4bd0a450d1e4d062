"""Every rule of `kubegpu rules` checked and unit-tested by promtool, and a real Prometheus scraping
`kubegpu serve --demo` sees the stranded GPUs and fires the alert."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.web.conftest import free_port

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
need_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")


def rule_groups_from_cli() -> list[dict]:
    """The groups of the PrometheusRule `kubegpu rules` prints (a Prometheus rule file's content)."""
    out = CliRunner().invoke(cli, ["rules"], catch_exceptions=False).output
    return yaml.safe_load(out)["spec"]["groups"]


def write_rules(path, groups, *, for_override: str | None = None) -> None:
    if for_override is not None:
        groups = [{**g, "rules": [{**r, "for": for_override} for r in g["rules"]]} for g in groups]
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))


def alert(name: str, labels: dict, summary: str, description: str) -> dict:
    return {"exp_labels": {**labels, "severity": "warning"},
            "exp_annotations": {"summary": summary, "description": description}}


IOWAIT_DESC = "IO wait above 10% for 10m: storage (often model or data loading over NFS) is the bottleneck."
# Per alert: input series (1m interval), when to look, and the alert expected then; then a quiet case.
CASES = {
    "NodeHighIOWait": {
        "series": [("node_cpu_seconds_total{mode=\"iowait\",instance=\"n1:9100\",cpu=\"0\"}", "0+12x40"),
                   ("node_cpu_seconds_total{mode=\"iowait\",instance=\"n2:9100\",cpu=\"0\"}", "0+1x40")],
        "eval": "20m",
        "alerts": [alert("NodeHighIOWait", {"instance": "n1:9100"},
                         "Node n1:9100 spends 20% of CPU time in IO wait", IOWAIT_DESC)],
    },
    "GPUAllocatedButIdle": {
        "series": [("DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",Hostname=\"gpu-1\",namespace=\"ml\",pod=\"idle-0\"}", "2x100"),
                   ("DCGM_FI_DEV_GPU_UTIL{gpu=\"4\",Hostname=\"gpu-1\",namespace=\"ml\",pod=\"busy-0\"}", "90x100")],
        "eval": "70m",
        "alerts": [alert("GPUAllocatedButIdle", {"gpu": "3", "Hostname": "gpu-1", "namespace": "ml", "pod": "idle-0"},
                         "GPU 3 is allocated to a pod but below 5% busy",
                         "An allocated GPU did almost nothing for 30m: a stuck job, a pod waiting for data, or a GPU "
                         "that time-slicing could share.")],
    },
    "GPUIdleWhileIOWaitHigh": {
        "series": [("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",node=\"gpu-1\"}", "3x40"),
                   ("node_cpu_seconds_total{mode=\"iowait\",node=\"gpu-1\",cpu=\"0\"}", "0+30x40"),
                   ("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",node=\"gpu-2\"}", "3x40"),
                   ("node_cpu_seconds_total{mode=\"iowait\",node=\"gpu-2\",cpu=\"0\"}", "0+1x40")],
        "eval": "20m",
        "alerts": [alert("GPUIdleWhileIOWaitHigh", {"node": "gpu-1"},
                         "GPUs on gpu-1 are idle while the node waits on IO",
                         "Low GPU utilisation with high iowait on the same node: the workload is IO-bound (see "
                         "`kubegpu storage estimate`). Needs a `node` label on both series (relabel; "
                         "dcgm-exporter's Hostname may be the exporter pod's name).")],
    },
    "GPUFragmentationHigh": {
        "series": [("kubegpu_fragmentation_rate{job=\"kubegpu\"}", "0.8841x60")],
        "eval": "40m",
        "alerts": [alert("GPUFragmentationHigh", {"job": "kubegpu"}, "88.41% of idle GPU capacity is fragmented",
                         "Run `kubegpu frag` and `kubegpu defrag` to see and fix it.")],
    },
    "GPUsStranded": {
        "series": [("kubegpu_stranded_gpus{job=\"kubegpu\",size=\"4\"}", "10x60"),
                   ("kubegpu_stranded_gpus{job=\"kubegpu\",size=\"1\"}", "0x60")],
        "eval": "40m",
        "alerts": [alert("GPUsStranded", {"job": "kubegpu", "size": "4"}, "10 free GPUs cannot host a 4-GPU pod",
                         "Free GPUs are spread over nodes; `kubegpu defrag` plans the moves.")],
    },
}


def unit_tests(rules_file: str) -> dict:
    tests = []
    for name, case in CASES.items():
        series = [{"series": s, "values": v} for s, v in case["series"]]
        tests.append({"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": case["eval"], "alertname": name, "exp_alerts": case["alerts"]},
            {"eval_time": "1m", "alertname": name, "exp_alerts": []},   # not before its `for:` has passed
        ]})
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": tests}


def test_every_rule_has_a_unit_test():
    alerts = {r["alert"] for g in rule_groups_from_cli() for r in g["rules"]}
    assert alerts == set(CASES)


@need_promtool
def test_promtool_check_rules(tmp_path):
    write_rules(tmp_path / "rules.yml", rule_groups_from_cli())
    proc = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(CASES)} rules found" in proc.stdout


@need_promtool
def test_promtool_test_rules_fires_every_alert(tmp_path):
    write_rules(tmp_path / "rules.yml", rule_groups_from_cli())
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(unit_tests("rules.yml"), sort_keys=False))
    proc = subprocess.run([PROMTOOL, "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus not installed (apt-get install prometheus)")
def test_real_prometheus_scrapes_serve_demo_and_fires_stranded_alert(served_demo, tmp_path):
    """`for: 30m` is replaced by `for: 0s` in this test's copy of the rules so the alert fires in seconds."""
    target = served_demo.removeprefix("http://")
    write_rules(tmp_path / "rules.yml", rule_groups_from_cli(), for_override="0s")
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(tmp_path / "rules.yml")],
              "scrape_configs": [{"job_name": "kubegpu", "static_configs": [{"targets": [target]}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    api = f"http://127.0.0.1:{port}/api/v1"
    query = urllib.parse.quote('kubegpu_stranded_gpus{size="4"}')
    value = firing = None
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and (value is None or firing is None):
            time.sleep(0.5)
            try:
                result = _get_json(f"{api}/query?query={query}")["data"]["result"]
                value = float(result[0]["value"][1]) if result else None
                alerts = _get_json(f"{api}/alerts")["data"]["alerts"]
                firing = next((a for a in alerts if a["labels"]["alertname"] == "GPUsStranded"
                               and a["labels"].get("size") == "4" and a["state"] in ("pending", "firing")), None)
            except OSError:
                continue
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert value == 10, "Prometheus never stored kubegpu_stranded_gpus{size=\"4\"} == 10"
    assert firing is not None, "the GPUsStranded alert never became pending/firing"
    assert firing["labels"]["job"] == "kubegpu" and firing["labels"]["severity"] == "warning"
