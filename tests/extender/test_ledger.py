"""The decision log: schema-valid records, rotation, and `kubegpu decisions` reading it back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from clusters import gpu_rules_cluster
from jsonschema import Draft202012Validator
from loopback import make_extender

from kubegpu.extender.ledger import Ledger, read_ledger

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schemas" / "decision.schema.json").read_text())


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def ledger_file(tmp_path_factory):
    """Every kind of record: filter passed/rejected/error, prioritize, preempt."""
    state = gpu_rules_cluster()
    path = tmp_path_factory.mktemp("ledger") / "decisions.ndjson"
    ext = make_extender(state, ledger=str(path))
    names = [n.name for n in state.nodes]
    for pod in state.unscheduled_pods:
        body = msgspec.json.encode({"Pod": pod, "NodeNames": names})
        ext.filter(body)
        ext.prioritize(body)
    ext.filter(b'{"Pod": {"metadata": {"name": "broken", "namespace": "ml"}, "spec": {"containers": 1}}}')
    ext.preempt(msgspec.json.encode({"Pod": state.pod("ml", "eight-0"),
                                     "NodeNameToMetaVictims": {"a100-0": {"Pods": [{"UID": "uid-ml-busy-a"}]}}}))
    ext.ledger.close()
    return path


def test_every_record_validates_against_the_schema(ledger_file):
    Draft202012Validator.check_schema(SCHEMA)
    validator = Draft202012Validator(SCHEMA)
    lines = ledger_file.read_text().splitlines()
    assert len(lines) == 2 * 11 + 2
    modes = set()
    for line in lines:
        record = json.loads(line)
        errors = list(validator.iter_errors(record))
        assert not errors, errors[0].message
        modes.add((record["mode"], record["outcome"]))
    assert {("extender-filter", "passed"), ("extender-filter", "rejected"), ("extender-filter", "error"),
            ("extender-prioritize", "scored"), ("extender-preempt", "dropped-some")} <= modes


def test_a_prioritize_record_says_where_and_why(ledger_file):
    rec = next(d for d in read_ledger(ledger_file) if d.mode == "extender-prioritize" and d.pod.name == "eight-0")
    assert rec.chosen == "a100-2" and rec.scores[0].node == "a100-2" and rec.scores[0].score == 10
    assert rec.scores[0].stranded_gpus_after is not None
    assert rec.request.num_gpu == 8 and rec.pod.owner == "Job/eight" and rec.policy == "fgd"


def test_the_ledger_rotates_by_size_and_reads_both_files(tmp_path):
    path = tmp_path / "d.ndjson"
    ext = make_extender(gpu_rules_cluster())
    ext.ledger = Ledger(str(path), max_bytes=4096)
    body = msgspec.json.encode({"Pod": ext.store.model.cluster.pod("ml", "one-gpu-0"), "NodeNames": ["a100-2"]})
    for _ in range(20):
        ext.filter(body)
    ext.ledger.close()
    assert path.with_name("d.ndjson.1").exists() and path.stat().st_size <= 4096
    records = read_ledger(path)
    ids = [int(d.id.rsplit("-", 1)[1]) for d in records]
    assert ids == sorted(ids) and ids[-1] == 20 and len(records) < 20


def test_decisions_prints_a_pods_records_as_json_and_as_a_table(ledger_file):
    r = cli("decisions", "ml/eight-0", "--ledger", str(ledger_file), "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [d["mode"] for d in data] == ["extender-filter", "extender-prioritize", "extender-preempt"]
    assert {d["pod"]["name"] for d in data} == {"eight-0"}
    r = cli("decisions", "eight-0", "--ledger", str(ledger_file), "--mode", "extender-prioritize")
    assert r.returncode == 0 and "a100-2" in r.stdout and "prioritize" in r.stdout


def test_decisions_on_a_broken_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"schema": "kubegpu.io/decision/v1"}\n')
    r = cli("decisions", "--ledger", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.ndjson:1" in r.stderr
    r = cli("decisions", "--ledger", str(tmp_path / "missing.ndjson"))
    assert r.returncode == 2 and "no such decision log" in r.stderr


def test_the_default_policy_is_one_constant():
    from kubegpu.cli.extender import DEFAULT_POLICY, extender

    assert DEFAULT_POLICY == "fgd"
    assert next(p for p in extender.params if p.name == "policy").default == DEFAULT_POLICY


def test_an_address_in_use_is_one_line_and_exit_2():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = cli("extender", "--demo", "--port", str(port))
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr
    assert "Traceback" not in r.stderr
