"""SIGINT and SIGTERM stop the longest-running commands promptly: 130 / 143, workers ended, no file left."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kubegpu.cli.interrupts import descendants

from .conftest import popen

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / ".." / "shared" / "data" / "alibaba-gpu-v2023"


def synthetic(path: Path, **kwargs) -> Path:
    spec = importlib.util.spec_from_file_location("synthetic_cluster", ROOT / "bench" / "synthetic_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_synthetic(path, **kwargs)


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory):
    return synthetic(tmp_path_factory.mktemp("big") / "big.json", nodes=1000, pods=10_000, pending=300)


@pytest.fixture(scope="module")
def milp_dump(tmp_path_factory):
    return synthetic(tmp_path_factory.mktemp("mid") / "mid.json", nodes=80, pods=700, pending=20)


def interrupt(args: list[str], sig: int, after: float, cwd: Path) -> tuple[int, str, set[int]]:
    """Start the command, signal it `after` seconds in; returns (exit code, stderr, its worker pids)."""
    with open(cwd / "stdout", "wb") as out:
        proc = popen(*args, stdout=out, stderr=subprocess.PIPE, cwd=cwd)
        deadline = time.monotonic() + after
        workers: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            workers |= descendants(proc.pid)
            time.sleep(0.1)
        if proc.poll() is not None:
            proc.communicate()
            pytest.skip(f"the command finished within {after}s, before the signal")
        workers |= descendants(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)  # a hang fails here
    return proc.returncode, err.decode(), workers


EXPECTED = {signal.SIGINT: (130, "interrupted\n"), signal.SIGTERM: (143, "terminated\n")}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_why_all_on_a_big_dump_stops(big_dump, tmp_path, sig):
    code, err, _ = interrupt(["why", "--all", "--snapshot", str(big_dump), "-o", "json"], sig, 2.5, tmp_path)
    assert (code, err) == EXPECTED[sig]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_defrag_inside_the_milp_solver_stops(milp_dump, tmp_path, sig):
    """HiGHS runs in C and never returns to Python on its own: the watchdog ends the command."""
    args = ["defrag", "--snapshot", str(milp_dump), "--size", "8", "--count", "2", "--exact", "always",
            "--time-limit", "30", "-o", "json"]
    code, err, _ = interrupt(args, sig, 6.0, tmp_path)
    assert (code, err) == EXPECTED[sig]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_simulation_workers_are_ended(tmp_path, sig):
    nodes, pods = TRACE / "openb_node_list_gpu_node.csv", TRACE / "openb_pod_list_default.csv"
    if not nodes.exists():
        pytest.skip("../shared/data/alibaba-gpu-v2023 is not available")
    args = ["simulate", "inflation", "--nodes", str(nodes), "--pods", str(pods), "--workers", "2",
            "--seeds", "1-20", "-o", "json"]
    code, err, workers = interrupt(args, sig, 4.0, tmp_path)
    assert (code, err) == EXPECTED[sig]
    assert workers, "the simulation started no worker process"
    time.sleep(0.5)
    assert [pid for pid in workers if os.path.exists(f"/proc/{pid}") and not _zombie(pid)] == []


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_interrupted_file_write_leaves_nothing(big_dump, tmp_path):
    target = tmp_path / "report.json"
    code, err, _ = interrupt(["doctor", "--snapshot", str(big_dump), "-o", "json", "--file", str(target)],
                             signal.SIGTERM, 3.0, tmp_path)
    assert (code, err) == EXPECTED[signal.SIGTERM]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stdout"]


def test_the_watchdog_waits_for_cleanup_and_otherwise_exits_removing_temp_files(monkeypatch, tmp_path):
    import threading

    from kubegpu.cli import interrupts
    from kubegpu.cli.writer import PENDING_TEMP_FILES
    from kubegpu.shutdown import finishing

    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    monkeypatch.setattr(interrupts, "GRACE_WORKERS", 0.01)
    monkeypatch.setattr(interrupts, "GRACE_EXIT", 0.02)
    state = interrupts.Interrupts()
    state.signalled = signal.SIGTERM
    with finishing(10):  # e.g. defrag --apply uncordoning its nodes after ^C
        watchdog = threading.Thread(target=state._deadline)
        watchdog.start()
        time.sleep(0.3)
        assert exits == []
        state.finished.set()  # the command ended on its own
    watchdog.join(5)
    assert exits == []

    temp = tmp_path / ".report.json.123.tmp"
    temp.write_text("{")
    PENDING_TEMP_FILES.add(str(temp))
    stuck = interrupts.Interrupts()
    stuck.signalled = signal.SIGTERM
    stuck._deadline()  # the command never returns (stuck in C): exit 143, temp file gone
    PENDING_TEMP_FILES.discard(str(temp))
    assert exits == [143] and not temp.exists()
