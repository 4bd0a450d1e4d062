"""The executor is the one safety gate: each rule re-applied to the live pod, changed between plan and apply.

The plan is made, then the cluster changes (as it would while an operator reads the confirmation
prompt, or between a stop and `--resume`), then the executor runs against the test API server.
"""

from __future__ import annotations

import pytest
from apiserver.wire import ObjectKey
from builders import pdb, pod
from livecluster import options, start_world, GANG_LABEL, gang_and_pinned_objects

from kubegpu.defrag.evictability import EvictionPolicy
from kubegpu.defrag.executor import Executor
from kubegpu.defrag.journal import Journal




def _drop_controller(w, body):
    body["metadata"].pop("ownerReferences")


def _not_safe_to_evict(w, body):
    body["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] = "false"


def _do_not_disrupt(w, body):
    body["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"


def _local_storage(w, body):
    body["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]


def _system_critical(w, body):
    body["spec"]["priority"] = 2_000_000_000


def _daemonset(w, body):
    body["metadata"]["ownerReferences"][0].update(kind="DaemonSet", apiVersion="apps/v1")


def _beneficiary_outranked(w, body):
    w.pod_body("ml/big")["spec"]["priority"] = -10  # recreated with a lower priority than the planned victims


def _gang_member_elsewhere(w, body):
    body["metadata"]["labels"][GANG_LABEL] = "ddp"
    other = next(v for k, v in w.server.store.items() if k.plural == "pods" and v["spec"].get("nodeName")
                 and v["spec"]["nodeName"] != body["spec"]["nodeName"])
    other["metadata"]["labels"][GANG_LABEL] = "ddp"


def _two_pdbs(w, body):
    app = body["metadata"]["labels"]["app"]
    w.server.add(pdb("one", {"app": app}, max_unavailable=5))
    w.server.add(pdb("two", {"app": app}, max_unavailable=5))
    w.emulator.reconcile()


def _replaced(w, body):
    body["metadata"]["uid"] = "uid-someone-recreated-it"


def _moved(w, body):
    body["spec"]["nodeName"] = "spare"


@pytest.mark.parametrize("change, words", [
    (_drop_controller, "bare pod"),
    (_daemonset, "DaemonSet pod"),
    (_not_safe_to_evict, 'safe-to-evict: "false"'),
    (_do_not_disrupt, "do-not-disrupt"),
    (_local_storage, "emptyDir volume(s) scratch"),
    (_system_critical, "system-critical"),
    (_beneficiary_outranked, "higher than the pod the plan makes room for (-10)"),
    (_gang_member_elsewhere, "would stay behind (a gang moves whole)"),
    (_two_pdbs, "matched by 2 PodDisruptionBudgets"),
    (_replaced, "no longer there"),
    (_moved, "runs on spare"),
])
def test_a_rule_broken_after_planning_aborts_before_the_eviction(world, change, words):
    w = world
    first = w.plan.moves[0]
    change(w, w.pod_body(first.pod))
    report = Executor(w.api, Journal(w.journal), options()).apply(w.plan)
    assert report.status == "aborted" and not report.resumable
    assert words in report.message and "plan again" in report.message
    assert w.emulator.evictions == []
    assert report.uncordoned == w.plan.cordon and not w.node_cordoned(w.plan.cordon[0])
    refused = [r for r in Journal(w.journal).read() if r["event"] == "gate-refused"]
    assert refused and refused[0]["pod"] == first.pod and any(words in x for x in refused[0]["reasons"])


def test_the_gate_runs_again_on_resume_of_an_old_journal(world):
    w = world
    assert Executor(w.api, Journal(w.journal), options(max_moves=1)).apply(w.plan).status == "stopped"
    later = w.plan.moves[1]
    _not_safe_to_evict(w, w.pod_body(later.pod))
    report = Executor(w.api, Journal(w.journal), options()).resume()
    assert report.status == "aborted" and 'safe-to-evict: "false"' in report.message
    assert w.evicted_uids() == [w.plan.moves[0].uid]
    assert not w.node_cordoned(w.plan.cordon[0]) and w.node_cordoned("spare")
    closed = Executor(w.api, Journal(w.journal), options()).resume()
    assert closed.status == "aborted" and closed.message.startswith("was aborted") and len(w.emulator.evictions) == 1


def test_local_storage_allowed_by_the_journaled_policy_passes_on_resume(world):
    w = world
    policy = EvictionPolicy(allow_local_storage=True)
    assert Executor(w.api, Journal(w.journal), options(max_moves=1), policy).apply(w.plan).status == "stopped"
    _local_storage(w, w.pod_body(w.plan.moves[1].pod))
    # the resuming process is given no policy: the journal's own is re-applied
    report = Executor(w.api, Journal(w.journal), options()).resume()
    assert report.status == "finished", report.message
    assert w.evicted_uids() == [m.uid for m in w.plan.moves]


def test_a_gang_step_begun_before_a_crash_is_finished_not_refused(tmp_path):
    from apiserver.eviction import ClusterEmulator
    from apiserver.server import FakeApiServer

    from kubegpu.defrag import Goal, plan_defrag
    from kubegpu.defrag.api import LightkubeApi

    objs = gang_and_pinned_objects()
    with FakeApiServer() as server:
        emulator = ClusterEmulator(server, lag=0)
        server.add_all(objs)
        emulator.reconcile()
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kc")))
        plan = plan_defrag(emulator.state(), Goal(kind="pod", pod="ml/want4"))
        assert len([m for m in plan.moves if m.gang]) == 2

        class Crash(BaseException):
            pass

        real = api.evict
        calls = {"n": 0}

        def evict_once_then_die(ns, name):
            real(ns, name)
            calls["n"] += 1
            if calls["n"] == 1:
                raise Crash()

        api.evict = evict_once_then_die
        with pytest.raises(Crash):
            Executor(api, Journal(tmp_path / "j"), options()).apply(plan)
        api.evict = real
        emulator.tick()  # the first member's replacement is now running beside the second member
        report = Executor(api, Journal(tmp_path / "j"), options()).resume()
        assert report.status == "finished", report.message
        assert sorted(e.uid for e in emulator.evictions) == sorted(m.uid for m in plan.moves)
        assert server.store.get(ObjectKey("v1", "pods", "ml", "want4")) is not None


def test_a_plan_for_a_pending_gang_named_by_its_gang_runs_to_the_end(tmp_path):
    from kubegpu.defrag import Goal

    gang = {GANG_LABEL: "ddp"}
    extra = [pod(f"ddp-{i}", None, 2, kind="Job", controller="ddp", labels=gang, priority=100) for i in range(2)]
    server, w = start_world(tmp_path, extra=extra, plan_goal=Goal(kind="pod", pod="ml/ddp"))
    try:
        assert {t.pod for t in w.plan.targets} == {"ml/ddp-0", "ml/ddp-1"}
        report = Executor(w.api, Journal(w.journal), options()).apply(w.plan)
        assert report.status == "finished", report.message
        assert w.evicted_uids() == [m.uid for m in w.plan.moves]
    finally:
        server.stop()


def test_a_beneficiary_deleted_after_planning_aborts_before_any_eviction(world):
    w = world
    with w.server.lock:
        del w.server.store[ObjectKey("v1", "pods", "ml", "big")]
    report = Executor(w.api, Journal(w.journal), options()).apply(w.plan)
    assert report.status == "aborted" and "ml/big" in report.message and "gone" in report.message
    assert w.emulator.evictions == [] and not w.node_cordoned(w.plan.cordon[0])


def test_the_gate_reads_the_pod_after_the_rate_pause_not_before(world):
    from livecluster import FakeClock

    w = world
    clock = FakeClock()
    second = w.plan.moves[1]

    def sleep(seconds):  # while the executor waits out --rate, someone protects the next pod
        clock.sleep(seconds)
        if seconds >= 5:
            _not_safe_to_evict(w, w.pod_body(second.pod))

    opts = options(clock, rate_per_minute=6)
    opts.sleep = sleep
    report = Executor(w.api, Journal(w.journal), opts).apply(w.plan)
    assert report.status == "aborted" and second.pod in report.message
    assert w.evicted_uids() == [w.plan.moves[0].uid]
