"""Crash injection at every step boundary, then `--resume`: the plan completes exactly once.

A boundary is before and after each cordon, eviction and uncordon the API server receives, each
pod list of the wait for replacements, and each journal write (a crash there leaves a torn half
line, as kill -9 mid-write does). The crash is a BaseException the executor does not catch, like
kill -9: no cleanup runs. Then a new executor resumes from the journal, and every promise holds:
every planned pod evicted exactly once, no other pod evicted, every node we cordoned uncordoned,
the admin's cordons (node "spare"; in one variant the plan's own source node) never touched.
Evicted pods terminate with a grace period and their replacements come up a poll later.
"""

from __future__ import annotations

import os

import pytest
from apiserver.wire import ObjectKey
from livecluster import options, start_world

from kubegpu.defrag.executor import Executor
from kubegpu.defrag.journal import Journal
from kubegpu.errors import UsageError


class SimulatedCrash(BaseException):
    pass


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch):
    """The crash simulated here is kill -9, which the page cache survives (unlike a power cut), so the
    journal's fsync decides nothing in these tests; it only waited on the disk, ~70 runs x 18 records."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


class Boundaries:
    def __init__(self, crash_at: int | None) -> None:
        self.crash_at = crash_at
        self.seen: list[str] = []

    def hit(self, name: str) -> bool:
        self.seen.append(name)
        return len(self.seen) == self.crash_at


class CrashingApi:
    def __init__(self, api, b: Boundaries) -> None:
        self.api, self.b = api, b

    def __getattr__(self, name):
        return getattr(self.api, name)

    def _around(self, name, fn, *args):
        if self.b.hit(f"before {name}"):
            raise SimulatedCrash(name)
        out = fn(*args)
        if self.b.hit(f"after {name}"):
            raise SimulatedCrash(name)
        return out

    def set_unschedulable(self, node, value):
        return self._around("uncordon" if not value else "cordon", self.api.set_unschedulable, node, value)

    def evict(self, ns, name):
        return self._around("evict", self.api.evict, ns, name)

    def list_pods(self, ns):
        if self.b.hit("during wait"):
            raise SimulatedCrash("wait")
        return self.api.list_pods(ns)


class CrashingJournal(Journal):
    def __init__(self, path, b: Boundaries) -> None:
        super().__init__(path)
        self.b = b

    def record(self, event, **fields):
        if self.b.hit(f"before journal {event}"):
            with open(self.path, "ab") as fh:  # half a record reaches the disk
                fh.write(b'{"event":"' + event.encode() + b'","at":"2026-')
            raise SimulatedCrash(event)
        super().record(event, **fields)
        if self.b.hit(f"after journal {event}"):
            raise SimulatedCrash(event)


def _admin_cordons_source(w):
    w.server.store[ObjectKey("v1", "nodes", "", w.plan.cordon[0])]["spec"]["unschedulable"] = True


def _crash_then_resume(tmp_path, plan, crash_at, variant, then: tuple[int, ...] = ()):
    """Apply with a crash at boundary `crash_at`, resume crashing at each of `then`, then resume cleanly."""
    server, w = start_world(tmp_path, lag=1, grace=1, plan=plan)
    try:
        if variant == "admin-cordoned-source":
            _admin_cordons_source(w)
        report = None
        for run, at in enumerate((crash_at, *then, None)):
            b = Boundaries(at)
            executor = Executor(CrashingApi(w.api, b), CrashingJournal(w.journal, b), options())
            try:
                report = executor.apply(w.plan) if run == 0 else executor.resume()
            except SimulatedCrash:
                continue
            except UsageError as err:  # the crash came before the plan record was whole: nothing happened
                assert "empty" in str(err) and w.emulator.evictions == [] and w.emulator.cordon_patches == []
                w.journal.unlink()
                report = Executor(w.api, Journal(w.journal), options()).apply(w.plan)
            break
        assert report is not None
        assert report.status == "finished", (crash_at, then, b.seen[-1:], report.message)
        assert w.evicted_uids() == [m.uid for m in w.plan.moves], (crash_at, then, b.seen[-1:])
        w.assert_only_planned_once()
        assert w.node_cordoned("spare") and all(n != "spare" for n, _ in w.emulator.cordon_patches)
        source = w.plan.cordon[0]
        if variant == "admin-cordoned-source":
            assert w.node_cordoned(source) and all(n != source for n, _ in w.emulator.cordon_patches)
        else:
            assert not w.node_cordoned(source), (crash_at, then, b.seen[-1:])
        records = Journal(w.journal).read()
        assert records[-1]["event"] == "finished" and w.journal.read_bytes().endswith(b"\n")
        return b.seen
    finally:
        server.stop()


@pytest.mark.parametrize("variant", ["plain", "admin-cordoned-source"])
def test_a_crash_at_every_boundary_then_resume_completes_the_plan_exactly_once(tmp_path, variant):
    _, probe = start_world(tmp_path / "probe")
    probe.server.stop()
    plan = probe.plan
    seen = _crash_then_resume(tmp_path / "full", plan, None, variant)  # how many boundaries a clean run has
    kinds = {s.split(" ", 1)[1] if " " in s else s for s in seen}
    assert {"cordon", "evict", "wait", "journal evict-request", "journal step-done"} <= kinds or variant != "plain"
    # every boundary; with the admin's cordon (no cordon boundaries of ours) every other one suffices
    for k in range(1, len(seen) + 1, 1 if variant == "plain" else 2):
        _crash_then_resume(tmp_path / str(k), plan, k, variant)


def test_crashes_again_while_resuming(tmp_path):
    """Resume is itself interrupted, once or twice, at boundaries drawn with a fixed seed."""
    import random

    _, probe = start_world(tmp_path / "probe")
    probe.server.stop()
    total = len(_crash_then_resume(tmp_path / "full", probe.plan, None, "plain"))
    rng = random.Random(20261202)
    for i in range(8):
        first = rng.randint(1, total)
        again = tuple(rng.randint(1, total // 2) for _ in range(rng.randint(1, 2)))
        _crash_then_resume(tmp_path / f"run{i}", probe.plan, first, "plain", again)
