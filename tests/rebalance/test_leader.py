"""Leader election on a coordination.k8s.io/v1 Lease (client-go's tryAcquireOrRenew) against the
suite's API server, and two replicas of the rebalancer: only the leader acts, and when the leader is
killed mid-round the other takes over after the lease expires and resumes from the shared journal
directory without sending an eviction twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from apiserver.wire import ObjectKey
from liveworld import FakeTime

from kubegpu.rebalance.leader import LeaderElector, LeaseConfig, LeadershipLost
from kubegpu.rebalance.loop import run_loop

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _elector(world, who: str, time: FakeTime) -> LeaderElector:
    return LeaderElector(world.api(), LeaseConfig(namespace="kubegpu", identity=who), clock=time.clock,
                         now=time.now)


def test_one_leader_at_a_time_and_a_takeover_only_after_the_lease_expires(live):
    ta, tb = FakeTime(), FakeTime()
    a, b = _elector(live, "replica-a", ta), _elector(live, "replica-b", tb)
    assert a.try_acquire_or_renew() and a.leading
    lease = live.scheduler.lease("kubegpu", "kubegpu-rebalance")
    assert lease["spec"]["holderIdentity"] == "replica-a" and lease["spec"]["leaseTransitions"] == 0
    assert lease["spec"]["renewTime"].startswith("2026-12-01T12:00:00") and lease["spec"]["leaseDurationSeconds"] == 15
    assert not b.try_acquire_or_renew() and not b.leading
    tb.sleep(14.0)                     # B's own observation: 14 s < leaseDurationSeconds 15
    assert not b.try_acquire_or_renew()
    ta.sleep(2.0)
    assert a.try_acquire_or_renew()    # A renews: the record changes, B's observation starts again
    tb.sleep(14.0)
    assert not b.try_acquire_or_renew()
    tb.sleep(16.0)                     # A stopped renewing 16 s ago by B's clock: B takes over
    assert b.try_acquire_or_renew() and b.leading
    lease = live.scheduler.lease("kubegpu", "kubegpu-rebalance")
    assert lease["spec"]["holderIdentity"] == "replica-b" and lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()
    ta.sleep(11.0)                     # past A's renew deadline (10 s): A no longer leads
    assert not a.leading
    with pytest.raises(LeadershipLost):
        a.hold()
    b.release()
    lease = live.scheduler.lease("kubegpu", "kubegpu-rebalance")
    assert lease["spec"]["holderIdentity"] == "" and lease["spec"]["leaseDurationSeconds"] == 1
    assert a.try_acquire_or_renew() or (ta.sleep(2.0) or a.try_acquire_or_renew())
    assert live.scheduler.lease("kubegpu", "kubegpu-rebalance")["spec"]["leaseTransitions"] == 2


def test_a_concurrent_write_makes_the_update_fail_with_409(live):
    ta = FakeTime()
    a = _elector(live, "replica-a", ta)
    assert a.try_acquire_or_renew()
    raced = {"n": 0}

    def someone_writes_first(request):
        if request.method == "PUT" and "/leases/" in request.path and not raced["n"]:
            raced["n"] += 1
            key = ObjectKey("coordination.k8s.io/v1", "leases", "kubegpu", "kubegpu-rebalance")
            live.server._rv += 1
            live.server.store[key]["metadata"]["resourceVersion"] = str(live.server._rv)
        return None

    live.server.faults.append(someone_writes_first)
    ta.sleep(2.0)
    assert not a.try_acquire_or_renew()
    assert any(r.status == 409 and r.method == "PUT" for r in live.server.requests)
    assert a.try_acquire_or_renew()


def test_a_second_replica_never_acts_while_the_first_leads(live):
    ta, tb = FakeTime(), FakeTime()
    holder = _elector(live, "replica-a", ta)
    assert holder.try_acquire_or_renew()
    reb = live.rebalancer(tb, identity="replica-b")

    def a_keeps_renewing(seconds):
        tb.sleep(seconds)
        ta.sleep(seconds)
        holder.try_acquire_or_renew()

    code = run_loop(reb, interval_s=60, lease_name="kubegpu-rebalance", lease_namespace="kubegpu",
                    identity="replica-b", sleep=a_keeps_renewing, clock=tb.clock, rounds=1, max_tries=20)
    assert code == 1
    assert live.cluster.evictions == [] and live.scheduler.created == [] and live.cluster.cordon_patches == []


def test_killing_the_leader_mid_round_the_other_resumes_without_repeating_an_eviction(live, tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC, "KUBEGPU_POD_NAME": "replica-a"}
    cmd = [sys.executable, "-m", "kubegpu.cli.main", "rebalance", "--yes", "--kubeconfig", str(live.kubeconfig),
           "--journal-dir", str(live.journal_dir), "--placeholder-namespace", "kubegpu", "--interval", "5m",
           "-o", "json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = {"at": None}

    def kill_at_first_eviction(request):
        if request.path.endswith("/eviction") and killed["at"] is None:
            killed["at"] = request.path
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        return None

    live.server.faults.append(kill_at_first_eviction)
    try:
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed["at"] is not None, proc.stderr.read().decode()[-2000:]
    assert live.cordoned() and live.placeholders()            # A died holding a cordon and placeholders
    tb = FakeTime()
    reb = live.rebalancer(tb, identity="replica-b")
    reports = []
    code = run_loop(reb, interval_s=60, lease_name="kubegpu-rebalance", lease_namespace="kubegpu",
                    identity="replica-b", sleep=tb.sleep, clock=tb.clock, rounds=1, on_round=reports.append)
    assert code == 0
    assert tb.sleeps[0] == 2.0 and sum(tb.sleeps[:8]) >= 15.0   # waited for A's lease to expire first
    report = reports[0]
    assert len(report.resumed) == 1 and len(report.leftovers_removed) >= 2, report.message
    resumed = report.plans[0]
    assert resumed.status == "done", resumed.reason
    uids = live.evicted_uids()
    assert len(uids) == 3 and len(set(uids)) == 3
    live.scheduler.tick()
    assert live.pod_body("ml", "big")["spec"].get("nodeName")
    lease = live.scheduler.lease("kubegpu", "kubegpu-rebalance")
    assert lease["spec"]["holderIdentity"] == "" and lease["spec"]["leaseTransitions"] == 1
    live.assert_clean()


def test_once_refuses_to_run_beside_a_looping_leader(live):
    import subprocess
    import sys

    ta = FakeTime()
    from datetime import datetime, timezone

    ta.start = datetime.now(timezone.utc)           # the CLI compares renewTime with the wall clock
    holder = _elector(live, "replica-a", ta)
    assert holder.try_acquire_or_renew()
    env = {**os.environ, "PYTHONPATH": SRC, "KUBEGPU_POD_NAME": "by-hand"}
    cmd = [sys.executable, "-m", "kubegpu.cli.main", "rebalance", "--once", "--yes", "--kubeconfig",
           str(live.kubeconfig), "--journal-dir", str(live.journal_dir), "--placeholder-namespace", "kubegpu"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "replica-a holds the Lease" in r.stderr
    assert live.scheduler.created == [] and live.cluster.evictions == []
    holder.release()                                 # released: --once runs
    r = subprocess.run(cmd + ["-o", "json"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    live.assert_clean()
