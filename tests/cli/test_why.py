"""`kubegpu why` end to end through the CLI entry point (snapshot in a temp dir)."""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "scheduling"))
from sched_builders import node, pod  # noqa: E402

TOL = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


def _kubegpu(*args):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2])


def _snapshot(tmp_path):
    items = [node("g1", gpus=8), node("g2", gpus=8, taints=[{"key": "x", "value": "y", "effect": "NoSchedule"}]),
             pod("busy", node_name="g1", gpus=6, tolerations=TOL), pod("wants4", ns="ml", gpus=4)]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_why_one_pod_json(tmp_path):
    res = _kubegpu("why", "wants4", "-n", "ml", "--snapshot", _snapshot(tmp_path), "-o", "json",
                   "--k8s-version", "1.34.1")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["pod"] == "ml/wants4" and data["schedulable"] is False
    assert data["message"].startswith("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
                                      "1 node(s) had untolerated taint {x: y}. no new claims to deallocate, preemption: 0/2")
    assert [n["name"] for n in data["nodes"]] == ["g1", "g2"]


def test_why_all_lists_reports_and_table_renders(tmp_path):
    snap = _snapshot(tmp_path)
    res = _kubegpu("why", "--all", "--snapshot", snap, "-o", "json")
    assert res.returncode == 0 and [r["pod"] for r in json.loads(res.stdout)] == ["ml/wants4"]
    table = _kubegpu("why", "--all", "--snapshot", snap, "-o", "wide")
    assert "remedies" in table.stdout and "g1" in table.stdout


def test_why_event_parses_pasted_text():
    res = _kubegpu("why", "--event", "0/6 nodes are available: 6 Insufficient nvidia.com/gpu.", "-o", "json")
    data = json.loads(res.stdout)
    assert data["total_nodes"] == 6 and data["reasons"][0]["plugin"] == "NodeResourcesFit"


def test_why_usage_errors_exit_2(tmp_path):
    assert _kubegpu("why", "--snapshot", _snapshot(tmp_path)).returncode == 2
    assert _kubegpu("why", "nope", "--snapshot", _snapshot(tmp_path)).returncode == 2
