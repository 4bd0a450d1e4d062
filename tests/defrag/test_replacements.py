"""Evicted pods and their replacements: graceful termination, late, elsewhere, never, same-name StatefulSets.

The test API server's controllers recreate evicted pods; evicted pods keep a deletionTimestamp for a
grace period (pod lists) before they are removed, and a step is done only once its pods are gone
and their replacements run.
"""

from __future__ import annotations

from apiserver.wire import ObjectKey
from builders import gpu_node, pod
from livecluster import FakeClock, options, start_world, resume_plan, run_plan

from kubegpu.defrag import Goal, plan_defrag
from kubegpu.defrag.api import LightkubeApi
from kubegpu.defrag.executor import Executor
from kubegpu.defrag.journal import Journal


def test_evicted_pods_terminate_with_a_grace_period_before_the_step_is_done(tmp_path):
    server, w = start_world(tmp_path, grace=3, lag=0)
    try:
        seen_terminating = []

        def watch(request):
            if request.method == "GET" and request.path.endswith("/pods"):
                seen_terminating.extend(k.name for k, v in server.store.items()
                                        if k.plural == "pods" and v["metadata"].get("deletionTimestamp"))
            return None

        server.faults.append(watch)
        clock = FakeClock()
        report = run_plan(w, clock)
        assert report.status == "finished", report.message
        assert seen_terminating, "the emulator never showed a terminating pod"
        # a step waits until its pod is gone: the next eviction never meets the previous pod still there
        for e in w.emulator.evictions:
            assert ObjectKey("v1", "pods", e.namespace, e.name) not in server.store
        records = Journal(w.journal).read()
        assert len([r for r in records if r["event"] == "step-done"]) == len(w.plan.steps)
        w.assert_clean()
    finally:
        server.stop()


def test_a_late_replacement_is_waited_for_with_the_poll_interval(tmp_path):
    server, w = start_world(tmp_path, lag=4)
    try:
        clock = FakeClock()
        report = run_plan(w, clock, poll_s=5.0)
        assert report.status == "finished", report.message
        assert clock.sleeps.count(5.0) >= 4 * len(w.plan.steps)
    finally:
        server.stop()


def test_a_replacement_on_another_node_is_reported_as_a_deviation(world):
    w = world
    w.emulator.choose = lambda body, feasible: max(feasible)  # the scheduler has its own mind
    report = run_plan(w)
    assert report.status == "finished"
    assert report.deviations and all("planned" in d for d in report.deviations)


def test_a_replacement_that_never_comes_stops_resumably_uncordons_and_resume_waits_again(world):
    w = world
    w.emulator.recreate = False
    clock = FakeClock()
    report = run_plan(w, clock, replacement_timeout_s=20.0)
    assert report.status == "stopped" and report.resumable
    assert "no running replacement" in report.message
    assert len(w.emulator.evictions) == 1
    assert report.uncordoned == w.plan.cordon and not w.node_cordoned(w.plan.cordon[0])
    assert clock.t >= 20.0
    # the controller comes back: resume re-cordons, finds the pod evicted, and waits for its replacement
    w.emulator.recreate = True
    first = w.emulator.evictions[0]
    gone = w.plan.moves[0]
    w.emulator._recreate(pod(first.name, first.node, 1, controller=gone.pod.split("/")[1].rsplit("-", 1)[0]
                             .replace("w", "svc")))
    again = resume_plan(w)
    assert again.status == "finished", again.message
    w.assert_clean()
    assert w.evicted_uids() == [m.uid for m in w.plan.moves]


def test_a_statefulset_pod_is_recreated_under_its_name_only_after_the_old_one_is_gone(tmp_path):
    from apiserver.eviction import ClusterEmulator
    from apiserver.server import FakeApiServer

    objs = [gpu_node("n0", 4), gpu_node("n1", 4),
            pod("db-0", "n0", 2, kind="StatefulSet", controller="db"),
            pod("db-1", "n1", 2, kind="StatefulSet", controller="db"),
            pod("want4", None, 4, kind="Job", controller="want4")]
    with FakeApiServer() as server:
        emulator = ClusterEmulator(server, lag=0, grace=2)
        server.add_all(objs)
        emulator.reconcile()
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kc")))
        plan = plan_defrag(emulator.state(), Goal(kind="pod", pod="ml/want4"))
        assert len(plan.moves) == 1
        move = plan.moves[0]
        report = Executor(api, Journal(tmp_path / "j"), options()).apply(plan)
        assert report.status == "finished", report.message
        assert report.replacements == {move.pod: f"{move.pod}@{move.to}"}
        body = server.store[ObjectKey("v1", "pods", "ml", move.pod.split("/")[1])]
        assert body["metadata"]["uid"] != move.uid and not body["metadata"].get("deletionTimestamp")
