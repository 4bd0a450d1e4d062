"""Every command's `-o json` on both demos validates against docs/schemas/<command>.schema.json."""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from .support import run

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
    r = run(*args, "-o", "json")
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
def test_simulate_inflation_json_matches_its_schema():
    validate("simulate-inflation", json_of("simulate", "inflation",
                                           "--nodes", str(SHARED_TRACE / "openb_node_list_gpu_node.csv"),
                                           "--pods", str(SHARED_TRACE / "openb_pod_list_default.csv"),
                                           "--policy", "fgd", "--seeds", "1"))


@pytest.mark.parametrize("command", ["status", "frag", "audit", "doctor"])
def test_namespaced_json_matches_the_same_schema(command):
    validate(command, json_of(command, "--demo", "-n", "ml-research"))
