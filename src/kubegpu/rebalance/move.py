"""Carry out one plan: reserve every destination, then let the defrag executor cordon and evict.

  1. the plan record opens a new journal (the defrag journal, same format and checks);
  2. a placeholder pod per move (reservation.py), journaled `reserve-request` before the create and
     `reserved` once it is bound on its destination; one that is not placed within the reserve
     timeout (or vanishes) is `reserve-failed`: every placeholder is deleted and nothing is evicted;
  3. the executor continues the journal (`resumed`): cordon the sources, then per step re-check
     every rule on the live pods (the one gate) and evict through the Eviction API. Before each
     step our hook checks that the step's reservations still hold and have not outlived their TTL,
     that the Lease is still ours (loop mode), and records an Event on each pod about to move;
  4. on every way out, placeholders still there are deleted (`release-request` -> `released`),
     with ^C/SIGTERM deferred until that is done.
A move whose replacement runs on one of the plan's reserved nodes is `moved` (placeholders are one pool: see
`unheld`), elsewhere `elsewhere`, without a
running replacement within the TTL `failed`, never evicted `not-run`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from kubegpu.defrag.api import ApiFailure, EvictionRefused, NoAnswer
from kubegpu.defrag.evictability import EvictionPolicy
from kubegpu.defrag.executor import ExecutionReport, Executor, ExecutorOptions, Stop
from kubegpu.defrag.journal import Journal, JournalWriteError
from kubegpu.defrag.plan import Move, Plan
from kubegpu.defrag.signals import SignalGuard, Terminated
from kubegpu.model.cluster import ClusterState
from kubegpu.model.quantity import resource_amount
from kubegpu.rebalance.api import micro_time
from kubegpu.rebalance.leader import LeaderElector, LeadershipLost
from kubegpu.rebalance.metrics import RebalanceMetrics
from kubegpu.rebalance.reservation import Owner, Reservation, placed_on, placeholder_body, plan_reservation
from kubegpu.rebalance.round import PlanEntry

TRANSIENT = (EvictionRefused, NoAnswer, ApiFailure)
REPORTING_CONTROLLER = "kubegpu.io/rebalance"


class ReserveFailed(Exception):
    """A placeholder could not hold its destination: nothing is evicted."""


@dataclass
class MoveContext:
    api: object                          # RebalanceApi
    executor: ExecutorOptions
    policy: EvictionPolicy = field(default_factory=EvictionPolicy)
    namespace: str = "kubegpu"           # where placeholders live
    ttl_s: float = 300.0
    reserve_timeout_s: float = 60.0
    owner: Owner | None = None
    identity: str = "kubegpu-rebalance"
    elector: LeaderElector | None = None
    metrics: RebalanceMetrics = field(default_factory=RebalanceMetrics)
    now: Callable[[], datetime] = lambda: datetime.now()


class PlanRun:
    """One plan of a round, from its reservations to their release."""

    def __init__(self, ctx: MoveContext, plan: Plan, journal: Journal, run_id: str) -> None:
        self.ctx = ctx
        self.plan = plan
        self.journal = journal
        self.run_id = run_id
        self.reservations: dict[str, Reservation] = {}   # moved pod uid -> its reservation
        self.held: set[str] = set()                        # placeholder names that may exist
        self._signals = SignalGuard()
        self.signal: int | None = None   # a signal held back while cleaning up: the round stops after this plan

    # ------------------------------------------------------------------ entry points
    def start(self, state: ClusterState, entry: PlanEntry) -> ExecutionReport | None:
        """A new run of the plan; None when it stopped before the executor (entry says why)."""
        executor = self._executor()
        executor.check_new(self.plan)
        identity = self.ctx.api.identity()
        self.journal.start(self.plan, identity, self.ctx.policy.to_builtins())
        return self._reserve_and_run(state, self.plan.moves, executor, entry)

    def resume(self, state: ClusterState, entry: PlanEntry, evicted: set[str]) -> ExecutionReport | None:
        """Continue a journal a previous leader left unfinished: hold the moves not yet evicted again."""
        todo = [m for m in self.plan.moves if m.uid not in evicted]
        return self._reserve_and_run(state, todo, self._executor(), entry)

    # ------------------------------------------------------------------ the run
    def _executor(self) -> Executor:
        opt = self.ctx.executor
        sleep = self.ctx.elector.sleeping(opt.sleep) if self.ctx.elector is not None else opt.sleep
        opts = dataclasses.replace(opt, before_step=self._before_step, sleep=sleep,
                                   replacement_timeout_s=self.ctx.ttl_s)
        return Executor(self.ctx.api, self.journal, opts, self.ctx.policy)

    def _reserve_and_run(self, state: ClusterState, moves: list[Move], executor: Executor,
                         entry: PlanEntry) -> ExecutionReport | None:
        now = self.ctx.now()
        for m in moves:
            self.reservations[m.uid] = plan_reservation(state, m, run_id=self.run_id, namespace=self.ctx.namespace,
                                                        now=now, ttl_s=self.ctx.ttl_s)
        entry.reservations = [r.to_builtins() for r in self.reservations.values()]
        report = None
        try:
            with self._signals.running():
                try:
                    self._reserve(state, moves)
                except ReserveFailed as err:
                    entry.status, entry.reason = "failed", f"{err}; nothing was evicted"
                    self._finish("aborted", entry.reason)
                except (KeyboardInterrupt, Terminated, LeadershipLost, JournalWriteError, *TRANSIENT) as err:
                    entry.status = "stopped"
                    entry.reason = _why(err) + " while reserving; nothing was evicted"
                    self._finish("stopped", entry.reason)
                    if isinstance(err, (KeyboardInterrupt, Terminated)):
                        raise
            if entry.status == "planned":
                report = executor.resume()
        finally:
            self._release_all()
        noted = self._signals.pending or executor.signal_noted
        self.signal = (report.signal if report is not None and report.signal else None) or noted
        return report

    def _finish(self, status: str, message: str) -> None:
        try:
            self.journal.record("finished", status=status, message=message, resumable=False)
        except JournalWriteError:
            pass

    def _reserve(self, state: ClusterState, moves: list[Move]) -> None:
        ctx = self.ctx
        if ctx.elector is not None:
            ctx.elector.hold()
        for m in moves:
            res = self.reservations[m.uid]
            ns, _, name = m.pod.partition("/")
            body = placeholder_body(res, state.pod(ns, name), run_id=self.run_id, owner=ctx.owner)
            self.journal.record("reserve-request", name=res.name, node=res.node, pod=m.pod, uid=m.uid,
                                expires_at=micro_time(res.expires_at))
            self.held.add(res.name)
            ctx.api.create_pod(body)
            ctx.metrics.reservations_held = len(self.held)
        waiting = {self.reservations[m.uid].name: self.reservations[m.uid] for m in moves}
        deadline = ctx.executor.clock() + ctx.reserve_timeout_s
        sleep = ctx.elector.sleeping(ctx.executor.sleep) if ctx.elector is not None else ctx.executor.sleep
        while True:
            for name, res in list(waiting.items()):
                body = ctx.api.read_pod(res.namespace, name)
                if body is None or (body.get("metadata") or {}).get("deletionTimestamp"):
                    self._reserve_failed(res, "deleted before it was placed")
                node = placed_on(body)
                if node is not None and node != res.node:
                    self._reserve_failed(res, f"bound to {node}, not {res.node}")
                if node == res.node:
                    self.journal.record("reserved", name=name, node=node)
                    del waiting[name]
            if not waiting:
                return
            if ctx.executor.clock() >= deadline:
                res = next(iter(waiting.values()))
                self._reserve_failed(res, f"not placed within {ctx.reserve_timeout_s:g} s ({_unschedulable(body)})")
            sleep(ctx.executor.poll_s)

    def _reserve_failed(self, res: Reservation, why: str) -> None:
        reason = f"placeholder {res.namespace}/{res.name} for {res.pod} on {res.node}: {why}"
        self.journal.record("reserve-failed", name=res.name, reason=reason)
        raise ReserveFailed(reason)

    # ------------------------------------------------------------------ before each step
    def _before_step(self, todo: list[Move]) -> None:
        ctx = self.ctx
        if ctx.elector is not None:
            ctx.elector.hold()
        now = ctx.now()
        for m in todo:
            res = self.reservations.get(m.uid)
            if res is None:
                raise Stop(f"no reservation for {m.pod}: not evicted")
            if now >= res.expires_at:
                raise Stop(f"reservation {res.name} for {m.pod} on {res.node} outlived its TTL "
                           f"({ctx.ttl_s:g} s) before the move: counted failed")
        live = {res.name: res for res in self.reservations.values()
                if res.name in self.held and placed_on(ctx.api.read_pod(res.namespace, res.name)) == res.node}
        ahead = [m for m in self.plan.moves if m.step >= todo[0].step and m.uid in self.reservations]
        missing = unheld(ahead, self.reservations, live)
        if missing:
            raise Stop(f"the room for {', '.join(missing)} is no longer held (a placeholder was taken by another "
                       "pod or deleted); not evicted")
        for m in todo:
            self._event(m)

    def _event(self, move: Move) -> None:
        """An events.k8s.io/v1 Event on the pod about to move (best effort: a refusal is only counted)."""
        ns, _, name = move.pod.partition("/")
        res = self.reservations[move.uid]
        now = self.ctx.now()
        body = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": f"{name}.{int(now.timestamp() * 1e9):x}", "namespace": ns},
                "eventTime": micro_time(now), "reportingController": REPORTING_CONTROLLER,
                "reportingInstance": self.ctx.identity[:128], "action": "Evicting", "reason": "Rebalancing",
                "type": "Normal", "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name,
                                                "uid": move.uid},
                "note": (f"kubegpu rebalance moves this pod from {move.from_} to {move.to} (held by placeholder "
                         f"{res.namespace}/{res.name}) to make room; evicting through the Eviction API")[:1024]}
        try:
            self.ctx.api.create_event(body)
        except TRANSIENT:
            self.ctx.metrics.events_failed += 1

    # ------------------------------------------------------------------ release
    def _release_all(self) -> None:
        """Delete every placeholder this run may have made; ^C and SIGTERM wait until it is done."""
        with self._signals.deferred():
            for name in sorted(self.held):
                try:
                    self.journal.record("release-request", name=name)
                except JournalWriteError:
                    pass
                try:
                    self._delete(name)
                except TRANSIENT:
                    continue  # kept in `held`: the next round's leftover sweep deletes it
                self.held.discard(name)
                try:
                    self.journal.record("released", name=name)
                except JournalWriteError:
                    pass
            self.ctx.metrics.reservations_held = len(self.held)

    def _delete(self, name: str) -> None:
        for attempt in range(3):
            try:
                self.ctx.api.delete_pod(self.ctx.namespace, name)
                return
            except NoAnswer:
                if attempt == 2:
                    raise


def unheld(moves: list[Move], reservations: dict[str, Reservation], live: dict[str, Reservation]) -> list[str]:
    """The moves (pods) no live placeholder holds room for.

    The plan's placeholders are one pool: kube-scheduler preempts whichever placeholder its
    tie-breaks pick (pickOneNodeForPreemption prefers the latest-started victim), so a replacement
    may take another move's placeholder and leave its own. A move is held by its own placeholder,
    else by any unclaimed live one whose requests cover its own."""
    free = dict(live)
    missing = []
    for m in moves:
        own = reservations[m.uid]
        if own.name in free:
            del free[own.name]
            continue
        swap = next((r for r in free.values() if _covers(r.requests, own.requests)), None)
        if swap is None:
            missing.append(m.pod)
        else:
            del free[swap.name]
    return missing


def _covers(have: dict[str, str], need: dict[str, str]) -> bool:
    return all(resource_amount(r, have.get(r, "0")) >= resource_amount(r, q) for r, q in need.items())


def _unschedulable(body: dict | None) -> str:
    for cond in ((body or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return cond.get("message") or cond.get("reason") or "unschedulable"
    return "still Pending"


def _why(err: BaseException) -> str:
    if isinstance(err, KeyboardInterrupt):
        return "interrupted (SIGINT)"
    if isinstance(err, Terminated):
        return "terminated (SIGTERM)"
    return str(err) or type(err).__name__


def outcomes(entry: PlanEntry, plan: Plan, report: ExecutionReport | None) -> None:
    """Fill each move's outcome from the executor's report."""
    replaced = report.replacements if report is not None else {}
    evicted = set(report.evicted) if report is not None else set()
    reserved = {m.to for m in plan.moves}   # one pool: any of the plan's held destinations is a planned place
    for mo, m in zip(entry.moves, plan.moves):
        where = replaced.get(m.pod)
        if where is not None:
            mo.replacement = where
            mo.outcome = "moved" if where.rsplit("@", 1)[-1] in reserved else "elsewhere"
        elif m.pod in evicted:
            mo.outcome = "failed"
        else:
            mo.outcome = "not-run"
    if report is not None and entry.status == "planned":
        entry.status = {"finished": "done", "aborted": "failed"}.get(report.status, "stopped")
        entry.reason = report.message


def journal_path(directory: Path, run_id: str, index: int) -> Path:
    return directory / f"rebalance-{run_id}-{index}.jsonl"
