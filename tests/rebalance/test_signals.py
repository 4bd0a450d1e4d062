"""SIGTERM at every mutating API call of a live round: no cordon and no placeholder are left behind,
and nothing is evicted twice. The signal is sent to this process by the server thread right before
it answers the k-th write, so it lands while the round waits for that answer."""

from __future__ import annotations

import os
import signal

import pytest
from liveworld import start_live_world

WRITES = ("POST", "PATCH", "PUT", "DELETE")


def _count_writes(tmp_path) -> int:
    world = start_live_world(tmp_path / "count")
    try:
        report = world.rebalancer().round()
        assert report.status == "moved"
        return sum(1 for r in world.server.requests if r.method in WRITES)
    finally:
        world.server.stop()


def test_sigterm_at_every_write_leaves_no_cordon_and_no_placeholder(tmp_path):
    total = _count_writes(tmp_path)
    assert total >= 12  # 3 placeholders, cordon, 3 Events, 3 evictions, uncordon, 3 deletes
    for k in range(1, total + 1):
        world = start_live_world(tmp_path / f"k{k}")
        seen = {"n": 0}

        def terminate_at_k(request, k=k):
            if request.method in WRITES:
                seen["n"] += 1
                if seen["n"] == k:
                    os.kill(os.getpid(), signal.SIGTERM)
            return None

        world.server.faults.append(terminate_at_k)
        try:
            report = world.rebalancer().round()
            assert report.signal == signal.SIGTERM or seen["n"] < k, (k, report.status, report.message)
            assert report.status in ("stopped", "moved"), (k, report.message)
            world.assert_clean()
        finally:
            world.server.stop()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_placeholders_wait_to_be_placed_deletes_them(tmp_path, sig):
    world = start_live_world(tmp_path)
    world.scheduler.enabled = False        # placeholders stay Pending: the round waits for them

    def signal_on_first_placeholder_read(request):
        if request.method == "GET" and "/namespaces/kubegpu/pods/" in request.path:
            os.kill(os.getpid(), sig)
        return None

    world.server.faults.append(signal_on_first_placeholder_read)
    try:
        report = world.rebalancer().round()
        assert report.status == "stopped" and report.signal == sig
        assert world.cluster.evictions == [] and world.cluster.cordon_patches == []
        world.assert_clean()
    finally:
        world.server.stop()


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_the_real_cli_stopped_mid_round_exits_128_plus_n_and_leaves_nothing(tmp_path, sig, code):
    import subprocess
    import sys
    from pathlib import Path

    world = start_live_world(tmp_path)
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "rebalance", "--once", "--yes",
                             "--kubeconfig", str(world.kubeconfig), "--journal-dir", str(world.journal_dir),
                             "--placeholder-namespace", "kubegpu", "-o", "json"],
                            env={**os.environ, "PYTHONPATH": src}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sent = {"done": False}

    def stop_at_first_eviction(request):
        if request.path.endswith("/eviction") and not sent["done"]:
            sent["done"] = True
            proc.send_signal(sig)
        return None

    world.server.faults.append(stop_at_first_eviction)
    try:
        out, err = proc.communicate(timeout=120)
        assert sent["done"], err.decode()[-2000:]
        assert proc.returncode == code, err.decode()[-2000:]
        import json

        report = json.loads(out)
        assert report["status"] == "stopped" and report["signal"] == int(sig)
        assert len(world.cluster.evictions) <= 1
        world.assert_clean()
    finally:
        if proc.poll() is None:
            proc.kill()
        world.server.stop()


def test_a_damaged_journal_in_the_journal_dir_is_one_line_exit_2_and_nothing_is_touched(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    world = start_live_world(tmp_path)
    (world.journal_dir / "rebalance-20261201T000000Z-dead-1.jsonl").write_text('{"event": "plan"}\n[1,2]\n')
    src = str(Path(__file__).resolve().parents[2] / "src")
    try:
        r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "rebalance", "--once", "--yes", "--kubeconfig",
                            str(world.kubeconfig), "--journal-dir", str(world.journal_dir)],
                           env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "rebalance-20261201T000000Z-dead-1.jsonl" in r.stderr
        assert world.scheduler.created == [] and world.cluster.evictions == [] and world.cluster.cordon_patches == []
    finally:
        world.server.stop()
