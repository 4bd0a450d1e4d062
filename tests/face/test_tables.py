"""Tables a person can read: at 80 columns nothing is cut inside a name or a number; -o wide and wide
terminals show more; piped output has no trailing padding (issue 11). Run on a real pseudo-terminal."""

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from .support import run, run_tty

SHARED_NCCL = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "nccl"


def _json(*args):
    return json.loads(run(*args, "-o", "json").stdout)


def _lines(text):
    return [line for line in text.splitlines()]


@pytest.mark.parametrize("args", [["status", "--demo"], ["frag", "--demo"], ["doctor", "--demo"],
                                  ["audit", "--demo"], ["storage", "estimate", "--size", "14GB", "--demo"]])
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
