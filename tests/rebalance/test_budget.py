"""Round budgets: moves, concurrent moves per node, GPU-hours per round and per day, cooldown and quiet
hours, over simulated days on a fake clock with the real ledger file."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from kubegpu.defrag.plan import Goal, Move, Plan
from kubegpu.errors import UsageError
from kubegpu.rebalance.budget import Budget, RoundAllowance, Spent, node_crowding, parse_quiet_hours, round_blocked
from kubegpu.rebalance.ledger import Ledger


def plan(moves: list[tuple[str, str, int]], cost: float) -> Plan:
    return Plan(goal=Goal(kind="pod", pod="ml/x"), feasible=True, message="",
                moves=[Move(step=s, pod=f"ml/p{i}", from_=a, to=b, uid=f"u{i}") for i, (a, b, s) in enumerate(moves)],
                total_cost_gpu_hours=cost)


def test_at_most_two_moves_at_once_per_node_koordinator_default():
    assert node_crowding(plan([("a", "b", 1), ("a", "c", 2)], 1.0), 2) is None
    assert "3 reservations on b" in node_crowding(plan([("a", "b", 1), ("c", "b", 2), ("d", "b", 3)], 1.0), 2)
    # a gang step taking 3 pods off one node at once
    assert "step 1 moves 3 pods off a" in node_crowding(plan([("a", "b", 1), ("a", "c", 1), ("a", "d", 1)], 1), 2)
    # a node that is a destination and a source at once counts both
    assert node_crowding(plan([("a", "b", 1), ("b", "c", 2), ("d", "b", 3)], 1.0), 2) is not None


def test_allowance_counts_moves_and_gpu_hours_across_plans():
    allowance = RoundAllowance(Budget(max_moves=3, max_gpu_hours_round=2.0, max_gpu_hours_day=5.0),
                               Spent(gpu_hours_today=3.5))
    assert allowance.admit(plan([("a", "b", 1)], 1.0)) is None
    assert "per-day" in allowance.admit(plan([("c", "d", 1)], 0.6))       # 3.5 + 1.0 + 0.6 > 5
    assert allowance.admit(plan([("c", "d", 1)], 0.5)) is None
    assert "--max-moves 3" in allowance.admit(plan([("e", "f", 1), ("g", "h", 2)], 0.1))
    assert allowance.moves == 2 and allowance.gpu_hours == 1.5


@pytest.mark.parametrize("text", ["22:00", "25:00-01:00", "10:00-10:00", "8-9", "22:00-06:00,x"])
def test_bad_quiet_hours_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_quiet_hours(text)


def test_quiet_hours_wrap_past_midnight():
    (w,) = parse_quiet_hours("22:00-06:00")
    at = datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert [h for h in range(24) if w.contains(at + timedelta(hours=h))] == [0, 1, 2, 3, 4, 5, 22, 23]


def test_budgets_hold_over_two_simulated_days(tmp_path):
    budget = Budget(max_moves=4, max_gpu_hours_round=2.0, max_gpu_hours_day=5.0, cooldown_s=3600,
                    quiet_hours=tuple(parse_quiet_hours("22:00-06:00")))
    ledger = Ledger(tmp_path)
    start = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)
    offered = [plan([("a", "b", 1)], 1.5), plan([("c", "d", 1)], 1.5), plan([("e", "f", 1)], 0.4)]
    rounds, blocked = [], {"quiet": 0, "cooldown": 0}
    for tick in range(0, 48 * 60, 10):                   # a round is due every 10 minutes, for 2 days
        now = start + timedelta(minutes=tick)
        spent = ledger.spent(now)
        why = round_blocked(budget, spent, now)
        if why:
            blocked["quiet" if "quiet" in why else "cooldown"] += 1
            continue
        allowance = RoundAllowance(budget, spent)
        taken = [p for p in offered if allowance.admit(p) is None]
        ledger.append(at=now, run=str(tick), status="moved" if taken else "blocked", moves=allowance.moves,
                      gpu_hours=allowance.gpu_hours)
        if taken:
            rounds.append((now, allowance.gpu_hours))
    by_day: dict = {}
    for now, lost in rounds:
        assert not (now.hour >= 22 or now.hour < 6), now          # never in quiet hours
        assert lost <= 2.0 + 1e-9                                 # per round
        by_day[now.date()] = by_day.get(now.date(), 0.0) + lost
    assert all(v <= 5.0 + 1e-9 for v in by_day.values()), by_day  # per day
    assert all(b - a >= timedelta(seconds=3600) for (a, _), (b, _) in zip(rounds, rounds[1:]))  # cooldown
    assert len(by_day) == 2 and all(v >= 4.0 for v in by_day.values())  # the budget is used, day after day
    assert blocked["quiet"] > 0 and blocked["cooldown"] > 0


def test_a_torn_last_ledger_line_is_ignored_and_a_damaged_one_refused(tmp_path):
    from kubegpu.errors import InputError

    ledger = Ledger(tmp_path)
    now = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
    ledger.append(at=now, run="r", status="moved", moves=1, gpu_hours=1.25)
    with open(ledger.path, "a") as fh:
        fh.write('{"at": "2026-12-01T12:05:00+00:00", "gpu_h')
    assert ledger.spent(now + timedelta(minutes=10)).gpu_hours_today == 1.25
    ledger.path.write_text('[1, 2]\n{"at": "x"}\n')
    with pytest.raises(InputError):
        ledger.spent(now)


def test_the_stranded_timer_counts_only_unbroken_time_above_the_threshold():
    from kubegpu.rebalance.trigger import SustainedTimer

    timer, t0 = SustainedTimer(), datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert timer.update(5.0, 3.0, t0) == 0.0
    assert timer.update(5.0, 3.0, t0 + timedelta(minutes=20)) == 1200.0
    assert timer.update(2.0, 3.0, t0 + timedelta(minutes=25)) == 0.0          # a dip restarts it
    assert timer.update(5.0, 3.0, t0 + timedelta(minutes=30)) == 0.0
    assert timer.update(5.0, 3.0, t0 + timedelta(minutes=61)) == 1860.0
    assert timer.update(5.0, None, t0 + timedelta(minutes=62)) == 0.0         # no threshold: never due
