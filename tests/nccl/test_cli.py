"""`kubegpu nccl` on the command line: output formats, the JSON contract, exit codes."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli, main

TIMEOUT_LINE = ("[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 "
                "milliseconds before timing out.\n")
IB_LINES = ("g:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
            "g:1:2 [0] NCCL INFO Using network IB\n"
            "g:1:3 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n")
SOCKET_LINES = ("w:1:2 [0] NCCL INFO NET/IB : No device found.\n"
                "w:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>\n"
                "w:1:2 [0] NCCL INFO Using network Socket\n")


@pytest.fixture
def logs(tmp_path):
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


def test_json_contract_and_exit_0_on_a_healthy_run(logs):
    result = CliRunner().invoke(cli, ["nccl", logs("ib.log", IB_LINES), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"transport", "gdr", "findings", "verdict"} <= set(data)
    assert (data["transport"], data["gdr"], data["findings"]) == ("IB", True, [])
    assert isinstance(data["verdict"], str) and data["verdict"].startswith("Healthy")


def test_error_finding_exits_1_and_json_findings_carry_evidence(logs):
    result = CliRunner().invoke(cli, ["nccl", logs("t.log", TIMEOUT_LINE), "-o", "json"])
    assert result.exit_code == 1
    finding = json.loads(result.output)["findings"][0]
    assert finding["id"] == "collective-timeout" and finding["severity"] == "error"
    assert finding["evidence"][0]["line"] == 1 and finding["evidence"][0]["file"].endswith("t.log")
    assert finding["cause"] and finding["fix"]


def test_fail_on_warn_and_never(logs):
    path = logs("s.log", SOCKET_LINES)
    runner = CliRunner()
    assert runner.invoke(cli, ["nccl", path]).exit_code == 0  # warnings only
    assert runner.invoke(cli, ["nccl", path, "--fail-on", "warn"]).exit_code == 1
    assert runner.invoke(cli, ["nccl", logs("t.log", TIMEOUT_LINE), "--fail-on", "never"]).exit_code == 0


def test_table_and_wide_output(logs):
    path = logs("s.log", SOCKET_LINES)
    table = CliRunner().invoke(cli, ["nccl", path])
    assert table.exit_code == 0
    assert "Degraded:" in table.output and "Socket" in table.output and "no-ib-device" in table.output
    wide = CliRunner().invoke(cli, ["nccl", path, "-o", "wide"])
    assert "NET/IB : No device found." in wide.output  # evidence lines are shown in wide


def test_yaml_output(logs):
    result = CliRunner().invoke(cli, ["nccl", logs("ib.log", IB_LINES), "-o", "yaml"])
    assert yaml.safe_load(result.output)["transport"] == "IB"


def test_stdin_through_the_cli():
    result = CliRunner().invoke(cli, ["nccl", "-", "-o", "json"], input=SOCKET_LINES)
    assert json.loads(result.output)["transport"] == "Socket"


def test_missing_file_exits_2_with_one_line_naming_it(tmp_path, capsys):
    missing = str(tmp_path / "absent.log")
    with pytest.raises(SystemExit) as exit_info:
        main(["nccl", missing])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and missing in err


def test_no_argument_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["nccl"])
    assert exit_info.value.code == 2


def test_help_documents_exit_codes():
    result = CliRunner().invoke(cli, ["nccl", "--help"])
    assert result.exit_code == 0
    assert "Exit codes" in result.output and "--fail-on" in result.output
