"""The executor against the test API server: real HTTP, lightkube, PDBs enforced by the server.

Every test checks the two promises: nothing is evicted beyond the plan, and no PDB is violated
(the server refuses such evictions with 429, so a violation would show up as an accepted one).
"""

from __future__ import annotations

import pytest
from apiserver.eviction import ClusterEmulator
from apiserver.server import FakeApiServer
from apiserver.wire import status_reply
from builders import fragmented, gpu_node, pdb, pod

from kubegpu.defrag import Goal, plan_defrag
from kubegpu.defrag.api import LightkubeApi
from kubegpu.defrag.executor import Executor, ExecutorOptions
from kubegpu.defrag.journal import Journal
from kubegpu.errors import UsageError
from kubegpu.sources.kubeconfig import Timeouts


class SimulatedCrash(BaseException):
    """The executor process dies (kill -9): no cleanup runs."""


def _opts(**kw) -> ExecutorOptions:
    base = dict(poll_s=0.0, backoff_s=0.01, backoff_max_s=0.02, sleep=lambda s: None,
                replacement_timeout_s=5.0, eviction_deadline_s=2.0)
    return ExecutorOptions(**{**base, **kw})


@pytest.fixture
def world(tmp_path):
    with FakeApiServer() as server:
        emulator = ClusterEmulator(server, lag=1)
        server.add_all(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big")])
        emulator.reconcile()
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kubeconfig")),
                                           timeouts=Timeouts(connect=2.0, read=2.0))
        plan = plan_defrag(emulator.state(), Goal(kind="pod", pod="ml/big"))
        assert plan.feasible and len(plan.moves) == 3
        yield server, emulator, api, plan, tmp_path / "journal.jsonl"


def _assert_only_planned(emulator, plan):
    planned = {m.uid for m in plan.moves}
    uids = [e.uid for e in emulator.evictions]
    assert set(uids) <= planned
    assert len(uids) == len(set(uids)), "an eviction was sent twice"


def test_apply_cordons_evicts_in_order_waits_and_uncordons(world):
    server, emulator, api, plan, journal = world
    report = Executor(api, Journal(journal), _opts()).apply(plan)
    assert report.status == "completed", report.message
    assert [e.uid for e in emulator.evictions] == [m.uid for m in plan.moves]
    assert emulator.cordon_patches == [(plan.cordon[0], True), (plan.cordon[0], False)]
    assert not emulator.state().node_by_name[plan.cordon[0]].spec.unschedulable
    assert all(node != plan.cordon[0] for node in (r.split("@")[1] for r in report.replacements.values()))
    # the pending pod now fits where the plan said
    from kubegpu.scheduling.snapshot import SchedulingSnapshot

    state = emulator.state()
    snap = SchedulingSnapshot.from_cluster(state)
    assert snap.filter_pod(state.pod("ml", "big")).fits[snap.index[plan.targets[0].node]]
    events = [r["event"] for r in Journal(journal).read()]
    assert events[0] == "plan" and events[-1] == "finished"
    assert events.index("cordoned") < events.index("evict-request")


def test_a_429_is_retried_until_the_budget_allows(world):
    server, emulator, api, plan, journal = world
    refusals = {"left": 2}

    def throttle(request):
        if request.path.endswith("/eviction") and refusals["left"]:
            refusals["left"] -= 1
            return status_reply(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's "
                                                        "disruption budget.")
        return None

    server.faults.append(throttle)
    report = Executor(api, Journal(journal), _opts()).apply(plan)
    assert report.status == "completed"
    _assert_only_planned(emulator, plan)
    assert sum(1 for r in Journal(journal).read() if r["event"] == "evict-refused") == 2


def test_a_pdb_that_stays_exhausted_stops_the_run_and_uncordons(world, tmp_path):
    server, emulator, api, plan, journal = world
    # after planning, someone adds a budget that forbids any disruption of these pods
    server.add(pdb("lock", {"app": plan.moves[0].pod.split("/")[1].rsplit("-", 1)[0].replace("w", "svc")},
                   min_available="100%"))
    emulator.reconcile()
    report = Executor(api, Journal(journal), _opts()).apply(plan)
    assert report.status == "aborted" and "429" in report.message
    assert emulator.evictions == []
    assert emulator.refused and all(code == 429 for _, code in emulator.refused)
    assert emulator.cordon_patches[-1] == (plan.cordon[0], False)


def test_an_unexpected_answer_stops_at_once(world):
    server, emulator, api, plan, journal = world
    server.faults.append(lambda r: status_reply(500, "InternalError", "etcd leader changed")
                         if r.path.endswith("/eviction") else None)
    report = Executor(api, Journal(journal), _opts()).apply(plan)
    assert report.status == "aborted" and "etcd leader changed" in report.message
    assert emulator.evictions == [] and report.uncordoned == plan.cordon


def test_a_connection_reset_after_the_eviction_is_not_repeated(world):
    server, emulator, api, plan, journal = world
    state = {"reset": True}

    def reset_after_evicting(request):
        if request.path.endswith("/eviction") and state["reset"]:
            state["reset"] = False
            ns, name = request.path.split("/")[4], request.path.split("/")[6]
            emulator._evict(server, request, ns, name)  # the server did it...
            raise ConnectionResetError("peer reset")  # ...but the answer never arrives
        return None

    server.faults.append(reset_after_evicting)
    report = Executor(api, Journal(journal), _opts()).apply(plan)
    assert report.status == "completed", report.message
    _assert_only_planned(emulator, plan)
    assert len(emulator.evictions) == 3


def test_a_timeout_without_eviction_is_retried(world):
    import time

    server, emulator, api, plan, journal = world
    slow = {"left": 1}

    def stall(request):
        if request.path.endswith("/eviction") and slow["left"]:
            slow["left"] -= 1
            time.sleep(2.5)  # longer than the client's 2 s read timeout; nothing is evicted
            return status_reply(504, "Timeout", "too slow")
        return None

    server.faults.append(stall)
    report = Executor(api, Journal(journal), _opts(eviction_deadline_s=10.0)).apply(plan)
    assert report.status == "completed", report.message
    _assert_only_planned(emulator, plan)


class CrashingApi:
    """The real API, but the process dies right after the n-th eviction reached the server."""

    def __init__(self, api, after: int) -> None:
        self.api, self.after, self.count = api, after, 0

    def __getattr__(self, name):
        return getattr(self.api, name)

    def evict(self, namespace, name):
        self.api.evict(namespace, name)
        self.count += 1
        if self.count == self.after:
            raise SimulatedCrash()


@pytest.mark.parametrize("crash_after", [1, 2])
def test_resume_after_a_crash_finishes_the_plan_exactly_once(world, crash_after):
    server, emulator, api, plan, journal = world
    with pytest.raises(SimulatedCrash):
        Executor(CrashingApi(api, crash_after), Journal(journal), _opts()).apply(plan)
    assert len(emulator.evictions) == crash_after
    assert emulator.state().node_by_name[plan.cordon[0]].spec.unschedulable  # the crash left it cordoned
    with pytest.raises(UsageError):
        Executor(api, Journal(journal), _opts()).apply(plan)  # a second apply must not start over
    report = Executor(api, Journal(journal), _opts()).resume()
    assert report.status == "completed", report.message
    assert [e.uid for e in emulator.evictions] == [m.uid for m in plan.moves]
    _assert_only_planned(emulator, plan)
    assert not emulator.state().node_by_name[plan.cordon[0]].spec.unschedulable
    again = Executor(api, Journal(journal), _opts()).resume()
    assert again.status == "completed" and "already finished" in again.message
    assert len(emulator.evictions) == 3


def test_max_moves_stops_between_steps(world):
    server, emulator, api, plan, journal = world
    report = Executor(api, Journal(journal), _opts(max_moves=2)).apply(plan)
    assert report.status == "stopped" and len(emulator.evictions) == 2
    assert report.uncordoned == plan.cordon


def test_a_cluster_that_changed_since_the_plan_is_not_touched(world):
    server, emulator, api, plan, journal = world
    first = plan.moves[0]
    ns, name = first.pod.split("/")
    from apiserver.wire import ObjectKey

    with server.lock:
        del server.store[ObjectKey("v1", "pods", ns, name)]
    report = Executor(api, Journal(journal), _opts()).apply(plan)
    assert report.status == "aborted" and "plan again" in report.message
    assert emulator.evictions == []


def test_gang_steps_evict_every_member_then_wait(tmp_path):
    objs = [gpu_node(f"n{i}", 4) for i in range(3)]
    gang = {"scheduling.x-k8s.io/pod-group": "ddp"}
    objs += [pod("ddp-0", "n0", 1, kind="Job", controller="ddp", labels=gang),
             pod("ddp-1", "n0", 1, kind="Job", controller="ddp", labels=gang),
             pod("f1", "n1", 2, controller="f1"), pod("f2", "n2", 2, controller="f2"),
             pod("want4", None, 4, kind="Job", controller="want4")]
    with FakeApiServer() as server:
        emulator = ClusterEmulator(server, lag=2)
        server.add_all(objs)
        emulator.reconcile()
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kc")))
        plan = plan_defrag(emulator.state(), Goal(kind="pod", pod="ml/want4"))
        assert plan.feasible
        report = Executor(api, Journal(tmp_path / "j"), _opts()).apply(plan)
        assert report.status == "completed", report.message
        _assert_only_planned(emulator, plan)
        gang_moves = [m for m in plan.moves if m.gang]
        if gang_moves:
            assert len({m.step for m in gang_moves}) == 1
