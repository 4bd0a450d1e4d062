"""`kubegpu audit` end to end through the CLI: formats, --fail-on exit codes, --checks, --config."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli

AUDIT = Path(__file__).resolve().parents[1] / "audit"
MOUNTS = str(AUDIT / "KG-802" / "fail-mount-timeouts-all-versions.yaml")


def run(*args):
    return CliRunner().invoke(cli, ["audit", *args], catch_exceptions=False)


def test_json_contract_on_the_demo():
    result = run("--demo", "-o", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert isinstance(data["score"], int) and 0 <= data["score"] <= 100
    for f in data["findings"]:
        assert {"id", "pitfall", "severity", "object", "message", "remediation"} <= set(f)
        assert 1 <= f["pitfall"] <= 10 and f["severity"] in ("info", "warn", "error")
    assert {f["pitfall"] for f in data["findings"] if f["severity"] != "info"} == set(range(1, 11))


def test_clean_demo_passes_fail_on_warn():
    assert run("--demo", "clean", "--fail-on", "warn").exit_code == 0


def test_fail_on_sets_the_exit_code():
    assert run("--snapshot", MOUNTS, "--fail-on", "error").exit_code == 1
    assert run("--snapshot", MOUNTS, "--checks", "KG-804", "--fail-on", "warn").exit_code == 0  # info only
    assert run("--snapshot", MOUNTS).exit_code == 0


def test_table_groups_by_pitfall(tmp_path):
    result = run("--snapshot", MOUNTS, "--checks", "pitfall:8")
    assert "Pitfall 8: Shared-filesystem model mounts" in result.output
    assert "ERROR KG-802" in result.output and "Score" in result.output


def test_wide_shows_patches():
    result = run("--snapshot", str(AUDIT / "KG-102" / "fail-small-servers-whole-gpus.yaml"), "--checks", "KG-102",
                 "-o", "wide")
    assert "patch (manifest)" in result.output and "time-slicing-config" in result.output


def test_sarif_validates():
    schema = json.loads((AUDIT / "sarif-2.1.0-schema.json").read_text())
    result = run("--demo", "-o", "sarif")
    jsonschema.Draft7Validator(schema).validate(json.loads(result.output))


def test_junit_and_yaml():
    assert run("--snapshot", MOUNTS, "-o", "junit").output.startswith('<?xml version="1.0"')
    data = yaml.safe_load(run("--snapshot", MOUNTS, "-o", "yaml").output)
    assert data["summary"]["error"] == 3


def test_config_file(tmp_path):
    cfg = tmp_path / "audit.yaml"
    cfg.write_text("severity: {KG-802: info}\n")
    assert run("--snapshot", MOUNTS, "--config", str(cfg), "--fail-on", "warn", "--checks", "KG-802").exit_code == 0


def test_list_checks():
    result = run("--list-checks", "-o", "json")
    ids = [c["id"] for c in json.loads(result.output)]
    assert ids[0] == "KG-101" and "KG-1003" in ids
    assert "KG-505" in run("--list-checks", "--checks", "pitfall:5").output


def test_input_and_usage_errors_exit_2(tmp_path):
    from kubegpu.cli.main import main

    bad = tmp_path / "audit.yaml"
    bad.write_text("disable: [KG-999]\n")
    for argv in (["audit", "--demo", "--config", str(bad)], ["audit", "--demo", "--checks", "nope"]):
        try:
            main(argv)
        except SystemExit as exit_:
            assert exit_.code == 2
        else:
            raise AssertionError("expected exit 2")
