"""`kubegpu simulate sweep`: grid x seeds, files, resume, and a real dask cluster of worker processes."""

import json

import pytest
from click.testing import CliRunner

from kubegpu.cli.simulate import simulate

SHORT = ["--set", "duration=13h"]


@pytest.fixture
def grid(tmp_path):
    g = tmp_path / "grid.yaml"
    g.write_text("workload.generators.1.checkpoint_interval: [0s, 1h]\nseed: [1, 2]\n")
    return g


def sweep(*args):
    return CliRunner().invoke(simulate, ["sweep", "--scenario", "seed-preemption", *SHORT, *args], catch_exceptions=False)


def test_sweep_every_combination_times_seeds_with_files(grid, tmp_path):
    out = sweep("--grid", str(grid), "--out", str(tmp_path / "o"), "--workers", "1", "-o", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [(r["params"]["workload.generators.1.checkpoint_interval"], r["seed"]) for r in rows] == [
        ("0s", 1), ("0s", 2), ("1h", 1), ("1h", 2)]
    lost = {(r["params"]["workload.generators.1.checkpoint_interval"], r["seed"]): r["result"]["preemption"]["work_gpu_hours_lost"] for r in rows}
    assert lost[("1h", 1)] <= 16 < lost[("0s", 1)]
    csv_lines = (tmp_path / "o" / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 5 and csv_lines[0].startswith("workload.generators.1.checkpoint_interval,seed,")
    assert json.loads((tmp_path / "o" / "results.json").read_text()) == rows
    assert (tmp_path / "o" / "comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_sweep_resumes_from_its_journal(grid, tmp_path):
    folder = tmp_path / "o"
    folder.mkdir()
    first = json.loads(sweep("--grid", str(grid), "--out", str(folder), "--workers", "1", "-o", "json").output)
    journal = folder / "runs.ndjson"
    lines = journal.read_text().splitlines()
    marked = json.loads(lines[0])
    marked["result"]["cost"]["total"] = -1.0  # a run that is already done is not run again
    journal.write_text(json.dumps(marked) + "\n" + lines[1] + "\n" + lines[2][:40])  # last line cut short
    again = json.loads(sweep("--grid", str(grid), "--out", str(folder), "--workers", "2", "-o", "json").output)
    key = lambda r: (r["params"], r["seed"])  # noqa: E731
    assert [key(r) for r in again] == [key(r) for r in first]
    assert sum(r["result"]["cost"]["total"] == -1.0 for r in again) == 1
    assert [r for r in again if r["result"]["cost"]["total"] != -1.0] == [
        r for r in first if key(r) != key(marked)]


def test_bad_grid_is_rejected_before_anything_runs(tmp_path):
    g = tmp_path / "g.yaml"
    g.write_text("autoscaler.scale-down-delay-aftr-add: [1m]\n")
    out = CliRunner().invoke(simulate, ["sweep", "--scenario", "seed-preemption", "--grid", str(g),
                                        "--out", str(tmp_path / "o")])
    assert out.exit_code != 0 and "scale-down-delay-aftr-add" in str(out.exception)
    assert not (tmp_path / "o" / "results.csv").exists()
    g.write_text("seed: 3\n")
    out = CliRunner().invoke(simulate, ["sweep", "--scenario", "seed-preemption", "--grid", str(g)])
    assert out.exit_code != 0 and "seed" in str(out.exception)


def test_dask_cluster_of_worker_processes_gives_byte_identical_results(grid):
    distributed = pytest.importorskip("distributed")
    local = sweep("--grid", str(grid), "--workers", "1", "-o", "json")
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            pids = set(client.run(lambda: __import__("os").getpid()).values())
        remote = sweep("--grid", str(grid), "--address", cluster.scheduler_address, "-o", "json")
    assert len(pids) == 2 and __import__("os").getpid() not in pids
    assert remote.exit_code == 0, remote.output
    assert remote.output == local.output
