"""Hostile scenario and grid files for `simulate run` / `simulate sweep`: one line naming file and field, exit 2.

Each file in `simulate_files/` says on its first line what the error must name:
`# expect: FIELD | TEXT` (FIELD empty when the file as a whole is wrong). Files that hung or ran
until killed before (alias bombs, absurd work) run as a subprocess with a timeout, so a regression
fails instead of hanging the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inprocess import run_inprocess
from tests.hostile.conftest import run

FILES = Path(__file__).parent / "simulate_files"
HANG_CLASS = ("bomb", "work-", "a-million")

BASE = """duration: 2h
cluster:
  node_groups:
    gpu: {gpus: 8, min: 1, max: 4, initial: 1, price_per_hour: 10}
workload:
  generators:
    - kind: poisson
      name: batch
      rate_per_hour: 10
      median_duration: 10m
      pod: {gpus: 1, cpu: 2, memory: 4Gi}
"""


def expectation(path: Path) -> tuple[str, str]:
    head = path.read_bytes().split(b"\n", 1)[0].decode()
    field, _, text = head.removeprefix("# expect:").partition("|")
    return field.strip(), text.strip()


def run_cli(path: Path, *args: str):
    if any(mark in path.name for mark in HANG_CLASS):
        return run(*args, timeout=60)
    return run_inprocess(*args)


def check(result, path: Path) -> None:
    field, text = expectation(path)
    assert result.code == 2, (result.code, result.stderr[-500:])
    assert len(result.err_lines) == 1, result.stderr[-2000:]
    line = result.err_lines[0]
    assert len(line) < 600, line[:200]
    assert str(path) in line and text in line, line
    if field:
        assert f"field {field}:" in line, line
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("path", sorted(p for p in FILES.glob("*.yaml") if not p.name.startswith("grid-")),
                         ids=lambda p: p.stem)
def test_hostile_scenario_file_is_one_line_naming_the_field(path):
    check(run_cli(path, "simulate", "run", str(path), "-o", "json"), path)


@pytest.mark.parametrize("path", sorted(FILES.glob("grid-*.yaml")), ids=lambda p: p.stem)
def test_hostile_grid_file_is_one_line_naming_the_field(path, tmp_path):
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    check(run_cli(path, "simulate", "sweep", str(scenario), "--grid", str(path), "--workers", "1"), path)


def test_the_base_scenario_of_these_files_runs(tmp_path):
    """The hostile files are the base scenario plus one change: the base itself is fine."""
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    assert run_inprocess("simulate", "run", str(scenario), "-o", "json").code == 0


@pytest.mark.parametrize("value, says", [
    ("&a [1,1,1,1,1,1,1,1,1,1]", None),  # a value that is fine
    ("[", "malformed YAML"),
    ("{a: 1}\n---\n{b: 2}", "one YAML value"),
])
def test_set_values_are_read_by_the_guarded_loader(tmp_path, value, says):
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    r = run_inprocess("simulate", "run", str(scenario), "--set", f"description={value}", "-o", "json")
    if says is None:
        assert r.code == 2 and "field description" in r.stderr  # a list is not a description: named
    else:
        assert r.code == 2 and len(r.err_lines) == 1 and "--set description" in r.stderr and says in r.stderr


def test_an_alias_bomb_in_a_set_value_is_refused_quickly(tmp_path):
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    levels = ["&l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    levels += [f"&l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb = "[" + ", ".join(levels) + "]"
    r = run("simulate", "run", str(scenario), "--set", f"description={bomb}", timeout=60)
    assert r.code == 2 and len(r.err_lines) == 1 and "alias" in r.stderr, r.stderr[-300:]


def test_a_set_date_where_a_string_belongs_names_the_field(tmp_path):
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    r = run_inprocess("simulate", "run", str(scenario), "--set", "name=2024-01-01")
    assert r.code == 2 and "field name: 2024-01-01 is a date; quote it" in r.stderr
    assert run_inprocess("simulate", "run", str(scenario), "--set", "name='2024-01-01'", "-o", "json").code == 0


def test_a_scenario_that_is_a_folder_or_a_fifo_is_one_line(tmp_path, monkeypatch):
    import os

    folder = tmp_path / "scenario.yaml"
    folder.mkdir()
    r = run_inprocess("simulate", "run", str(folder))
    assert r.code == 2 and "is a directory" in r.stderr
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    monkeypatch.setenv("KUBEGPU_READ_TIMEOUT", "1")
    r = run("simulate", "run", str(fifo), timeout=60)
    assert r.code == 2 and len(r.err_lines) == 1 and str(fifo) in r.stderr


def test_an_unreadable_scenario_is_one_line(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    scenario.chmod(0)
    r = run_inprocess("simulate", "run", str(scenario))
    assert r.code == 2 and "cannot read" in r.stderr


@pytest.mark.parametrize("policy", ["fgd", "kubegpu"])
def test_the_policies_docs_list_work_in_a_scenario(tmp_path, policy):
    """docs/simulate.md: scheduler_policy is any policy of the registry; fgd/kubegpu score against the
    scenario's own pod shapes."""
    import json

    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    r = run_inprocess("simulate", "run", str(scenario), "--set", f"cluster.scheduler_policy={policy}", "-o", "json")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["pods"]["by_class"]["batch"]["pods"] > 0


@pytest.mark.parametrize("key", ["workload.generators." + "9" * 5000 + ".name", "workload.generators.².name",
                                 "workload.generators.0.name.x"])
def test_set_paths_that_name_no_item_are_one_line(tmp_path, key):
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE)
    r = run_inprocess("simulate", "run", str(scenario), "--set", f"{key}=x")
    assert r.code == 2 and len(r.err_lines) == 1 and len(r.err_lines[0]) < 400, r.stderr[:300]
    assert "field workload.generators." in r.stderr


@pytest.mark.parametrize("name, data, says", [
    ("jobs.csv", b"submit,duration,gpus\n0,1h,\xff\n", "not UTF-8"),
    ("openb.csv", b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,scheduled_time,deletion_time\n"
                  b"p,1000,1024,1,1000,0,0,nan\n", "field deletion_time"),
    ("big.json", b'[{"submit": ' + b"9" * 5000 + b"}]", "not valid JSON"),
    ("wide.csv", b"submit,duration\n0," + b"x" * 200_000 + b"\n", "malformed CSV"),
])
def test_a_hostile_trace_is_one_line_naming_the_file(tmp_path, name, data, says):
    (tmp_path / name).write_bytes(data)
    scenario = tmp_path / "base.yaml"
    scenario.write_text(BASE.replace("workload:\n", f"workload:\n  trace: {name}\n"))
    r = run_inprocess("simulate", "run", str(scenario), "-o", "json")
    assert r.code == 2 and len(r.err_lines) == 1 and name in r.stderr and says in r.stderr, r.stderr[-300:]
