"""The `kubegpu simulate inflation` and `kubegpu frag` commands end to end (click runner)."""

import json

import pytest
from click.testing import CliRunner

from kubegpu.cli.frag import frag
from kubegpu.cli.options import check_seeds
from kubegpu.cli.simulate import simulate


@pytest.fixture
def trace(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
        f"n{i},64000,262144,{g},{m}\n" for i, (g, m) in enumerate([(8, "A"), (8, "A"), (4, "B"), (2, "B")])))
    pods = tmp_path / "openb_pod_list_tiny.csv"
    rows = ([("4000", "8192", "1", "1000")] * 8 + [("2000", "4096", "1", g) for g in ("300", "500", "700")] * 3
            + [("8000", "16384", "4", "1000"), ("1000", "1024", "0", "0")])
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                    + "".join(f"p{i},{c},{m},{k},{g}\n" for i, (c, m, k, g) in enumerate(rows)))
    return str(nodes), str(pods)


def test_inflation_json_contract(trace):
    nodes, pods = trace
    out = CliRunner().invoke(simulate, ["inflation", "--nodes", nodes, "--pods", pods, "--policy", "fgd",
                                        "--seeds", "1-3", "-o", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["trace"] == "tiny" and data["policy"] == "fgd"
    assert [r["seed"] for r in data["runs"]] == [1, 2, 3]
    assert {"50", "80", "90", "95", "100", "105", "110", "120", "130"} <= set(data["runs"][0]["alloc_pct"])
    assert set(data["runs"][0]["frag_rate_pct"]) == set(data["runs"][0]["alloc_pct"])
    assert set(data["unallocated_pct_at_100"]) == {"mean", "sd"}


def test_inflation_several_policies_as_a_comma_list_and_a_plot(trace, tmp_path):
    nodes, pods = trace
    plot = tmp_path / "alloc.png"
    out = CliRunner().invoke(simulate, ["inflation", "--nodes", nodes, "--pods", pods, "--policy", "bestfit,random",
                                        "--policy", "kubegpu", "--seeds", "7", "--plot", str(plot), "-o", "json"])
    assert out.exit_code == 0, out.output
    assert [r["policy"] for r in json.loads(out.output)] == ["bestfit", "random", "kubegpu"]
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_inflation_rejects_unknown_policy_and_bad_csv(trace, tmp_path):
    nodes, pods = trace
    out = CliRunner().invoke(simulate, ["inflation", "--nodes", nodes, "--pods", pods, "--policy", "tetris"])
    assert out.exit_code != 0 and "tetris" in str(out.exception or out.output)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu_milli\n")
    out = CliRunner().invoke(simulate, ["inflation", "--nodes", nodes, "--pods", str(bad)])
    assert out.exit_code != 0 and "num_gpu" in str(out.exception or out.output)


def test_one_seed_parser_gives_the_seeds_in_order():
    assert check_seeds(None, None, "42-44,50") == [42, 43, 44, 50]
    assert check_seeds(None, None, "7") == [7]


def gpu_node(name: str, gpus: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": str(gpus)}},
        "status": {"allocatable": {"cpu": "96", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
                   "capacity": {"cpu": "96", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
                   "conditions": [{"type": "Ready", "status": "True"}]}}


def gpu_pod(name: str, node: str, gpus: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpus)},
                "limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": "Running"}}


def test_frag_on_a_snapshot(tmp_path):
    objects = [gpu_node("g0", 8), gpu_node("g1", 8)]
    objects += [gpu_pod(f"a{i}", "g0", 1) for i in range(7)] + [gpu_pod("b", "g1", 4), gpu_pod("c", "g1", 3)]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    plot = tmp_path / "gpus.png"
    out = CliRunner().invoke(frag, ["--snapshot", str(snap), "-o", "json", "--plot", str(plot)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["gpus"] == {"total": 16, "allocated": 14.0, "free": 2.0}
    assert data["allocation_ratio"] == pytest.approx(0.875)
    assert data["fits_by_size"] == {"1": 2, "2": 0, "4": 0, "8": 0}
    assert data["stranded_by_size"]["2"] == 2.0
    assert data["fragmentation"]["amount_milli_gpu"] >= 0 and 0 <= data["fragmentation"]["rate"] <= 1
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_frag_table_and_simulate_table_render(tmp_path, trace):
    objects = [gpu_node("g0", 8)] + [gpu_pod(f"a{i}", "g0", 1) for i in range(6)]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    out = CliRunner().invoke(frag, ["--snapshot", str(snap)])
    assert out.exit_code == 0, out.output
    assert "FIT 1" in out.output and "1-GPU: 2, 2-GPU: 1" in out.output
    nodes, pods = trace
    out = CliRunner().invoke(simulate, ["inflation", "--nodes", nodes, "--pods", pods, "--policy", "bestfit",
                                        "--seeds", "1,2"])
    assert out.exit_code == 0, out.output
    assert "UNALLOC@100" in out.output and "bestfit" in out.output
