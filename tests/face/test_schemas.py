"""Every command's `-o json` on both demos validates against docs/schemas/<command>.schema.json."""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from inprocess import run_inprocess

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
SHARED_NCCL = ROOT / ".." / "shared" / "fixtures" / "nccl"
DEMOS = ["pitfalls", "clean"]


def validate(name: str, data) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def json_of(*args):
    r = run_inprocess(*args, "-o", "json")  # the JSON's shape is tested here, not the process
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("demo", DEMOS)
@pytest.mark.parametrize("command, args", [
    ("status", ["status"]),
    ("frag", ["frag"]),
    ("audit", ["audit"]),
    ("doctor", ["doctor"]),
    ("why", ["why", "--all"]),
    ("defrag", ["defrag", "--size", "4"]),
    ("rebalance", ["rebalance", "--once"]),
    ("share", ["share"]),
])
def test_command_json_matches_its_schema(command, args, demo):
    validate(command, json_of(*args, "--demo", demo))


def test_why_single_pod_matches_the_schema():
    validate("why", json_of("why", "alice-notebook-0", "-n", "ml-research", "--demo"))


def test_schemas_reject_what_the_contract_forbids():
    data = json_of("audit", "--demo")
    del data["findings"][0]["patch"]
    with pytest.raises(AssertionError):
        validate("audit", data)
    frag = json_of("frag", "--demo")
    frag["fits_by_size"].pop("4")
    with pytest.raises(AssertionError):
        validate("frag", frag)


@pytest.mark.skipif(not SHARED_NCCL.is_dir(), reason="../shared/fixtures/nccl not present")
def test_nccl_json_matches_its_schema():
    for log in sorted(SHARED_NCCL.glob("*.log")):
        validate("nccl", json_of("nccl", str(log)))


SHARED_TRACE = ROOT / ".." / "shared" / "data" / "alibaba-gpu-v2023"


@pytest.mark.skipif(not SHARED_TRACE.is_dir(), reason="../shared/data/alibaba-gpu-v2023 not present")
def test_simulate_inflation_json_matches_its_schema(tmp_path):
    # the shape is the point, not the cluster's size: the first 120 of the trace's 1,213 GPU nodes
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("".join((SHARED_TRACE / "openb_node_list_gpu_node.csv").read_text().splitlines(True)[:121]))
    validate("simulate-inflation", json_of("simulate", "inflation", "--nodes", str(nodes),
                                           "--pods", str(SHARED_TRACE / "openb_pod_list_default.csv"),
                                           "--policy", "fgd", "--seeds", "1"))


@pytest.mark.parametrize("command", ["status", "frag", "audit", "doctor"])
def test_namespaced_json_matches_the_same_schema(command):
    validate(command, json_of(command, "--demo", "-n", "ml-research"))


@pytest.mark.parametrize("scenario", ["seed-flapping", "seed-preemption/checkpoint-1h"])
def test_simulate_run_json_matches_its_schema(scenario):
    validate("simulate-run", json_of("simulate", "run", "--scenario", scenario))


def test_simulate_run_with_a_rebalancer_reports_the_rebalance_block():
    data = json_of("simulate", "run", "--scenario", "seed-preemption", "--set", "rebalancer.enabled=false")
    assert "rebalance" in data
    validate("simulate-run", data)
    del data["rebalance"]["stranded_gpus"]
    with pytest.raises(AssertionError):
        validate("simulate-run", data)


def test_simulate_sweep_json_and_results_json_match_the_schema(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("autoscaler.scale-down-unneeded-time: [10m, 40m]\nseed: [1]\n")
    data = json_of("simulate", "sweep", "--scenario", "seed-flapping", "--grid", str(grid),  # the shape is the
                   "--set", "duration=6h", "--workers", "1", "--out", str(tmp_path / "out"))  # point, not the day
    assert len(data) == 2
    validate("simulate-sweep", data)
    validate("simulate-sweep", json.loads((tmp_path / "out" / "results.json").read_text()))


def test_models_plan_json_matches_its_schema(tmp_path):
    cache = tmp_path / "cache.yaml"
    cache.write_text("apiVersion: kubegpu.io/v1alpha1\nkind: ModelCache\nmetadata: {name: llama}\nspec:\n"
                     "  version: v2\n  files: [{path: w.safetensors, size: 14000000000, sha256: " + "a" * 64 + "}]\n"
                     "  source: {path: /mnt/nfs/llama}\n  nodeSelector: {nvidia.com/gpu.present: 'true'}\n")
    data = json_of("models", "plan", "--cache", str(cache), "--demo")
    assert data["nodes"]
    validate("models-plan", data)
    data["nodes"][0]["bytes_needed"] = "14GB"
    with pytest.raises(AssertionError):
        validate("models-plan", data)


@pytest.mark.parametrize("text", [
    "0/6 nodes are available: 6 Insufficient nvidia.com/gpu.",
    "0/5 nodes are available: 2 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu. "
    "preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims "
    "found for incoming pod.",
    "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
])
def test_why_event_json_matches_its_schema(text):
    validate("why-event", json_of("why", "--event", text))


@pytest.mark.parametrize("args", [[], ["--demo"], ["--demo", "clean"]])
def test_storage_estimate_json_matches_its_schema(args):
    data = json_of("storage", "estimate", "--size", "14GB", *args)
    assert data["estimates"]
    validate("storage-estimate", data)
