"""Tables a person can read: at 80 columns nothing is cut inside a name or a number; -o wide and wide
terminals show more; piped output has no trailing padding (issue 11). Run on a real pseudo-terminal."""

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from inprocess import run_inprocess

from .support import run, run_tty

SHARED_NCCL = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "nccl"


def _json(*args):
    return json.loads(run_inprocess(*args, "-o", "json").stdout)  # what the table is checked against


def _lines(text):
    return [line for line in text.splitlines()]


@pytest.mark.parametrize("args", [["status", "--demo"], ["frag", "--demo"], ["doctor", "--demo"],
                                  ["audit", "--demo"], ["storage", "estimate", "--size", "14GB", "--demo"],
                                  ["defrag", "--demo", "--size", "4"], ["defrag", "--demo", "--empty-nodes", "2"],
                                  ["simulate", "run", "--scenario", "seed-flapping"]])
def test_nothing_is_cut_at_80_columns(args):
    out = run_tty(80, *args)
    assert "…" not in out and "..." not in out.replace(", ... (", "")
    too_long = [line for line in _lines(out) if len(line.rstrip()) > 80]
    assert not too_long, too_long[:3]


def test_status_names_and_models_stay_whole_and_columns_drop_at_80():
    narrow, wide = run_tty(80, "status", "--demo"), run_tty(200, "status", "--demo")
    data = _json("status", "--demo")
    for node in data["nodes"]:
        assert re.search(rf"^{re.escape(node['name'])}\s", narrow, re.M)
    assert "NVIDIA-A100-SXM4-80GB" in narrow
    assert "STATUS" in wide.splitlines()[0] and "STATUS" not in narrow.splitlines()[0]
    assert "GPU PODS" in run_tty(80, "status", "--demo", "-o", "wide").splitlines()[0]   # wide adds columns


def test_doctor_pending_pods_stay_whole_at_80_columns():
    out = run_tty(80, "doctor", "--demo")
    for p in _json("doctor", "--demo")["sections"]["pending"]:
        assert p["pod"] in out


def test_audit_objects_stay_whole_at_80_columns():
    out = run_tty(80, "audit", "--demo")
    for f in _json("audit", "--demo")["findings"]:
        assert f["object"] in out


@pytest.mark.skipif(not SHARED_NCCL.is_dir(), reason="../shared/fixtures/nccl not present")
def test_nccl_tables_never_cut_a_file_name():
    log = str(SHARED_NCCL / "socket_fallback_pytorch-68893.log")  # has findings, so a FIRST SEEN column
    narrow = run_tty(80, "nccl", log)
    assert "…" not in narrow
    assert all(len(line.rstrip()) <= 80 for line in _lines(narrow))
    assert f"{log}:" in run_tty(200, "nccl", log)          # FIRST SEEN comes back when there is room


@pytest.mark.parametrize("args", [["status", "--demo"], ["frag", "--demo"], ["doctor", "--demo"],
                                  ["audit", "--demo"], ["storage", "estimate", "--size", "14GB"]])
def test_piped_output_has_no_trailing_padding(args):
    out = run(*args).stdout
    assert out and not [line for line in _lines(out) if line != line.rstrip()]


def test_simulate_table_keeps_mean_and_sd_whole_at_80_columns():
    from kubegpu.cli.columns import print_table
    from kubegpu.cli.simulate import results_table
    from kubegpu.simulate.inflation import InflationResult, RunResult, Summary

    points = {str(x): 90.0 + x / 100 for x in (50, 80, 90, 95, 100, 105, 110, 120, 130)}
    results = [InflationResult(trace="t", policy=name, tune=1.3, runs=[RunResult(
        seed=1, alloc_pct=points, frag_rate_pct=points, frag_amount_pct=points, pods=1, failed_pods=0)],
        unallocated_pct_at_100=Summary(mean=4.61, sd=0.01)) for name in ("gpu-clustering", "least-allocated")]
    for width in (80, 200):
        con = Console(file=io.StringIO(), width=width, force_terminal=False)
        print_table(con, results_table(results, width=width), width)
        text = con.file.getvalue()
        assert "4.61 ± 0.01" in text and "gpu-clustering" in text and "least-allocated" in text
        assert all(len(line) <= width for line in text.splitlines())
        assert ("ALLOC@50" in text) == (width == 200)


def _nothing_cut(out: str) -> None:
    assert "…" not in out and "..." not in out
    too_long = [line for line in _lines(out) if len(line.rsplit("\r", 1)[-1].rstrip()) > 80]  # \r: a progress bar
    assert not too_long, too_long[:3]


def test_defrag_pods_and_nodes_stay_whole_at_80_columns():
    out = run_tty(80, "defrag", "--demo", "--size", "4")
    _nothing_cut(out)
    moves = _json("defrag", "--demo", "--size", "4")["moves"]
    assert moves
    for m in moves:
        assert re.search(rf"{re.escape(m['pod'])}\s+{re.escape(m['from'])}\s+{re.escape(m['to'])}\s", out)


def test_models_plan_table_at_80_columns(tmp_path):
    cache = tmp_path / "cache.yaml"
    cache.write_text("apiVersion: kubegpu.io/v1alpha1\nkind: ModelCache\nmetadata: {name: llama}\nspec:\n"
                     "  version: v2\n  files: [{path: w.safetensors, size: 14000000000, sha256: " + "a" * 64 + "}]\n"
                     "  source: {path: /mnt/nfs/llama}\n  nodeSelector: {nvidia.com/gpu.present: 'true'}\n")
    out = run_tty(80, "models", "plan", "--cache", str(cache), "--demo")
    _nothing_cut(out.split("\n", 1)[1])  # the headline sentence is prose and may wrap
    for n in _json("models", "plan", "--cache", str(cache), "--demo")["nodes"]:
        assert re.search(rf"^{re.escape(n['name'])}\s", out, re.M)


def test_simulate_sweep_table_at_80_columns(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("autoscaler.scale-down-delay-after-add: [10m, 30m]\n"
                    "autoscaler.scale-down-unneeded-time: [10m]\nautoscaler.max-node-provision-time: [15m]\n"
                    "autoscaler.scale-down-utilization-threshold: [0.5]\nseed: [1]\n")
    # the layout is the point, not the day: 6 simulated hours, one process
    args = ("simulate", "sweep", "--scenario", "seed-flapping", "--grid", str(grid), "--set", "duration=6h",
            "--workers", "1")
    out = run_tty(80, *args)
    _nothing_cut(out)
    assert "scale-down-utilization-threshold: 0.5" in out and "lost-gpu-h: " in out  # too wide: one record per run
    assert run_tty(200, *args).count("LOST-GPU-H") == 1
