"""What the cluster itself recorded (PodScheduled condition, else the newest FailedScheduling
event) and whether kubegpu's own event text matches it exactly."""

from sched_builders import cluster, node, obj, pod

from kubegpu.explain import explain_pod
from kubegpu.explain.report import observed_message
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion

V = KubeVersion.parse("1.36.3")
EXPECTED = ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def _event(name, message, when, reason="FailedScheduling"):
    return obj("Event", name, "default", reason=reason, message=message, type="Warning", lastTimestamp=when,
               involvedObject={"kind": "Pod", "namespace": "default", "name": "p"})


def _state(*extra, condition=None):
    p = pod("p", gpus=4)
    if condition is not None:
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": condition}]
    return cluster(node("a", gpus=2), node("b", gpus=2), p, *extra)


def _report(st):
    return explain_pod(SchedulingSnapshot.from_cluster(st), st.pod("default", "p"), version=V)


def test_condition_wins_over_events():
    st = _state(_event("e1", "old text", "2026-11-30T10:00:00Z"), condition=EXPECTED)
    assert observed_message(st, st.pod("default", "p")) == EXPECTED


def test_newest_failedscheduling_event_when_no_condition_message():
    st = _state(_event("e1", "older", "2026-11-30T10:00:00Z"), _event("e2", "newer", "2026-11-30T11:00:00Z"),
                _event("e3", "not a scheduling event", "2026-11-30T12:00:00Z", reason="BackOff"))
    assert observed_message(st, st.pod("default", "p")) == "newer"


def test_nothing_recorded_is_none():
    st = _state()
    assert observed_message(st, st.pod("default", "p")) is None
    r = _report(st)
    assert r.observed_message is None and r.matches_observed is None


def test_matches_observed_when_the_cluster_wrote_the_same_text():
    r = _report(_state(condition=EXPECTED))
    assert r.message == EXPECTED and r.matches_observed is True
    assert r.observed.total_nodes == 2 and r.observed.reasons[0].reason == "Insufficient nvidia.com/gpu"


def test_does_not_match_when_the_cluster_wrote_other_text():
    r = _report(_state(condition=EXPECTED.replace("2 Insufficient", "1 Insufficient")))
    assert r.matches_observed is False and r.observed_message != r.message
