"""`kubegpu extender --events`: an events.k8s.io/v1 Event on the pod points at its decision record.

Posted to the test API server's strict events.k8s.io/v1 create validation (tests/apiserver/scheduler.py,
live-scheduling-facts.md section 5), off the request path, rate-limited, dropped and counted when the
queue is full.
"""

from __future__ import annotations

import threading
import time
from functools import partial

import msgspec
import pytest
from clusters import gpu_rules_docs
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from apiserver.eviction import ClusterEmulator
from apiserver.scheduler import SchedulerEmulator
from kubegpu.cli.main import cli
from kubegpu.extender.events import (NOTE_LIMIT, REASON, REPORTING_CONTROLLER, EventPoster, cut_note,
                                     lightkube_post)
from kubegpu.extender.ledger import Decision, Ledger, PodRef
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.service import Extender
from kubegpu.extender.state import ExtenderStore
from kubegpu.web.watch import LiveCache, LiveRefresher


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def events_server(apiserver):
    sched = SchedulerEmulator(apiserver, ClusterEmulator(apiserver))
    sched.enabled = False       # nothing is scheduled behind the extender's back
    return apiserver, sched


def record(outcome="scored", mode="extender-prioritize", error=None, name="train-0") -> Decision:
    return Decision(id="abc-7", time="2026-12-04T10:00:00.000Z", mode=mode, outcome=outcome, error=error,
                    pod=PodRef(namespace="ml", name=name, uid="uid-1"))


def test_live_extender_posts_an_event_naming_the_record(events_server, tmp_path):
    server, sched = events_server
    docs = gpu_rules_docs()
    for doc in docs:
        server.add(doc)
    kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
    store = ExtenderStore(policy="fgd", live=True, stale_after=30.0)
    refresher = LiveRefresher(store, partial(LiveCache, kubeconfig, None), relist_every=3600, debounce=0.1,
                              max_backoff=1.0)
    refresher.start()
    try:
        wait_for(lambda: store.model is not None)
        book = Ledger(str(tmp_path / "decisions.ndjson"))
        metrics = ExtenderMetrics(store, book)
        poster = EventPoster(lightkube_post(kubeconfig, None), ledger_path=book.path and str(book.path))
        book.listeners.append(poster.offer)
        metrics.count_events(poster.counts)
        ext = Extender(store, book, metrics, max_work_lost=8.0)
        pod = next(d for d in docs if d["metadata"]["name"] == "eight-0")
        names = [d["metadata"]["name"] for d in docs if d["kind"] == "Node"]
        ext.filter(msgspec.json.encode({"Pod": pod, "NodeNames": names}))       # passes nodes: no event
        ext.prioritize(msgspec.json.encode({"Pod": pod, "NodeNames": names}))
        wait_for(lambda: poster.counts.posted == 1)
        poster.close()
    finally:
        refresher.close()
    (event,) = sched.events
    rec = book.recent("ml/eight-0")[-1]
    assert rec.mode == "extender-prioritize"
    assert event["reason"] == REASON and event["type"] == "Normal" and event["action"] == "Prioritize"
    assert event["reportingController"] == REPORTING_CONTROLLER
    assert {k: event["regarding"].get(k) for k in ("apiVersion", "kind", "namespace", "name", "uid")} == {
        "apiVersion": "v1", "kind": "Pod", "namespace": "ml", "name": "eight-0", "uid": rec.pod.uid}
    assert f"record {rec.id}" in event["note"] and "a100-2" in event["note"]
    assert str(tmp_path / "decisions.ndjson") in event["note"]
    assert event["metadata"]["namespace"] == "ml" and event["metadata"]["name"].startswith("eight-0.")
    assert poster.counts.dropped == poster.counts.failed == 0
    text = metrics.render("text/plain")[0].decode()
    assert 'kubegpu_extender_events_total{result="posted"} 1.0' in text


def test_a_long_reason_is_cut_to_the_note_limit_and_still_accepted(events_server, tmp_path):
    server, sched = events_server
    poster = EventPoster(lightkube_post(str(server.kubeconfig(tmp_path / "kubeconfig")), None))
    poster.offer(record(outcome="error", mode="extender-filter", error="x" * 5000))
    poster.close()
    assert poster.counts.posted == 1, poster.counts
    (event,) = sched.events
    assert event["type"] == "Warning" and len(event["note"].encode()) == NOTE_LIMIT
    assert event["note"].endswith(" ...") and "record abc-7" in event["note"]


def test_a_full_queue_drops_and_counts_without_blocking_the_caller():
    gate = threading.Event()
    posted: list[dict] = []

    def slow_post(namespace, body):
        gate.wait(10)
        posted.append(body)

    poster = EventPoster(slow_post, queue_size=3, qps=1000, burst=1000)
    t0 = time.perf_counter()
    for k in range(20):
        poster.offer(record(name=f"p-{k}"))
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5
    # three queued, the rest dropped (one more fits if the thread took the first off the queue in time)
    wait_for(lambda: poster.counts.offered == 20)
    assert poster.counts.dropped == 20 - 3 - 1 or poster.counts.dropped == 20 - 3, poster.counts
    gate.set()
    poster.close()
    assert poster.counts.posted == len(posted) == 20 - poster.counts.dropped


def test_posting_is_rate_limited():
    times: list[float] = []
    poster = EventPoster(lambda ns, body: times.append(time.monotonic()), qps=20, burst=1)
    for k in range(6):
        poster.offer(record(name=f"p-{k}"))
    poster.close()
    assert len(times) == 6
    assert times[-1] - times[0] >= 5 / 20 * 0.9


def test_records_that_get_no_event():
    calls: list = []
    poster = EventPoster(lambda ns, body: calls.append(body))
    poster.offer(record(outcome="passed", mode="extender-filter"))       # the prioritize record follows
    poster.offer(record(outcome="kept-all", mode="extender-preempt"))
    poster.close()
    assert calls == [] and poster.counts.offered == 0


def test_events_flag_needs_the_live_source():
    result = CliRunner().invoke(cli, ["extender", "--demo", "--events"])
    assert result.exit_code == 2 and "--events posts to a live cluster" in result.output
    assert "Traceback" not in result.output


@given(st.one_of(st.text(max_size=100), st.text(min_size=1000, max_size=3000)))
def test_a_note_never_passes_the_limit_and_short_ones_are_kept(text):
    out = cut_note(text)
    assert len(out.encode()) <= NOTE_LIMIT
    if len(text.encode()) <= NOTE_LIMIT:
        assert out == text
    else:
        assert out.endswith(" ...") and text.startswith(out[:-4])
