"""The executor against the test API server: real HTTP, lightkube, PDBs enforced by the server.

Every test checks the promises: nothing is evicted beyond the plan, nothing twice, no node we
cordoned stays cordoned, the admin's cordon ("spare") is never touched, and every stop short of
the plan is resumable.
"""

from __future__ import annotations

import os
import signal

import pytest
from apiserver.wire import ObjectKey, status_reply
from builders import pdb, pod
from livecluster import FakeClock, namespace, options, resume_plan, run_plan, gang_and_pinned_objects, refuse_evictions

from kubegpu.defrag import Goal, plan_defrag
from kubegpu.scheduling.cycle import filter_pod
from kubegpu.defrag.api import LightkubeApi
from kubegpu.defrag.executor import Executor
from kubegpu.defrag.journal import Journal
from kubegpu.errors import UsageError



def _events(w):
    return [r["event"] for r in Journal(w.journal).read()]


def test_apply_cordons_evicts_in_order_waits_and_uncordons(world):
    w = world
    report = run_plan(w)
    assert report.status == "finished" and not report.resumable, report.message
    assert w.evicted_uids() == [m.uid for m in w.plan.moves]
    assert w.emulator.cordon_patches == [(w.plan.cordon[0], True), (w.plan.cordon[0], False)]
    assert all(node != w.plan.cordon[0] for node in (r.split("@")[1] for r in report.replacements.values()))
    from kubegpu.scheduling.snapshot import SchedulingSnapshot

    state = w.emulator.state()
    snap = SchedulingSnapshot.from_cluster(state)
    assert filter_pod(snap, state.pod("ml", "big")).fits[snap.index[w.plan.targets[0].node]]
    events = _events(w)
    assert events[0] == "plan" and events[-1] == "finished"
    assert events.index("cordon-request") < events.index("cordoned") < events.index("evict-request")
    assert events.index("uncordon-request") < events.index("uncordoned")
    head = Journal(w.journal).read()[0]
    assert head["cluster"]["cluster_uid"] == "uid-kube-system-a" and head["cluster"]["server"] == w.server.url
    w.assert_clean()


def test_a_429_is_retried_with_doubling_backoff_on_the_fake_clock(world):
    w = world
    refuse_evictions(w.server, 3)
    clock = FakeClock()
    report = run_plan(w, clock, poll_s=0.5)
    assert report.status == "finished"
    assert [s for s in clock.sleeps if s != 0.5][:3] == [1.0, 2.0, 4.0]
    assert sum(1 for r in Journal(w.journal).read() if r["event"] == "evict-refused") == 3
    w.assert_only_planned_once()


def test_retry_after_is_honoured(world):
    w = world
    refusals = {"left": 1}

    def throttle(request):
        if request.path.endswith("/eviction") and refusals["left"]:
            refusals["left"] -= 1
            reply = status_reply(429, "TooManyRequests", "slow down")
            reply.headers["Retry-After"] = "7"
            return reply
        return None

    w.server.faults.append(throttle)
    clock = FakeClock()
    assert run_plan(w, clock, poll_s=0.5).status == "finished"
    assert 7.0 in clock.sleeps


def test_rate_spaces_evictions_on_the_fake_clock(world):
    w = world
    clock = FakeClock()
    times = []
    real = w.api.evict

    def timed(ns, name):
        times.append(clock.t)
        real(ns, name)

    w.api.evict = timed
    report = run_plan(w, clock, rate_per_minute=6, poll_s=0.5)
    assert report.status == "finished"
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(times) == 3 and all(g >= 10.0 - 1e-9 for g in gaps)
    assert all(g < 10.0 + 0.5 * 4 for g in gaps)  # the wait is the rest of the gap, not a gap on top


def test_a_pdb_that_stays_exhausted_stops_resumably_and_uncordons(world):
    w = world
    victim = w.plan.moves[0].pod.split("/")[1]
    w.server.add(pdb("lock", {"app": w.pod_body(w.plan.moves[0].pod)["metadata"]["labels"]["app"]},
                     min_available="100%"))
    w.emulator.reconcile()
    clock = FakeClock()
    report = run_plan(w, clock)
    assert report.status == "stopped" and report.resumable
    assert "disruption budget" in report.message and "lock" in report.message
    assert w.emulator.evictions == [] and not w.emulator.refused  # the gate waits; no eviction was even sent
    assert clock.t >= 16.0
    assert report.uncordoned == w.plan.cordon
    assert victim


def test_a_transient_500_stops_resumably_and_resume_continues(world):
    w = world
    fail = {"on": True}
    w.server.faults.append(lambda r: status_reply(500, "InternalError", "etcd leader changed")
                           if r.path.endswith("/eviction") and fail["on"] else None)
    report = run_plan(w)
    assert report.status == "stopped" and report.resumable and "etcd leader changed" in report.message
    assert w.emulator.evictions == [] and report.uncordoned == w.plan.cordon
    fail["on"] = False
    again = resume_plan(w)
    assert again.status == "finished", again.message
    assert w.evicted_uids() == [m.uid for m in w.plan.moves]
    w.assert_clean()
    assert resume_plan(w).message.startswith("already finished")


def test_max_moves_stops_between_steps_and_resume_continues(world):
    w = world
    report = run_plan(w, max_moves=2)
    assert report.status == "stopped" and report.resumable and "--max-moves 2" in report.message
    assert len(w.emulator.evictions) == 2 and report.uncordoned == w.plan.cordon
    again = resume_plan(w)
    assert again.status == "finished", again.message
    assert w.evicted_uids() == [m.uid for m in w.plan.moves]
    w.assert_clean()


def test_max_cost_prices_the_live_pods_and_stops(world):
    w = world
    report = run_plan(w, max_cost_gpu_hours=0.01)
    assert report.status == "stopped" and "--max-cost" in report.message and w.emulator.evictions == []


def test_a_connection_reset_after_the_eviction_is_not_repeated(world):
    w = world
    state = {"reset": True}

    def reset_after_evicting(request):
        if request.path.endswith("/eviction") and state["reset"]:
            state["reset"] = False
            ns, name = request.path.split("/")[4], request.path.split("/")[6]
            w.emulator._evict(w.server, request, ns, name)  # the server did it...
            raise ConnectionResetError("peer reset")  # ...but the answer never arrives
        return None

    w.server.faults.append(reset_after_evicting)
    report = run_plan(w)
    assert report.status == "finished", report.message
    w.assert_only_planned_once()
    assert len(w.emulator.evictions) == 3


def test_sigterm_during_the_run_stops_resumably_and_uncordons(world):
    w = world
    real = w.api.evict
    calls = {"n": 0}

    def evict_then_term(ns, name):
        real(ns, name)
        calls["n"] += 1
        if calls["n"] == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    w.api.evict = evict_then_term

    def cli_handler(signum, frame):  # what a CLI may install: an exit that would skip the undo
        raise SystemExit(128 + signum)

    before = signal.signal(signal.SIGTERM, cli_handler)
    before_int = signal.signal(signal.SIGINT, cli_handler)
    try:
        report = run_plan(w)
        assert signal.getsignal(signal.SIGTERM) is cli_handler and signal.getsignal(signal.SIGINT) is cli_handler
    finally:
        signal.signal(signal.SIGTERM, before)
        signal.signal(signal.SIGINT, before_int)
    assert report.status == "stopped" and report.resumable and report.signal == signal.SIGTERM
    assert not w.node_cordoned(w.plan.cordon[0])
    w.api.evict = real
    assert resume_plan(w).status == "finished"
    w.assert_clean()


def test_sigint_stops_resumably_and_uncordons(world):
    w = world
    real = w.api.list_pods

    def interrupt(ns):
        os.kill(os.getpid(), signal.SIGINT)

    w.api.list_pods = interrupt
    report = run_plan(w)
    assert report.status == "stopped" and report.signal == signal.SIGINT
    assert not w.node_cordoned(w.plan.cordon[0])
    w.api.list_pods = real
    assert resume_plan(w).status == "finished"
    w.assert_clean()


def test_a_second_apply_is_refused_and_another_plans_journal_too(world):
    w = world
    run_plan(w, max_moves=1)
    with pytest.raises(UsageError, match="use --resume"):
        run_plan(w)
    other = plan_defrag(w.emulator.state(), Goal(kind="size", size=2))
    with pytest.raises(UsageError, match="another plan"):
        Executor(w.api, Journal(w.journal), options()).apply(other)


def test_resume_refuses_a_journal_of_another_cluster_and_touches_nothing(world, tmp_path):
    from apiserver.eviction import ClusterEmulator
    from apiserver.server import FakeApiServer
    from builders import fragmented

    w = world
    assert run_plan(w, max_moves=1).status == "stopped"
    with FakeApiServer() as other:
        emu = ClusterEmulator(other)
        other.add_all(fragmented(4, 8, 1) + [namespace("kube-system", "uid-kube-system-b"),
                                             pod("big", None, 4, kind="Job", controller="big")])
        other.store[ObjectKey("v1", "nodes", "", w.plan.cordon[0])]["spec"]["unschedulable"] = True  # its admin
        api = LightkubeApi.from_kubeconfig(str(other.kubeconfig(tmp_path / "other", context="other")))
        with pytest.raises(UsageError, match="another cluster"):
            Executor(api, Journal(w.journal), options()).resume()
        assert emu.cordon_patches == [] and emu.evictions == []
    assert Journal(w.journal).read()[-1]["status"] == "stopped"  # the journal is left as it was


def test_gang_steps_evict_every_member_then_wait(tmp_path):
    from apiserver.eviction import ClusterEmulator
    from apiserver.server import FakeApiServer

    objs = gang_and_pinned_objects()
    with FakeApiServer() as server:
        emulator = ClusterEmulator(server, lag=2)
        server.add_all(objs)
        emulator.reconcile()
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kc")))
        plan = plan_defrag(emulator.state(), Goal(kind="pod", pod="ml/want4"))
        assert plan.feasible
        report = Executor(api, Journal(tmp_path / "j"), options()).apply(plan)
        assert report.status == "finished", report.message
        assert {e.uid for e in emulator.evictions} == {m.uid for m in plan.moves}
        gang_moves = [m for m in plan.moves if m.gang]
        assert len(gang_moves) == 2 and len({m.step for m in gang_moves}) == 1


def _refuse_uncordon(w, state):
    def hook(request):
        if state["on"] and request.method == "PATCH" and b'"unschedulable":false' in request.body.replace(b" ", b""):
            return status_reply(500, "InternalError", "admission webhook timed out")
        return None
    return hook


def test_an_uncordon_the_api_refuses_is_reported_and_done_by_the_next_resume(world):
    w = world
    state = {"on": True}
    w.server.faults.append(_refuse_uncordon(w, state))
    report = run_plan(w, max_moves=1)
    node = w.plan.cordon[0]
    assert report.status == "stopped" and report.left_cordoned == [node]
    assert f"kubectl uncordon {node}" in report.message and w.node_cordoned(node)
    assert "uncordon-failed" in _events(w)
    state["on"] = False
    assert resume_plan(w).status == "finished"
    w.assert_clean()


def test_an_aborted_run_whose_undo_failed_is_undone_by_resume_and_stays_aborted(world):
    w = world
    state = {"on": True}
    w.server.faults.append(_refuse_uncordon(w, state))
    w.pod_body(w.plan.moves[0].pod)["metadata"].pop("ownerReferences")
    report = run_plan(w)
    assert report.status == "aborted" and report.left_cordoned == w.plan.cordon
    state["on"] = False
    again = resume_plan(w)
    assert again.status == "aborted" and again.message.startswith("was aborted")
    assert again.uncordoned == w.plan.cordon and not w.node_cordoned(w.plan.cordon[0])
    assert w.emulator.evictions == []


def test_the_demo_cluster_served_live_is_defragmented_end_to_end(tmp_path):
    """Realistic objects (PriorityClasses, PDBs with published status, gangs, annotations) on the wire."""
    from apiserver.eviction import ClusterEmulator
    from apiserver.server import FakeApiServer

    from kubegpu.sources.demo import demo_objects

    with FakeApiServer() as server:
        emulator = ClusterEmulator(server, lag=1, grace=1)
        for obj in demo_objects("pitfalls"):
            try:
                server.add(obj)
            except KeyError:  # a kind this test server does not serve
                pass
        emulator.reconcile()
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kc")))
        plan = plan_defrag(emulator.state(), Goal(kind="size", size=4))
        assert plan.feasible and plan.moves
        report = Executor(api, Journal(tmp_path / "j"), options()).apply(plan)
        assert report.status == "finished", report.message
        assert [e.uid for e in emulator.evictions] == [m.uid for m in plan.moves]
        after = plan_defrag(emulator.state(), Goal(kind="size", size=4))
        assert after.before["fits_by_size"]["4"] >= plan.before["fits_by_size"]["4"] + 1
        assert not any(emulator.state().node_by_name[n].spec.unschedulable for n in plan.cordon)


def test_a_cordon_the_api_refuses_is_not_reported_as_left_behind(world):
    w = world
    w.server.faults.append(lambda r: status_reply(403, "Forbidden", 'nodes "x" is forbidden: cannot patch')
                           if r.method == "PATCH" else None)
    report = run_plan(w)
    assert report.status == "stopped" and "forbidden" in report.message
    assert report.left_cordoned == [] and "kubectl uncordon" not in report.message
    assert w.emulator.evictions == [] and not w.node_cordoned(w.plan.cordon[0])
