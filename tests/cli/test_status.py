"""`kubegpu status` on the demo and on real fixtures (issue 2's done-when)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubegpu.errors import InputError
from kubegpu.sources import snapshot as snapshot_module

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "k8s"


def run(*args):
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          timeout=120)


def test_demo_status_json_totals():
    r = run("status", "--demo", "-o", "json")
    assert r.returncode == 0, r.stderr
    totals = json.loads(r.stdout)["totals"]
    assert totals["nodes"] == 40 and totals["gpu_nodes"] == 10
    assert totals["gpus"] == {"total": 80, "allocated": 70, "free": 10}
    assert totals["allocation_ratio"] == 0.875


def test_demo_every_gpu_node_has_one_free_gpu():
    nodes = json.loads(run("status", "--demo", "-o", "json").stdout)["nodes"]
    gpu_nodes = [n for n in nodes if n["gpus"]["total"]]
    assert len(gpu_nodes) == 10
    assert all(n["gpus"]["free"] == 1 and n["gpu_model"] == "NVIDIA-A100-SXM4-80GB" for n in gpu_nodes)


def test_table_and_yaml_outputs():
    r = run("status", "--demo", "--gpu-only")
    assert r.returncode == 0 and "gpu-train-01" in r.stdout and "cpu-01" not in r.stdout
    assert "80 GPUs, 70 allocated (87.5%), 10 free" in r.stdout
    y = run("status", "--demo", "-o", "yaml")
    assert y.returncode == 0 and "gpu_nodes: 10" in y.stdout


@pytest.mark.skipif(not FIXTURES.exists(), reason="../shared/fixtures not present beside the project")
def test_real_rke2_vgpu_node_list():
    r = run("status", "--snapshot", str(FIXTURES / "node_list_gpu_rke2_vgpu_a16.json"), "-o", "json")
    assert r.returncode == 0, r.stderr
    node = json.loads(r.stdout)["nodes"][0]
    assert node["gpu_model"] == "NVIDIA-A16-4Q" and node["gpus"]["total"] == 1


def test_oversized_file_is_refused_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot_module, "MAX_BYTES", 1024)
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [{"kind": "ConfigMap",
                    "apiVersion": "v1", "metadata": {"name": f"cm-{i}"}} for i in range(100)]}))
    with pytest.raises(InputError, match="larger than"):
        snapshot_module.read_snapshot(path)
