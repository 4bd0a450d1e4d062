"""One rebalance round, dry or live: sweep leftovers, resume what a dead leader left, plan, move.

Order of a live round (each plan's own steps are in move.py):
  1. delete every placeholder of ours still in the placeholder namespace (label selector): no round
     is running in this process at this point, and in loop mode we hold the Lease;
  2. resume every journal in `--journal-dir` that has no `finished` record (its process died):
     a plan whose pending pods are gone or running is closed (cordons undone), any other continues
     from the journal (evictions already sent are never sent again);
  3. unless quiet hours or the cooldown hold the round back: plan the candidates smallest first,
     within the budgets, carry each plan out, and read the cluster again before the next one;
  4. append the round to the ledger (budgets across runs).
A dry run (`--demo`, `--snapshot`) plans the same way on the planned after-state and changes nothing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

import msgspec

from kubegpu.defrag.cost import state_now
from kubegpu.defrag.evictability import EvictionPolicy
from kubegpu.defrag.executor import TRANSIENT, Executor
from kubegpu.defrag.journal import Journal
from kubegpu.defrag.signals import SignalGuard, Terminated
from kubegpu.fragmentation.cluster import cluster_frag_report
from kubegpu.errors import SourceError
from kubegpu.model.cluster import ClusterState
from kubegpu.money.cluster import ClusterPrices, cluster_prices
from kubegpu.money.prices import NO_PRICES, PriceBook
from kubegpu.rebalance.budget import Budget, RoundAllowance, Spent, round_blocked
from kubegpu.rebalance.ledger import Ledger
from kubegpu.rebalance.metrics import RebalanceMetrics, budget_reason
from kubegpu.rebalance.move import MoveContext, PlanRun, journal_path, outcomes
from kubegpu.rebalance.reservation import plan_reservation, selector
from kubegpu.rebalance.round import (PlanEntry, RoundReport, candidate_row, choose_sequence, entry_for, plan_for,
                                     stamp, stranded_plan, useful, with_beneficiaries)
from kubegpu.rebalance.trigger import SustainedTimer, pending_candidates, stranded_reading
from kubegpu.model.text import counted


@dataclass
class RebalanceOptions:
    min_pending_age_s: float = 600.0
    stranded_above: float | None = None
    sustained_s: float = 1800.0
    budget: Budget = field(default_factory=Budget)
    time_limit_s: float = 5.0
    journal_dir: Path | None = None
    policy: EvictionPolicy = field(default_factory=EvictionPolicy)
    ttl_s: float = 300.0
    placeholder_namespace: str = "kubegpu"
    prices: PriceBook = NO_PRICES                  # prices each plan's money (none: GPU-hours only)


class Rebalancer:
    def __init__(self, opts: RebalanceOptions, read_state: Callable[[], ClusterState], *,
                 ctx: MoveContext | None = None, now: Callable[[], datetime] | None = None,
                 metrics: RebalanceMetrics | None = None) -> None:
        self.opts = opts
        self.read_state = read_state
        self.ctx = ctx                                   # None: a dry run
        self.now = now
        self.metrics = metrics or (ctx.metrics if ctx is not None else RebalanceMetrics())
        self.timer = SustainedTimer()
        self._round_at: datetime | None = None
        self._prices: ClusterPrices | None = None
        self.ledger = Ledger(opts.journal_dir) if opts.journal_dir is not None else None

    # ------------------------------------------------------------------ a round
    def round(self) -> RoundReport:
        guard = SignalGuard()
        live = self.ctx is not None
        report = RoundReport(mode="live" if live else "dry-run", at="", status="nothing-to-do", message="")
        self._round_at = None                      # set once this round has read the cluster
        cut_short = False
        try:
            with guard.running():
                self._round(report)
        except KeyboardInterrupt:
            report.status, report.signal, report.message = "stopped", 2, "interrupted (SIGINT); " + report.message
        except Terminated:
            report.status, report.signal, report.message = "stopped", 15, "terminated (SIGTERM); " + report.message
        except (*TRANSIENT, SourceError) as err:  # the API server failed us: this round stops, the loop goes on
            report.status, cut_short = "failed", True
            report.message = f"the API server answered {err}; " + report.message if not isinstance(err, SourceError) \
                else f"{err}; " + report.message
        if (report.signal is not None or cut_short) and live and self._round_at is not None:
            self._account(report, self._round_at)   # what a stopped or failed round spent still counts
        self.metrics.count_round(report.status)
        return report

    def _round(self, report: RoundReport) -> None:
        opts, live = self.opts, self.ctx is not None
        state = self._read()
        now = self.now() if self.now is not None else _state_time(state)
        report.at = stamp(now)
        self._round_at = now
        run_id = f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}" if live else "dry-run"
        report.run = run_id
        self._prices = cluster_prices(state, opts.prices)
        report.prices = msgspec.to_builtins(self._prices.used())
        if live:
            report.leftovers_removed = self._sweep()
            if self._resume_unfinished(report, run_id):
                state = self._read()
        spent = self.ledger.spent(now) if self.ledger is not None else Spent()
        before = cluster_frag_report(state)
        initial = state
        reading = stranded_reading(state)
        self.metrics.stranded_before = reading.gpus
        if self.ledger is not None and opts.stranded_above is not None:   # the timer outlives --once runs
            self.timer.above_since = self.ledger.stranded_since(opts.stranded_above)
        stranded_for = self.timer.update(reading.gpus, opts.stranded_above, now)
        candidates = pending_candidates(state, now, opts.min_pending_age_s)
        report.candidates = [candidate_row(c) for c in candidates]
        report.stranded = {"size": reading.size, "before": reading.gpus, "above": opts.stranded_above,
                           "sustained_seconds": round(stranded_for, 1)}
        stranded_due = (opts.stranded_above is not None and reading.gpus > opts.stranded_above
                        and stranded_for >= opts.sustained_s)
        blocked = round_blocked(opts.budget, spent, now)
        if blocked and (candidates or stranded_due):
            report.status, report.skipped, report.message = "blocked", blocked, f"round held back: {blocked}"
            for row in report.candidates:
                row["outcome"], row["reason"] = "skipped", blocked
            self.metrics.count_skip(budget_reason(blocked))
            report.budget = _budget_view(opts.budget, RoundAllowance(opts.budget, spent))
            if live:
                self._account(report, now)
            return
        allowance = RoundAllowance(opts.budget, spent)
        sequence, chosen = choose_sequence(state, candidates, allowance, opts.policy, opts.time_limit_s)
        skipped = list(chosen.skipped)
        if live:  # the cluster changes under each plan: plan again on the live state, spend as it goes
            chosen = allowance
        stop = False
        for index, (cand, plan) in enumerate(sequence, start=1):
            if stop:
                break
            if live:
                plan = plan_for(state, cand.key, opts.policy, opts.time_limit_s)
                if not useful(plan):
                    continue
                why = chosen.admit(plan)
                if why is not None:
                    skipped.append(f"{cand.key}: {why}")
                    continue
            state, stop = self._carry_out(cand, plan, state, run_id, index, now, report.plans, trigger="pending")
        allowance = chosen
        if not report.plans and stranded_due and not stop:
            plan = stranded_plan(state, reading, opts.policy, opts.time_limit_s)
            if plan is not None:
                why = allowance.admit(plan)
                if why is None:
                    state, stop = self._carry_out(None, plan, state, run_id, 1, now, report.plans,
                                                  trigger="stranded")
                else:
                    skipped.append(f"size:{reading.size}: {why}")
        reasons: dict[str, str] = {}
        for text in skipped:
            target, _, why = text.partition(": ")
            reasons.setdefault(target, why)
        for target, why in reasons.items():
            if any(p.target == target for p in report.plans):
                continue
            report.plans.append(PlanEntry(target=target, trigger="pending" if "/" in target else "stranded",
                                          status="skipped", reason=why))
            self.metrics.count_skip(budget_reason(why))
        for row in report.candidates:
            entry = next((p for p in report.plans if p.target == row["target"]), None)
            if entry is not None:
                row["outcome"], row["reason"] = entry.status, entry.reason
                continue
            p = plan_for(initial, row["target"], opts.policy, opts.time_limit_s)
            row["outcome"] = ("no-plan" if p is None or not p.feasible else "fits-already" if not p.moves
                              else "not-in-round")
            row["reason"] = "gone or bound" if p is None else p.message
        after = cluster_frag_report(state)
        self.metrics.stranded_after = float(after.stranded_for_demand.gpus)
        report.stranded["after"] = self.metrics.stranded_after
        report.fits_by_size = {"before": before.fits_by_size, "after": after.fits_by_size}
        report.budget = _budget_view(opts.budget, allowance)
        self._conclude(report, live, now)

    def _carry_out(self, cand, plan, state: ClusterState, run_id: str, index: int, now: datetime,
                   entries: list[PlanEntry], *, trigger: str) -> tuple[ClusterState, bool]:
        """Add the plan's entry to `entries` and carry it out (dry: plan on); (the state to plan the next
        one on, whether the round stops here)."""
        if self.ctx is None:
            reservations = [plan_reservation(state, m, run_id=run_id, namespace=self.opts.placeholder_namespace,
                                             now=now, ttl_s=self.opts.ttl_s) for m in plan.moves]
            entries.append(entry_for(cand, plan, reservations, trigger=trigger, prices=self._prices))
            return with_beneficiaries(state, plan), False
        assert self.opts.journal_dir is not None
        entry = entry_for(cand, plan, [], trigger=trigger, prices=self._prices)
        entries.append(entry)
        path = journal_path(self.opts.journal_dir, run_id, index)
        entry.journal = str(path)
        run = PlanRun(self.ctx, plan, Journal(path), f"{run_id}-{index}")
        try:
            report = run.start(state, entry)
        except (KeyboardInterrupt, Terminated):
            outcomes(entry, plan, None)
            raise
        outcomes(entry, plan, report)
        for mo in entry.moves:
            self.metrics.count_move(mo.outcome, mo.gpu_hours)
        stop = entry.status == "stopped"
        if run.signal is not None:
            raise KeyboardInterrupt if run.signal == 2 else Terminated()
        return self._read(), stop

    def _conclude(self, report: RoundReport, live: bool, now: datetime) -> None:
        made = [p for p in report.plans if p.status != "skipped"]
        skipped = [p for p in report.plans if p.status == "skipped"]
        moved = sum(1 for p in made for m in p.moves if m.outcome in ("moved", "elsewhere"))
        if not live:
            report.status = "dry-run" if made else ("blocked" if skipped else "nothing-to-do")
        elif moved:
            report.status = "moved"
        elif made or skipped:
            report.status = "failed" if made else "blocked"
        else:
            report.status = "nothing-to-do"
        report.message = _summary(report, moved)
        if live:
            self._account(report, now)

    def _account(self, report: RoundReport, now: datetime) -> None:
        """The round's spending into the ledger: moves made and the work their evictions threw away,
        plus what `serve --rebalance-journal` exports (outcomes, stranded GPUs, budget skips)."""
        if self.ledger is None:
            return
        moves = [m for p in report.plans for m in p.moves]
        moved = sum(1 for m in moves if m.outcome in ("moved", "elsewhere"))
        lost = sum(m.gpu_hours for m in moves if m.outcome in ("moved", "elsewhere", "failed"))
        outcomes: dict[str, int] = {}
        for m in moves:
            outcomes[m.outcome] = outcomes.get(m.outcome, 0) + 1
        reasons = [report.skipped] if report.status == "blocked" and report.skipped else \
            [p.reason for p in report.plans if p.status == "skipped"]
        skipped: dict[str, int] = {}
        for why in reasons:
            skipped[budget_reason(why)] = skipped.get(budget_reason(why), 0) + 1
        stranded = {k: report.stranded[k] for k in ("before", "after") if report.stranded.get(k) is not None}
        timer = {}
        if self.opts.stranded_above is not None and "before" in stranded:
            since = self.timer.above_since
            timer = {"stranded_above": self.opts.stranded_above,
                     "stranded_above_since": None if since is None else since.isoformat()}
        self.ledger.append(at=now, run=report.run or "", status=report.status, moves=moved, gpu_hours=lost,
                           outcomes=outcomes, skipped=skipped, stranded=stranded, **timer)

    def _read(self) -> ClusterState:
        """The cluster now; with a clock of our own, ages and work lost are measured at its time."""
        state = self.read_state()
        if self.now is not None:
            state.captured_at = stamp(self.now())
        return state

    # ------------------------------------------------------------------ leftovers and resume
    def _sweep(self) -> list[str]:
        """Delete our placeholders left by an earlier process (label selector, our namespace)."""
        assert self.ctx is not None
        gone = []
        for body in self.ctx.api.pods_labelled(self.opts.placeholder_namespace, selector()):
            name = body["metadata"]["name"]
            self.ctx.api.delete_pod(self.opts.placeholder_namespace, name)
            gone.append(f"{self.opts.placeholder_namespace}/{name}")
        return gone

    def _resume_unfinished(self, report: RoundReport, run_id: str) -> bool:
        assert self.ctx is not None
        if self.opts.journal_dir is None:
            return False
        state = None
        for path in sorted(self.opts.journal_dir.glob("rebalance-*.jsonl")):
            journal = Journal(path)
            st = journal.state()
            if st.finished is not None or st.plan is None:
                continue
            state = state or self._read()
            plan = st.plan
            entry = entry_for(None, plan, [], trigger="resume")
            entry.target, entry.journal = plan.goal.pod or entry.target, str(path)
            if not _still_pending(state, plan):
                journal.record("finished", status="aborted", message="the pods this plan made room for are no "
                               "longer pending (resumed by another process)", resumable=False)
                Executor(self.ctx.api, journal, self.ctx.executor, self.ctx.policy).resume()
                entry.status, entry.reason = "failed", "no longer needed: closed, cordons undone"
            else:
                rep = PlanRun(self.ctx, plan, journal, f"{run_id}-resume{len(report.resumed) + 1}").resume(
                    state, entry, set(st.evicted) | _sent(state, st.requested))
                outcomes(entry, plan, rep)
            report.resumed.append(str(path))
            report.plans.append(entry)
        return state is not None


def _sent(state: ClusterState, requested: dict[str, dict]) -> set[str]:
    """uids of evict-requests without an outcome whose pod is gone, replaced or terminating: they went
    through (the executor's reconcile journals them so); the others still need their room held."""
    out = set()
    for uid, rec in requested.items():
        pod = state.pod(*rec["pod"].split("/", 1))
        if pod is None or pod.metadata.uid != uid or pod.metadata.deletion_timestamp is not None:
            out.add(uid)
    return out


def _still_pending(state: ClusterState, plan) -> bool:
    pods = [t.pod for t in plan.targets if t.pod]
    if not pods:
        return True
    found = [state.pod(*key.split("/", 1)) for key in pods]
    return all(p is not None and p.is_unscheduled for p in found)


def _state_time(state: ClusterState) -> datetime:
    return state_now(state)


def _budget_view(budget: Budget, allowance: RoundAllowance) -> dict:
    return {"max_moves": budget.max_moves, "moves": allowance.moves, "per_node": budget.per_node,
            "max_gpu_hours_lost": budget.max_gpu_hours_round, "gpu_hours_lost": allowance.gpu_hours,
            "max_gpu_hours_lost_per_day": budget.max_gpu_hours_day,
            "gpu_hours_lost_today": round(allowance.spent.gpu_hours_today + allowance.gpu_hours, 4),
            "cooldown_seconds": budget.cooldown_s,
            "quiet_hours": [w.describe() for w in budget.quiet_hours]}


def _summary(report: RoundReport, moved: int) -> str:
    made = [p for p in report.plans if p.status != "skipped"]
    skipped = [p for p in report.plans if p.status == "skipped"]
    if report.mode == "dry-run":
        if not made:
            return ("nothing to do: no pending GPU pod past --min-pending-age has a plan" if not skipped else
                    f"{counted(len(skipped), 'plan')} held back by the budgets")
        moves = sum(len(p.moves) for p in made)
        lost = sum(p.gpu_hours_lost for p in made)
        return (f"would run {counted(len(made), 'plan')}: {counted(moves, 'move')}, {lost:.2f} GPU-hours of work lost; "
                "dry run, nothing changed")
    if not made and not skipped:
        return "nothing to do: no pending GPU pod past --min-pending-age has a plan"
    failed = [p for p in made if p.status != "done"]
    text = f"{counted(moved, 'pod')} moved in {counted(len(made), 'plan')}"
    if failed:
        text += "; " + "; ".join(f"{p.target}: {p.reason}" for p in failed)
    if skipped:
        text += f"; {counted(len(skipped), 'plan')} held back by the budgets"
    return text
