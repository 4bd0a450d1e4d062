"""Carry out a defrag plan without losing work: the one safety gate for every plan.

Order of business (DESIGN section 7, descheduler#994 for the cordon):
  1. cordon every node a move leaves, so replacements cannot land back on it (a node found
     cordoned is the admin's: recorded, never touched);
  2. per step (one pod, or a whole gang): right before each eviction re-read the live pods and
     re-apply every safety rule (gate.py), evict through the Eviction API (--rate apart), then wait
     until every evicted pod is gone and its replacement runs before the next step;
  3. uncordon what we cordoned, on every way out (finished, stopped, aborted, ^C, SIGTERM, a full
     disk): undo first, journal after, and report what could not be journaled.
Every mutation is journaled as an intent before it is sent and as an outcome after (journal.py),
so `resume` reconciles a crash with the live cluster and never sends an eviction twice.
Final states: finished; stopped (resumable: --max-moves, --max-cost, a 429 budget, a transient
error, a signal, the journal unwritable, a replacement late); aborted (the plan no longer holds).
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from kubegpu.defrag.api import ApiFailure, ClusterApi, EvictionRefused, NoAnswer
from kubegpu.defrag.cost import move_cost
from kubegpu.defrag.evictability import EvictionPolicy
from kubegpu.defrag.gate import GateVerdict, beneficiaries, beneficiary_priority, check_step, live_state
from kubegpu.defrag.identity import ClusterIdentity, mismatch
from kubegpu.defrag.journal import Journal, JournalState, JournalWriteError, plan_hash
from kubegpu.defrag.plan import Move, Plan
from kubegpu.defrag.reconcile import reconcile
from kubegpu.defrag.replacements import match_replacements
from kubegpu.defrag.signals import SignalGuard, Terminated
from kubegpu.errors import InputError, SourceError, UsageError
from kubegpu.model.cluster import ClusterState
from kubegpu.model.text import counted


class Abort(Exception):
    """The plan no longer holds: undo and stop for good (plan again)."""


class Stop(Exception):
    """Stop here; `--resume` continues from this point."""


TRANSIENT = (EvictionRefused, NoAnswer, ApiFailure)


@dataclass
class ExecutorOptions:
    rate_per_minute: float | None = None      # evictions per minute, spaced evenly
    max_moves: int | None = None              # pods evicted by this run (resume: by that run)
    max_cost_gpu_hours: float | None = None   # GPU-hours of work lost by this run, priced on the live pods
    eviction_deadline_s: float = 120.0        # like cluster-autoscaler's --max-pod-eviction-time 2m
    replacement_timeout_s: float = 600.0
    poll_s: float = 2.0
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    # called before a step's first eviction (before the gate); may raise Stop or Abort (rebalance:
    # the step's reservations must still hold, the Lease must still be ours)
    before_step: Callable[[list[Move]], None] | None = None


@dataclass
class ExecutionReport:
    status: str                                   # finished | stopped | aborted
    message: str
    resumable: bool = False
    steps_done: list[int] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)            # pod keys evicted by this run
    replacements: dict[str, str] = field(default_factory=dict)  # evicted pod -> "ns/new-name@node"
    deviations: list[str] = field(default_factory=list)         # replacements that landed elsewhere than planned
    uncordoned: list[str] = field(default_factory=list)
    left_cordoned: list[str] = field(default_factory=list)      # ours, but the API refused to uncordon
    unrecorded: list[str] = field(default_factory=list)         # journal records that could not be written
    cost_gpu_hours: float = 0.0
    signal: int | None = None
    journal: str = ""


class Executor:
    def __init__(self, api: ClusterApi, journal: Journal, options: ExecutorOptions | None = None,
                 policy: EvictionPolicy | None = None) -> None:
        self.api = api
        self.journal = journal
        self.opt = options or ExecutorOptions()
        self.policy = policy or EvictionPolicy()
        self._last_eviction: float | None = None
        self._ours: list[str] = []
        self._cluster_objects: list[dict] | None = None
        self._signals = SignalGuard()

    @property
    def signal_noted(self) -> int | None:
        """A ^C/SIGTERM that arrived while the cordons were being undone (held back, not raised)."""
        return self._signals.pending

    # ------------------------------------------------------------------ entry points
    def apply(self, plan: Plan) -> ExecutionReport:
        """Start a new run of `plan` (the journal must not exist yet)."""
        self.check_new(plan)
        identity = self._identity()
        self._begin(lambda: self.journal.start(plan, identity, self.policy.to_builtins()))
        with self.journal.lock():
            return self._run(self.journal.state())

    def check_new(self, plan: Plan) -> None:
        """Refuse before anything starts (and before a confirmation prompt): a used journal, a plan without moves."""
        if self.journal.exists():
            try:
                same = self.journal.state().plan_hash == plan_hash(plan)
            except InputError:
                same = False
            if same:
                raise UsageError(f"journal {self.journal.path} already exists: use --resume {self.journal.path}")
            raise UsageError(f"journal {self.journal.path} exists and belongs to another plan: choose another "
                             "--journal")
        if not plan.feasible:
            raise UsageError("the plan is not feasible; nothing to apply")

    def resume(self) -> ExecutionReport:
        """Continue the run a journal records: reconcile its intents with the live cluster, then go on."""
        with self.journal.lock():
            return self._resume()

    def _resume(self) -> ExecutionReport:
        st = self.journal.state()  # first: a file that is not a journal is refused, never cut
        if st.plan is None or st.cluster is None:
            raise UsageError(f"journal {self.journal.path} is empty: nothing to resume")
        self.journal.repair()
        live = self._identity()
        why = mismatch(st.cluster, live)
        if why is not None:
            raise UsageError(f"journal {self.journal.path} belongs to another cluster ({st.cluster.describe()}): "
                             f"{why}; resume it with that cluster's --context")
        self.policy = EvictionPolicy.from_builtins(st.policy)
        prev = st.finished
        if prev is not None and prev["status"] != "stopped":
            return self._closed(st, prev)
        self._begin(lambda: self.journal.record("resumed", cluster=live.to_builtins()))
        return self._run(st)

    def _identity(self) -> ClusterIdentity:
        """Which cluster this is; before anything is changed, so a failure is a plain one-line error."""
        try:
            return self._retrying(self.api.identity)
        except TRANSIENT as err:
            raise SourceError(f"cannot read the cluster's identity (namespace kube-system): {err}") from None

    def _begin(self, write: Callable[[], None]) -> None:
        """The first record of a run: nothing is touched when it cannot be written."""
        try:
            write()
        except JournalWriteError as err:
            raise InputError(f"{err}; nothing was changed") from None

    def _closed(self, st: JournalState, prev: dict) -> ExecutionReport:
        """A journal that finished or was aborted: only an undo that failed back then is left to do."""
        report = ExecutionReport(status=prev["status"], message="", steps_done=sorted(st.steps_done),
                                 journal=str(self.journal.path))
        if st.cordoned or st.cordon_requested:
            self._begin(lambda: self.journal.record("resumed", cluster=self._identity().to_builtins()))
            with self._signals.running():
                try:
                    self._reconcile(st)
                except (JournalWriteError, *TRANSIENT):
                    pass
                self._ours = list(st.cordoned) + [n for n in st.cordon_requested if n not in st.cordoned]
                self._undo(report)
            self._note(report, "finished", status=prev["status"], message=prev["message"], resumable=False)
        word = "already finished" if prev["status"] == "finished" else "was aborted"
        report.message = f"{word}: {prev['message']}" + ("" if prev["status"] == "finished" else "; plan again")
        return report

    # ------------------------------------------------------------------ the run
    def _run(self, st: JournalState) -> ExecutionReport:
        plan = st.plan
        assert plan is not None
        report = ExecutionReport(status="finished", message="", steps_done=sorted(st.steps_done),
                                 journal=str(self.journal.path))
        self._ours = list(st.cordoned)
        crash: BaseException | None = None
        with self._signals.running():
            try:
                self._reconcile(st)
                self._cordon(plan, st)
                for step in plan.steps:
                    if step[0].step not in st.steps_done:
                        self._step(step, st, report)
                        report.steps_done.append(step[0].step)
                report.message = f"{counted(len(plan.moves), 'move')} done in {counted(len(plan.steps), 'step')}"
            except Abort as err:
                report.status, report.message = "aborted", str(err)
            except Stop as err:
                report.status, report.message, report.resumable = "stopped", str(err), True
            except JournalWriteError as err:
                report.status, report.resumable = "stopped", True
                report.message = f"{err}: stopped before the next change"
            except TRANSIENT as err:
                report.status, report.resumable = "stopped", True
                report.message = f"the API server answered {err}"
            except KeyboardInterrupt:
                report.status, report.resumable, report.signal = "stopped", True, signal.SIGINT
                report.message = "interrupted (SIGINT)"
            except Terminated:
                report.status, report.resumable, report.signal = "stopped", True, signal.SIGTERM
                report.message = "terminated (SIGTERM)"
            except Exception as err:  # a bug: still leave the nodes as we found them, then fail loudly
                report.status, report.message = "aborted", f"internal error {type(err).__name__}: {err}"
                crash = err
            self._undo(report)
        self._note(report, "finished", status=report.status, message=report.message, resumable=report.resumable)
        if crash is not None:
            raise crash
        return report

    def _note(self, report: ExecutionReport, event: str, **fields) -> None:
        """Journal an outcome; when the journal cannot take it, keep it for the report instead."""
        try:
            self.journal.record(event, **fields)
        except JournalWriteError:
            detail = ", ".join(f"{k}={v}" for k, v in fields.items() if k in ("node", "pod", "status"))
            report.unrecorded.append(f"{event} {detail}".strip())

    def _reconcile(self, st: JournalState) -> None:
        reconcile(self.api, self.journal, st, lambda ns, name: self._retrying(lambda: self.api.get_pod(ns, name)))
        self._ours = list(st.cordoned)

    def _cordon(self, plan: Plan, st: JournalState) -> None:
        for node in plan.cordon:
            if node in self._ours:
                continue
            if self.api.node_unschedulable(node):
                if node not in st.admin_cordoned:
                    self.journal.record("already-cordoned", node=node)  # the admin's: never touched
                    st.admin_cordoned.add(node)
                continue
            self.journal.record("cordon-request", node=node, prior_unschedulable=False)
            self._ours.append(node)  # from here on the undo covers it, even if the answer is lost
            self.api.set_unschedulable(node, True)
            self.journal.record("cordoned", node=node)

    def _undo(self, report: ExecutionReport) -> None:
        """Uncordon every node we cordoned; signals wait until this is done."""
        with self._signals.deferred():
            for node in list(self._ours):
                self._note(report, "uncordon-request", node=node)
                try:
                    self._retrying(lambda: self.api.set_unschedulable(node, False))
                except TRANSIENT as err:
                    if self._schedulable(node):  # our cordon never landed (or is gone): nothing to undo
                        self._ours.remove(node)
                        self._note(report, "uncordoned", node=node, note="found schedulable")
                        continue
                    report.left_cordoned.append(node)
                    self._note(report, "uncordon-failed", node=node, reason=str(err))
                    report.message += f"; could not uncordon {node} ({err}): run `kubectl uncordon {node}`"
                    continue
                self._ours.remove(node)
                report.uncordoned.append(node)
                self._note(report, "uncordoned", node=node)
        if report.unrecorded:
            report.message += f"; {len(report.unrecorded)} record(s) could not be journaled"

    def _schedulable(self, node: str) -> bool:
        try:
            return not self.api.node_unschedulable(node)
        except TRANSIENT:
            return False

    # ------------------------------------------------------------------ one step
    def _step(self, step: list[Move], st: JournalState, report: ExecutionReport) -> None:
        number = step[0].step
        todo = [m for m in step if m.uid not in st.evicted]  # a step begun before a crash: the rest of it
        if todo and self.opt.before_step is not None:
            self.opt.before_step(todo)
        for i, move in enumerate(todo):
            self._respect_rate()
            verdict, live = self._gate(step, st)  # right before each eviction, after any pause
            if i == 0:
                self._check_limits(number, todo, verdict, live, report)
            pod = verdict.pods[move.uid]
            ctrl = pod.controller
            siblings = [p.metadata.uid for p in live.pods if ctrl is not None and p.controller is not None
                        and p.controller.uid == ctrl.uid]
            rec = dict(uid=move.uid, pod=move.pod, node=move.from_, step=number, siblings=siblings,
                       owner_uid=ctrl.uid if ctrl else None, owner=f"{ctrl.kind}/{ctrl.name}" if ctrl else None)
            self.journal.record("evict-request", **rec)
            st.requested[move.uid] = rec
            self._evict(move)
            st.evicted.add(move.uid)
            report.evicted.append(move.pod)
        placed = self._wait(step, st)
        pods = []
        for move in step:
            new, node = placed[move.uid]
            report.replacements[move.pod] = f"{new}@{node}"
            if node != move.to:
                report.deviations.append(f"{move.pod}: replacement {new} runs on {node}, planned {move.to}")
            pods.append({"pod": move.pod, "replacement": new, "node": node})
        self.journal.record("step-done", step=number, pods=pods)
        st.steps_done[number] = {"pods": pods}

    def _gate(self, step: list[Move], st: JournalState) -> tuple[GateVerdict, ClusterState]:
        """Every safety rule on the live pods; a budget that says "not now" is waited for, then a stop."""
        assert st.plan is not None
        wanted = beneficiaries(st.plan)
        namespaces = sorted({m.pod.partition("/")[0] for m in step} | {k.partition("/")[0] for k in wanted})
        deadline = self.opt.clock() + self.opt.eviction_deadline_s
        wait = self.opt.backoff_s
        while True:
            live = self._live(namespaces)
            priority = beneficiary_priority(live, wanted)
            if wanted and priority is None:
                raise Abort(f"the pod(s) the plan makes room for ({', '.join(wanted)}) are gone; nothing left to do")
            verdict = check_step(live, step, evicted=st.evicted, policy=self.policy, beneficiary_priority=priority)
            if verdict.refused:
                for pod, reasons in sorted(verdict.refused.items()):
                    self.journal.record("gate-refused", pod=pod, reasons=reasons)
                raise Abort(f"step {step[0].step} no longer passes the safety rules: {verdict.describe()}; "
                            "plan again")
            if verdict.wait is None:
                return verdict, live
            if self.opt.clock() + wait > deadline:
                raise Stop(f"step {step[0].step} waited {self.opt.eviction_deadline_s:g} s for a disruption "
                           f"budget: {verdict.wait}")
            self.opt.sleep(wait)
            wait = min(wait * 2, self.opt.backoff_max_s)

    def _check_limits(self, number: int, todo: list[Move], verdict: GateVerdict, live: ClusterState,
                      report: ExecutionReport) -> None:
        if self.opt.max_moves is not None and len(report.evicted) + len(todo) > self.opt.max_moves:
            raise Stop(f"stopped before step {number}: --max-moves {self.opt.max_moves} reached")
        now = self.opt.now()
        cost = sum(move_cost(live, verdict.pods[m.uid], now).gpu_hours for m in todo)
        if self.opt.max_cost_gpu_hours is not None and report.cost_gpu_hours + cost > self.opt.max_cost_gpu_hours:
            raise Stop(f"stopped before step {number}: it would lose {cost:.2f} GPU-hours, over --max-cost "
                       f"{self.opt.max_cost_gpu_hours:g} ({report.cost_gpu_hours:.2f} used by this run)")
        report.cost_gpu_hours = round(report.cost_gpu_hours + cost, 4)

    def _live(self, namespaces: list[str]) -> ClusterState:
        if self._cluster_objects is None:
            self._cluster_objects = self._retrying(self.api.cluster_objects)
        objects = list(self._cluster_objects)
        for ns in namespaces:
            objects.extend(self._retrying(lambda: self.api.namespace_objects(ns)))
        return live_state(objects)

    def _evict(self, move: Move) -> None:
        ns, _, name = move.pod.partition("/")
        deadline = self.opt.clock() + self.opt.eviction_deadline_s
        wait = self.opt.backoff_s
        while True:
            try:
                self.api.evict(ns, name)
                break
            except EvictionRefused as err:
                self.journal.record("evict-refused", uid=move.uid, pod=move.pod, reason=str(err))
                pause = max(err.retry_after or 0.0, wait)
                if self.opt.clock() + pause > deadline:
                    raise Stop(f"eviction of {move.pod} still refused after {self.opt.eviction_deadline_s:g} s "
                               f"(429: {err})") from None
            except NoAnswer as err:
                self.journal.record("evict-no-answer", uid=move.uid, pod=move.pod, reason=str(err))
                current = self._retrying(lambda: self.api.get_pod(ns, name))
                if current is None or current.uid != move.uid or current.terminating:
                    break  # the eviction went through before the connection dropped
                pause = wait
                if self.opt.clock() + pause > deadline:
                    raise Stop(f"no answer from the API server for the eviction of {move.pod}: {err}") from None
            except ApiFailure as err:
                if err.code == 404 and self._retrying(lambda: self.api.get_pod(ns, name)) is None:
                    break  # gone already: its controller recreates it like any evicted pod
                raise Stop(f"eviction of {move.pod} answered {err}") from None
            self.opt.sleep(pause)
            wait = min(wait * 2, self.opt.backoff_max_s)
        self._last_eviction = self.opt.clock()
        self.journal.record("evicted", uid=move.uid, pod=move.pod)

    def _wait(self, step: list[Move], st: JournalState) -> dict[str, tuple[str, str]]:
        """uid -> (replacement key, node), once every evicted pod is gone and its replacement runs."""
        deadline = self.opt.clock() + self.opt.replacement_timeout_s
        while True:
            listed = {ns: self._retrying(lambda: self.api.list_pods(ns))
                      for ns in sorted({m.pod.partition("/")[0] for m in step})}
            placed, lingering = match_replacements(step, st.requested, listed)
            if len(placed) == len(step) and not lingering:
                return placed
            if self.opt.clock() >= deadline:
                missing = [m.pod for m in step if m.uid not in placed]
                what = (f"{', '.join(lingering)} still terminating" if lingering else
                        f"no running replacement for {', '.join(missing)}")
                raise Stop(f"step {step[0].step}: {what} after {self.opt.replacement_timeout_s:g} s "
                           "(--resume waits again); check their controllers")
            self.opt.sleep(self.opt.poll_s)

    def _respect_rate(self) -> None:
        if not self.opt.rate_per_minute or self._last_eviction is None:
            return
        wait = self._last_eviction + 60.0 / self.opt.rate_per_minute - self.opt.clock()
        if wait > 0:
            self.opt.sleep(wait)

    def _retrying(self, fn):
        """Reads (and the idempotent uncordon) are safe to repeat: retry a dropped connection a few times."""
        for attempt in range(4):
            try:
                return fn()
            except NoAnswer:
                if attempt == 3:
                    raise
                self.opt.sleep(min(self.opt.backoff_s * 2 ** attempt, self.opt.backoff_max_s))
        raise AssertionError("unreachable")
