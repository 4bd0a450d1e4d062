"""`kubegpu simulate run` end to end: the JSON contract, files written, and bad input (exit 2, one line)."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kubegpu.cli.simulate import simulate

CONTRACT = {"scenario", "seed", "duration_s", "autoscaler", "cost", "pods", "preemption", "utilization"}


def invoke(*args):
    return CliRunner().invoke(simulate, list(args), catch_exceptions=False)


def test_run_json_contract_and_files(tmp_path):
    plot, events = tmp_path / "t.png", tmp_path / "e.ndjson"
    out = invoke("run", "--scenario", "seed-preemption", "--set", "duration=14h", "--plot", str(plot),
                 "--events", str(events), "-o", "json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert CONTRACT <= set(data)
    assert {"scale_ups", "scale_downs", "cycles_per_day", "node_hours", "billed_node_hours", "groups"} <= set(data["autoscaler"])
    assert {"total", "currency", "by_group"} <= set(data["cost"])
    assert set(data["pods"]["wait_seconds"]) == {"mean", "p95", "p99"} and "by_class" in data["pods"]
    assert {"count", "gpu_hours_lost"} <= set(data["preemption"])
    assert set(data["utilization"]) >= {"allocation_mean", "effective"}
    assert data["duration_s"] == 14 * 3600
    assert plot.read_bytes()[:4] == b"\x89PNG"
    lines = [json.loads(x) for x in events.read_text().splitlines()]
    assert any(x["event"] == "preempt" for x in lines)
    assert [x["t"] for x in lines] == sorted(x["t"] for x in lines)


def test_run_table_fits_80_columns():
    out = invoke("run", "--scenario", "seed-preemption", "--set", "duration=2h")
    assert out.exit_code == 0
    assert "COST" in out.output and max(len(line) for line in out.output.splitlines()) <= 120


def test_a_scenario_file_and_set_overrides(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("""
duration: 2h
cluster:
  node_groups:
    gpu: {gpus: 8, cpu: 96, memory: 1Ti, min: 1, max: 3, initial: 1, price_per_hour: 10}
workload:
  generators:
    - {kind: training, name: t, pods: 2, duration: 1h, pod: {gpus: 8, cpu: 1, memory: 1Gi}}
billing: {granularity: 3600s, currency: EUR}
""")
    out = invoke("run", str(f), "--set", "billing.currency=USD", "-o", "json")
    data = json.loads(out.output)
    assert data["scenario"] == "mine" and data["cost"]["currency"] == "USD"
    assert data["autoscaler"]["scale_ups"] == 1


BAD = [
    ("unknown key", "cluster:\n  node_groups:\n    g: {gpus: 8, colour: red}\n", "cluster.node_groups.g.colour"),
    ("wrong type", "duration: 1h\ncluster:\n  node_groups:\n    g: {gpus: eight}\n", "cluster.node_groups.g.gpus"),
    ("negative duration", "duration: -5m\ncluster:\n  node_groups:\n    g: {gpus: 8}\n", "duration"),
    ("endless duration", "duration: forever\ncluster:\n  node_groups:\n    g: {gpus: 8}\n", "duration"),
    ("unknown flag", "autoscaler: {scale-down-delay-aftr-add: 1m}\ncluster:\n  node_groups:\n    g: {gpus: 8}\n",
     "autoscaler.scale-down-delay-aftr-add"),
    ("gang larger than the cluster",
     "cluster:\n  node_groups:\n    g: {gpus: 8, max: 2, initial: 1}\nworkload:\n  generators:\n"
     "    - {kind: training, name: t, pods: 3, pod: {gpus: 8}}\n", "workload.generators.0.pods"),
    ("negative generator value",
     "cluster:\n  node_groups:\n    g: {gpus: 8}\nworkload:\n  generators:\n"
     "    - {kind: training, name: t, duration: -1h, pod: {gpus: 1}}\n", "workload.generators.0.duration"),
]


@pytest.mark.parametrize("what, text, field", BAD, ids=[b[0] for b in BAD])
def test_bad_scenarios_exit_2_with_one_line_naming_file_and_field(tmp_path, what, text, field):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    plot = tmp_path / "p.png"
    proc = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "simulate", "run", str(f), "--plot", str(plot),
                           "-o", "json"], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and not plot.exists()
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and field in lines[0], lines


def test_bad_set_and_missing_scenario():
    for args in (["run", "--scenario", "nope"], ["run", "--scenario", "seed-flapping/nope"],
                 ["run", "--scenario", "seed-flapping", "--set", "autoscaler.expander=cheapest"]):
        out = CliRunner().invoke(simulate, args)
        assert out.exit_code != 0
