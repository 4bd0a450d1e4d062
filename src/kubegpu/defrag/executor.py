"""Carry out a defrag plan without losing work: one executor enforces safety for every plan.

Order of business (DESIGN section 7, descheduler#994 for the cordon):
  1. cordon every node a move leaves, so replacements cannot land back on it;
  2. per step (one pod, or a whole gang): evict through the Eviction API, then wait until every
     evicted pod's replacement is Running elsewhere before the next step;
  3. uncordon what we cordoned, at the end or on abort (nodes that were cordoned before stay so).
429 -> back off and retry until the eviction deadline; no answer -> look at the pod, then retry;
any other answer -> stop, uncordon, report. Every step is journaled first, so `resume` continues
after a crash without sending an eviction twice. The plan's pods are the only pods ever evicted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from kubegpu.defrag.api import ApiFailure, ClusterApi, EvictionRefused, NoAnswer, PodView
from kubegpu.defrag.journal import Journal, JournalState
from kubegpu.defrag.plan import Move, Plan
from kubegpu.errors import UsageError
from kubegpu.shutdown import finishing


class Abort(Exception):
    """The executor stops here (after uncordoning)."""


@dataclass
class ExecutorOptions:
    rate_per_minute: float | None = None      # evictions per minute (steps count as their pods)
    max_moves: int | None = None
    eviction_deadline_s: float = 120.0        # like cluster-autoscaler's --max-pod-eviction-time 2m
    replacement_timeout_s: float = 600.0
    poll_s: float = 2.0
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


@dataclass
class ExecutionReport:
    status: str                                   # completed | aborted | stopped
    message: str
    steps_done: list[int] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)            # pod keys evicted by this run
    replacements: dict[str, str] = field(default_factory=dict)  # evicted pod -> "ns/new-name@node"
    deviations: list[str] = field(default_factory=list)         # replacements that landed elsewhere than planned
    uncordoned: list[str] = field(default_factory=list)
    journal: str = ""


class Executor:
    def __init__(self, api: ClusterApi, journal: Journal, options: ExecutorOptions | None = None) -> None:
        self.api = api
        self.journal = journal
        self.opt = options or ExecutorOptions()
        self._last_eviction: float | None = None

    # ------------------------------------------------------------------ entry points
    def apply(self, plan: Plan) -> ExecutionReport:
        """Start a new run of `plan` (the journal must not exist yet)."""
        if self.journal.exists():
            raise UsageError(f"journal {self.journal.path} already exists: use --resume {self.journal.path}")
        if not plan.feasible:
            raise UsageError("the plan is not feasible; nothing to apply")
        self.journal.start(plan)
        return self._run(plan, self.journal.state())

    def resume(self) -> ExecutionReport:
        """Continue the run a journal records, after the last step it finished."""
        st = self.journal.state()
        if st.plan is None:
            raise UsageError(f"journal {self.journal.path} is empty: nothing to resume")
        if st.finished is not None:
            return ExecutionReport(status="completed", message=f"already finished ({st.finished.get('status')})",
                                   steps_done=sorted(st.steps_done), journal=str(self.journal.path))
        self.journal.record("resumed")
        return self._run(st.plan, st)

    # ------------------------------------------------------------------ the run
    def _run(self, plan: Plan, st: JournalState) -> ExecutionReport:
        report = ExecutionReport(status="completed", message="", steps_done=sorted(st.steps_done),
                                 journal=str(self.journal.path))
        cordoned = list(st.cordoned)
        done_moves = sum(len(s.get("pods", [])) for s in st.steps_done.values())
        try:
            self._cordon(plan, cordoned)
            for step in plan.steps:
                number = step[0].step
                if number in st.steps_done:
                    continue
                if self.opt.max_moves is not None and done_moves + len(step) > self.opt.max_moves:
                    report.status = "stopped"
                    report.message = f"stopped before step {number}: --max-moves {self.opt.max_moves} reached"
                    break
                self._step(step, st, report)
                done_moves += len(step)
                report.steps_done.append(number)
            if report.status == "completed":
                report.message = f"{len(plan.moves)} move(s) done in {len(plan.steps)} step(s)"
        except (Abort, ApiFailure, NoAnswer, EvictionRefused) as err:
            report.status = "aborted"
            report.message = str(err)
            self.journal.record("abort", reason=str(err))
        except (Exception, KeyboardInterrupt) as err:  # a bug or ^C: still leave the nodes as we found them
            with finishing():  # the interrupt watchdog waits for this (kubegpu.shutdown)
                self.journal.record("abort", reason=f"{type(err).__name__}: {err}")
                self._uncordon(cordoned, report)
            raise
        self._uncordon(cordoned, report)
        self.journal.record("finished", status=report.status, message=report.message)
        return report

    def _cordon(self, plan: Plan, cordoned: list[str]) -> None:
        for node in plan.cordon:
            if node in cordoned:
                continue
            if self.api.node_unschedulable(node):
                self.journal.record("already-cordoned", node=node)  # someone else's: we leave it cordoned
                continue
            self.journal.record("cordon-request", node=node)
            self.api.set_unschedulable(node, True)
            cordoned.append(node)
            self.journal.record("cordoned", node=node)

    def _uncordon(self, cordoned: list[str], report: ExecutionReport) -> None:
        for node in list(cordoned):
            try:
                self.api.set_unschedulable(node, False)
            except (ApiFailure, NoAnswer, EvictionRefused) as err:
                self.journal.record("uncordon-failed", node=node, reason=str(err))
                report.message += f"; could not uncordon {node} ({err}): run `kubectl uncordon {node}`"
                continue
            cordoned.remove(node)
            report.uncordoned.append(node)
            self.journal.record("uncordoned", node=node)

    # ------------------------------------------------------------------ one step
    def _step(self, step: list[Move], st: JournalState, report: ExecutionReport) -> None:
        self._respect_rate(len(step))
        siblings: dict[str, list[str]] = {}
        originals: dict[str, PodView] = {}
        for move in step:
            ns, _, name = move.pod.partition("/")
            if move.uid in st.evicted:
                rec = st.requested.get(move.uid, {})
                siblings[move.uid] = rec.get("siblings", [])
                originals[move.uid] = self._original(rec, move)
                continue
            if move.uid in st.requested:
                rec = st.requested[move.uid]
                siblings[move.uid] = rec.get("siblings", [])
                originals[move.uid] = self._original(rec, move)
                current = self._get(ns, name)
                if current is None or current.uid != move.uid or current.terminating:
                    self.journal.record("evicted", uid=move.uid, pod=move.pod, note="found gone on resume")
                    st.evicted.add(move.uid)
                    continue  # the crash came after the eviction: never send it twice
            else:
                pod = self._get(ns, name)
                if pod is None or pod.uid != move.uid:
                    raise Abort(f"{move.pod} (uid {move.uid}) is no longer there: the cluster changed since "
                                "the plan was made; plan again")
                if pod.node != move.from_:
                    raise Abort(f"{move.pod} runs on {pod.node}, not on {move.from_} as planned; plan again")
                sibs = [p.uid for p in self._list(ns) if p.owner_uid and p.owner_uid == pod.owner_uid]
                siblings[move.uid] = sibs
                originals[move.uid] = pod
                self.journal.record("evict-request", uid=move.uid, pod=move.pod, node=move.from_, step=move.step,
                                    siblings=sibs, owner_uid=pod.owner_uid, owner=pod.owner)
            self._evict(move)
            st.evicted.add(move.uid)
            report.evicted.append(move.pod)
        placed = self._wait_replacements(step, siblings, originals)
        pods = []
        for move in step:
            new, node = placed[move.uid]
            report.replacements[move.pod] = f"{new}@{node}"
            if node != move.to:
                report.deviations.append(f"{move.pod}: replacement {new} runs on {node}, planned {move.to}")
            pods.append({"pod": move.pod, "replacement": new, "node": node})
        self.journal.record("step-done", step=step[0].step, pods=pods)
        st.steps_done[step[0].step] = {"pods": pods}

    @staticmethod
    def _original(rec: dict, move: Move) -> PodView:
        ns, _, name = move.pod.partition("/")
        return PodView(namespace=ns, name=name, uid=move.uid, node=move.from_, phase="Running", ready=True,
                       terminating=False, owner_uid=rec.get("owner_uid"), owner=rec.get("owner"))

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
                    raise Abort(f"eviction of {move.pod} still refused after {self.opt.eviction_deadline_s:g} s "
                                f"(429: {err})") from None
            except NoAnswer as err:
                self.journal.record("evict-no-answer", uid=move.uid, pod=move.pod, reason=str(err))
                current = self._get(ns, name)
                if current is None or current.uid != move.uid or current.terminating:
                    break  # the eviction went through before the connection dropped
                pause = wait
                if self.opt.clock() + pause > deadline:
                    raise Abort(f"no answer from the API server for the eviction of {move.pod}: {err}") from None
            except ApiFailure as err:
                if err.code == 404 and self._get(ns, name) is None:
                    break  # gone already: its controller recreates it like any evicted pod
                raise Abort(f"eviction of {move.pod} answered {err}") from None
            self.opt.sleep(pause)
            wait = min(wait * 2, self.opt.backoff_max_s)
        self._last_eviction = self.opt.clock()
        self.journal.record("evicted", uid=move.uid, pod=move.pod)

    def _wait_replacements(self, step: list[Move], siblings: dict[str, list[str]],
                           originals: dict[str, PodView]) -> dict[str, tuple[str, str]]:
        """uid -> (replacement key, node), once every evicted pod's replacement runs elsewhere."""
        deadline = self.opt.clock() + self.opt.replacement_timeout_s
        while True:
            placed: dict[str, tuple[str, str]] = {}
            taken: set[str] = set()
            for move in step:
                ns = move.pod.partition("/")[0]
                orig = originals[move.uid]
                known = set(siblings.get(move.uid, [])) | {move.uid}
                for pod in self._list(ns):
                    if pod.uid in known or pod.uid in taken or pod.terminating:
                        continue
                    same_owner = orig.owner_uid and pod.owner_uid == orig.owner_uid
                    if same_owner and pod.phase == "Running" and pod.node:
                        placed[move.uid] = (pod.key, pod.node)
                        taken.add(pod.uid)
                        break
            if len(placed) == len(step):
                return placed
            if self.opt.clock() >= deadline:
                missing = [m.pod for m in step if m.uid not in placed]
                raise Abort(f"no running replacement for {', '.join(missing)} within "
                            f"{self.opt.replacement_timeout_s:g} s; check their controllers")
            self.opt.sleep(self.opt.poll_s)

    def _respect_rate(self, pods: int) -> None:
        if not self.opt.rate_per_minute or self._last_eviction is None:
            return
        gap = 60.0 * pods / self.opt.rate_per_minute
        wait = self._last_eviction + gap - self.opt.clock()
        if wait > 0:
            self.opt.sleep(wait)

    def _get(self, ns: str, name: str) -> PodView | None:
        return self._retrying(lambda: self.api.get_pod(ns, name))

    def _list(self, ns: str) -> list[PodView]:
        return self._retrying(lambda: self.api.list_pods(ns))

    def _retrying(self, fn):
        """Reads are safe to repeat: retry a dropped connection a few times before giving up."""
        for attempt in range(4):
            try:
                return fn()
            except NoAnswer:
                if attempt == 3:
                    raise
                self.opt.sleep(min(self.opt.backoff_s * 2 ** attempt, self.opt.backoff_max_s))
        raise AssertionError("unreachable")
