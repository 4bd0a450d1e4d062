"""`kubegpu rules` and `kubegpu storage estimate` through the CLI."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli, main


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_rules_to_stdout_with_options():
    result = invoke("rules", "--iowait-threshold", "15", "--for", "5m", "--label", "release=kps")
    rule = yaml.safe_load(result.output)
    iowait = rule["spec"]["groups"][0]["rules"][0]
    assert iowait["expr"].endswith("> 15") and iowait["for"] == "5m"
    assert rule["metadata"]["labels"] == {"release": "kps"}


def test_rules_to_file(tmp_path):
    target = tmp_path / "rules.yaml"
    assert invoke("rules", "-o", str(target), "--no-kubegpu-metrics").exit_code == 0
    rule = yaml.safe_load(target.read_text())
    assert len(rule["spec"]["groups"]) == 2


def test_rules_bad_duration_is_usage_error():
    try:
        main(["rules", "--for", "soon"])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("expected exit 2")


def test_storage_estimate_defaults():
    result = invoke("storage", "estimate", "--size", "14GB", "-o", "json")
    rows = {r["storage"]: r["seconds"] for r in json.loads(result.output)["estimates"]}
    assert rows["nfs"] == 70.0 and rows["local-nvme"] < 5


def test_storage_estimate_table_and_demo():
    assert "70 s" in invoke("storage", "estimate", "--size", "14GB").output
    rows = json.loads(invoke("storage", "estimate", "--size", "14GB", "--demo", "-o", "json").output)["estimates"]
    assert "local-nvme" in {r["storage"] for r in rows}


def test_storage_bad_size_exits_2():
    try:
        main(["storage", "estimate", "--size", "big"])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("expected exit 2")


def test_storage_size_without_unit_is_a_one_line_error():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "storage", "estimate", "--size", "14"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "no unit" in r.stderr


def test_demo_lustre_class_is_not_nfs():
    rows = json.loads(invoke("storage", "estimate", "--size", "14GB", "--demo", "-o", "json").output)["estimates"]
    assert {r["storage"]: r["kind"] for r in rows}["fsx-lustre"] == "parallel-fs"
